"""What the documentation states about the code, kept true: the checkpoint's keys, the config keys, the README's map."""

import re
from pathlib import Path

import pytest
import torch

from minigpt.common.bundled import recipe_names
from minigpt.formats import checkpoint
from minigpt.formats.recipes import keys_markdown

ROOT = Path(__file__).resolve().parent.parent


def documented_checkpoint_keys() -> dict[str, bool]:
    """checkpoint.py's table of keys: {key: written only by training}."""
    table = checkpoint.__doc__.split("A checkpoint is a dict:")[1].split("\n\n")[1]
    return {line.split()[0]: "(training only)" in line for line in table.splitlines()}


def test_checkpoint_docstring_lists_what_training_writes(trained_run):
    raw = torch.load(trained_run[0] / "last.pt", weights_only=True)
    assert list(raw) == list(documented_checkpoint_keys())


def test_checkpoint_docstring_lists_what_an_import_writes(trained_run, tmp_path):
    pytest.importorskip("safetensors")
    from minigpt.formats.safetensors_files import export_safetensors, import_safetensors

    export_safetensors(trained_run[0], tmp_path / "st")
    import_safetensors(tmp_path / "st", tmp_path / "back.pt")
    raw = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(raw) == [key for key, training_only in documented_checkpoint_keys().items() if not training_only]


def test_configuration_doc_is_made_from_the_config_module():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert text.endswith(keys_markdown()), "docs/configuration.md was not made again: python -m minigpt.formats.recipes"


def test_readme_map_names_the_lesson_and_every_folder_and_only_what_exists():
    """The README's map is the short one (docs/development.md names every module, tests/test_layers.py
    holds that one true): the lesson files, the API, and every folder of the package."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code_map = readme.split("## Map of the code")[1].split("\n## ")[0]
    named = set(re.findall(r"`((?:minigpt|tests|benchmarks|configs|docs|examples|data)/[\w./-]*)`", code_map))
    assert named, "the map names no files"
    for path in named:
        assert (ROOT / path).exists(), f"the README's map names {path}, which does not exist"
    package = ROOT / "minigpt"
    wanted = {p.relative_to(ROOT).as_posix() for p in package.glob("*.py") if p.name != "__main__.py"}
    wanted |= {f"minigpt/{p.name}/" for p in package.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert wanted <= named, f"missing from the README's map: {sorted(wanted - named)}"


def test_the_readme_recipes_table_gives_the_parameters_the_code_builds():
    from minigpt.common.bundled import BUNDLED_NAMES
    from minigpt.data import Tokenizer
    from minigpt.files.names_file import read_names
    from minigpt.formats.recipes import load_config
    from minigpt.model import GPT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) \|", readme, flags=re.MULTILINE)
    vocab = Tokenizer.from_names(read_names(BUNDLED_NAMES)).vocab_size
    assert {name for name, _ in rows} == set(recipe_names())
    for name, shown in rows:
        config = load_config(name).model
        config.vocab_size = vocab
        assert int(shown.replace(",", "")) == GPT(config).num_params(), name


def test_the_licence_the_package_declares_is_there():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_default_runs_figures_agree_wherever_they_are_quoted():
    """One run's figures, measured once (docs/recipes.md's "default run:" line), are what the README's tour, its
    recipe table and docs/explorer.md quote for the default run."""
    import re

    recipes = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    line = re.search(
        r"default run: `minigpt train --out runs/names`, best (\d\.\d{4}) at step ([\d,]+), "
        r"([\d.]+) s of training at ([\d,]+) tokens/s",
        recipes,
    )
    assert line, "docs/recipes.md has no line of the default run's figures"
    best, step, seconds, rate = line.groups()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"val loss\s+{best} \(best {best} at step {step}\)", readme)
    assert re.search(rf"time\s+{seconds} s training, {rate} tokens/s", readme)
    assert f"The best validation loss, {float(best):.3f} nats" in readme
    assert f"| {float(best):.3f} on the bundled names in {round(float(seconds))} s" in readme
    # docs/explorer.md's log reads runs of the previous recipe too: each says so where it quotes its figure
    explorer = (ROOT / "docs" / "explorer.md").read_text(encoding="utf-8")
    for sentence in re.split(r"(?<=[.:])\s", explorer):
        for quoted in re.findall(r"best(?: validation loss)? (\d\.\d{4})", sentence):
            assert quoted == best or "previous" in sentence, f"docs/explorer.md quotes {quoted}: {sentence[:200]}"


def png_text(path: Path) -> dict[str, str]:
    """A PNG's text chunks (tEXt): {keyword: text}."""
    import struct

    data, texts, at = path.read_bytes(), {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"tEXt":
            keyword, _, text = data[at + 8 : at + 8 + length].partition(b"\0")
            texts[keyword.decode("latin-1")] = text.decode("latin-1")
        at += 12 + length
    return texts


def test_the_readmes_pictures_are_of_the_run_the_docs_quote():
    """docs/loss-names.png (loss.png as minigpt draws it) and docs/explorer.png (benchmarks/explorer.py
    --screenshots) keep what they were drawn from; both are of the default run docs/recipes.md quotes (58 §5)."""
    import re

    recipes = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    best, step = re.search(
        r"default run: `minigpt train --out runs/names`, best (\d\.\d{4}) at step (\d[\d,]*\d)", recipes
    ).groups()
    for picture in ("loss-names.png", "explorer.png"):
        about = png_text(ROOT / "docs" / picture).get("Description", "")
        assert f"best validation {best} at step {step}" in about, (picture, about)


def test_the_docs_are_a_users_reading_not_a_log():
    """README.md and docs/ hold results a user reads: short enough to read (an afternoon: 20,000 words together,
    the README 320 lines, speed.md 200), with no dates, no trust verdicts and no "slow day" (dev/LOG.md keeps
    the story)."""
    import re

    pages = {
        path.name: path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    }
    words = sum(len(text.split()) for text in pages.values())
    assert words <= 20000, f"README.md and docs/ hold {words:,} words"
    assert len(pages["README.md"].splitlines()) <= 320 and len(pages["speed.md"].splitlines()) <= 200
    for name, text in pages.items():
        dated = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
        logged = re.findall(r"NOT TO BE TRUSTED|slow (?:day|hour)", text, re.I)
        assert not dated and not logged, f"{name}: {dated + logged}"


def test_the_changelog_the_package_and_minigpt_version_agree():
    """CHANGELOG.md's newest version is the package's (pyproject.toml, minigpt.__version__) and what
    `minigpt --version` prints."""
    import re
    import subprocess
    import sys
    import tomllib

    import minigpt

    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    printed = subprocess.run([sys.executable, "-m", "minigpt", "--version"], capture_output=True, text=True).stdout
    assert newest and newest.group(1) == declared == minigpt.__version__ and printed.split() == ["minigpt", declared]
