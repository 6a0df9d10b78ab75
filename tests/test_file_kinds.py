"""Every kind of file minigpt writes or reads, handed to every command that takes a file: the right kind
works, a wrong one is named for what it is in one line, with the command that does take it."""

import shutil

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.files.sniffing import identify

runner = CliRunner()


@pytest.fixture(scope="module")
def files(trained_run, tmp_path_factory):
    """One file of each kind, by what it holds: {kind: path}."""
    run_dir, names = trained_run
    tmp = tmp_path_factory.mktemp("kinds")
    assert runner.invoke(app, ["export", str(run_dir), str(tmp / "hf"), "--format", "safetensors"]).exit_code == 0
    (tmp / "microgpt.json").write_text(
        '{"format": "microgpt", "hyperparameters": {"n_layer": 1}, "uchars": ["a"], "bos": 1, "state_dict": {}}'
    )
    (tmp / "other.json").write_text('{"a": 1}')
    (tmp / "empty.txt").write_text("")
    (tmp / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    kinds = {
        "a checkpoint": run_dir / "best.pt",
        "a snapshots file": run_dir / "snapshots.pt",
        "a run's metrics (metrics.jsonl)": run_dir / "metrics.jsonl",
        "a run's samples (samples.txt)": run_dir / "samples.txt",
        "a recipe": run_dir / "config.toml",
        "a names file": names,
        "microgpt's JSON": tmp / "microgpt.json",
        "a safetensors file": tmp / "hf" / "model.safetensors",
        "a safetensors export's config.json": tmp / "hf" / "config.json",
        "a JSON file": tmp / "other.json",
        "an empty file": tmp / "empty.txt",
        "a binary file": tmp / "picture.png",
    }
    copies = {}
    for kind, path in kinds.items():  # named for nothing: the content alone says what each is
        copies[kind] = tmp / f"given-{len(copies)}"
        shutil.copy(path, copies[kind])
    return copies


def test_each_file_is_recognised_by_its_content(files):
    for kind, path in files.items():
        assert identify(path) == kind, path


# where each command takes a file, and the kinds it takes there
TAKES = {
    "sample": (["sample", "{}", "-n", "1"], {"a checkpoint"}),
    "eval": (["eval", "{}"], {"a checkpoint"}),
    "info": (["info", "{}"], {"a checkpoint"}),
    "inspect-attention": (["inspect-attention", "{}", "emma"], {"a checkpoint"}),
    "ablate": (["ablate", "{}"], {"a checkpoint"}),
    "export": (["export", "{}", "{out}"], {"a checkpoint"}),
    "train --resume": (["train", "--resume", "{}", "--steps", "1"], {"a checkpoint"}),
    "train --data": (["train", "--data", "{}", "-c", "tiny", "--steps", "1", "--out", "{out}"], {"a names file"}),
    "train --config": (
        ["train", "--config", "{}", "--data", "{names}", "--steps", "1", "--out", "{out}"],
        {"a recipe", "an empty file"},
    ),
    "eval --data": (["eval", "{run}", "--data", "{}"], {"a names file"}),
    "sample --data": (["sample", "{run}", "--data", "{}", "-n", "1"], {"a names file"}),
    "import": (["import", "{}", "{out}"], {"microgpt's JSON", "a safetensors file"}),
    "plot": (["plot", "{}", "--out", "{out}"], set()),
}


@pytest.mark.parametrize("command", sorted(TAKES))
def test_a_wrong_kind_of_file_is_named_for_what_it_is(command, files, trained_run, tmp_path):
    args, takes = TAKES[command]
    for kind, path in files.items():
        if kind in takes:
            continue
        given = [a.format(path, out=tmp_path / "out", names=files["a names file"], run=trained_run[0]) for a in args]
        result = runner.invoke(app, given)
        assert result.exit_code == 2, (command, kind, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("minigpt: error: "), (command, kind, result.stderr)
        # text that is not TOML or JSON is said so by the reader; a file of no kind minigpt knows, by the reader too
        said_otherwise = {"a JSON file", "an empty file", "a binary file"} | (
            {"a names file"} if command in ("train --config", "import") else set()
        )
        if kind not in said_otherwise:
            assert f"is {kind}" in lines[0], (command, kind, lines[0])
        assert "debug" not in lines[0] and "Error:" not in lines[0], (
            command,
            kind,
            lines[0],
        )  # never a bare Python error


def test_prose_is_named_a_text_file_and_names_of_several_words_stay_names(tmp_path, trained_run):
    """A README handed where a checkpoint belongs is "a text file", not "a names file" (58 §5); its lines may
    still be trained on, as any text the user chooses."""
    readme, names = tmp_path / "README", tmp_path / "names"
    readme.write_text(
        "# minigpt\n\nTrains a tiny GPT on a file of names, one per line.\n\n```bash\npip install -e .\n```\n"
        "Then it invents new names with it, in the terminal or on a page.\n",
        encoding="utf-8",
    )
    names.write_text("mary ann lee\njo\nanna maria\nzoe\n", encoding="utf-8")
    assert identify(readme) == "a text file" and identify(names) == "a names file"
    result = runner.invoke(app, ["sample", str(readme)])
    assert (
        result.exit_code == 2 and "is a text file, not a checkpoint: a names file has one name a line" in result.output
    )
    trained = runner.invoke(
        app, ["train", "--data", str(readme), "-c", "tiny", "--steps", "1", "--out", str(tmp_path / "r")]
    )
    assert trained.exit_code == 0, trained.output
