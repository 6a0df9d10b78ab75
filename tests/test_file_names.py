"""File and directory names that are not UTF-8: a Linux path is bytes, and every command takes one.

Python carries such a name as lone surrogates; printed, drawn into a PNG or written into a page,
they fail unless written as \\xNN escapes (`as_text` in files/text.py).
"""

import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.common.text import as_text, one_line

runner = CliRunner()


def bytes_name(directory: Path, raw: bytes) -> Path:
    return directory / os.fsdecode(raw)


@pytest.fixture
def odd_names(tmp_path, names_file):
    """A recipe, a names file and a run directory, each named with a byte that is not UTF-8."""
    recipe, names = bytes_name(tmp_path, b"recipe\xfd.toml"), bytes_name(tmp_path, b"names\xfe.txt")
    shutil.copy(Path(__file__).parents[1] / "configs" / "microgpt.toml", recipe)  # exports as well
    shutil.copy(names_file, names)
    return recipe, names, bytes_name(tmp_path, b"run\xff")


def ok(args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output)
    assert "\\udc" not in result.output  # a surrogate written as its escape is a name half-shown
    result.output.encode("utf-8")  # printable: no lone surrogate left
    return result.output


@pytest.mark.draws_loss_png
def test_every_command_takes_a_name_that_is_not_utf8(odd_names):
    recipe, names, run = odd_names
    ok(
        [
            "train",
            "-c",
            recipe,
            "--data",
            names,
            "--val-data",
            names,
            "--out",
            run,
            "--steps",
            "6",
            "--set",
            "train.snapshots=2",
        ]
    )
    assert (run / "loss.png").is_file()  # its title names the directory
    ok(["train", "--resume", run, "--steps", "8"])
    for args in (
        ["sample", run, "-n", "2", "--data", names],
        ["sample", run, "--json"],
        ["eval", run],
        ["eval", run, "--data", names, "--json"],
        ["info", run],
        ["ablate", run],
        ["inspect-attention", run, "ab"],
        ["inspect-attention", run, "ab", "--json"],
        ["plot", run, "--out", run / "curve.png", "--overwrite"],
    ):
        ok(args)
    assert "run\\xff" in ok(["inspect-attention", run, "ab", "--png", run / "grid.png"])
    assert "run\\xff" in ok(["inspect-attention", run, "ab", "--html", run / "explored.html"])
    assert r"names\\xfe.txt" in (run / "explored.html").read_text(encoding="utf-8")  # as the page's JSON writes \
    ok(["export", run, run / "weights.json"])
    ok(["import", run / "weights.json", run / "from-json.pt"])
    assert "imported from" in ok(["info", run / "from-json.pt"])
    ok(["export", run, run / "hf", "--format", "safetensors"])
    ok(["import", run / "hf", run / "from-hf.pt"])
    ok(["sample", run / "from-hf.pt", "-n", "1"])


def test_a_name_that_is_not_utf8_is_shown_as_its_bytes():
    name = bytes_name(Path("runs"), b"caf\xe9")
    assert as_text(name) == "runs/caf\\xe9" and as_text(os.fsdecode(b"x\xff")) == "x\\xff"
    assert one_line(f"cannot write {os.fsdecode(b'a/caf' + bytes([0xE9]))}") == "cannot write a/caf\\xe9"
    assert as_text("Émile") == "Émile"


def test_one_guard_for_every_output_a_link_a_fifo_or_a_names_file_is_never_replaced_unasked(trained_run, tmp_path):
    """A dangling link or a link loop at an output path was replaced without --overwrite; --overwrite replaced a
    FIFO with a file; `import ... names.txt --overwrite` replaced a names file with a checkpoint."""
    from typer.testing import CliRunner

    from minigpt.cli.main import app

    runner = CliRunner()
    run_dir = trained_run[0]
    os.symlink(tmp_path / "nowhere.png", tmp_path / "dangling.png")
    os.symlink(tmp_path / "loop.json", tmp_path / "loop.json")
    for args in (
        ["inspect-attention", str(run_dir), "emma", "--png", str(tmp_path / "dangling.png")],
        ["inspect-attention", str(run_dir), "emma", "--json-file", str(tmp_path / "loop.json")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "already exists (a symbolic link" in result.stderr, result.stderr
    assert os.path.islink(tmp_path / "dangling.png") and os.path.islink(tmp_path / "loop.json")
    os.mkfifo(tmp_path / "pipe.json")
    result = runner.invoke(
        app, ["inspect-attention", str(run_dir), "emma", "--json-file", str(tmp_path / "pipe.json"), "--overwrite"]
    )
    assert result.exit_code == 2 and "is not a file (a pipe" in result.stderr
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe.json").st_mode)
    names = tmp_path / "names.txt"
    names.write_text("anna\nbob\n")
    exported = runner.invoke(app, ["export", str(run_dir), str(tmp_path / "hf"), "--format", "safetensors"])
    assert exported.exit_code == 0, exported.output
    result = runner.invoke(app, ["import", str(tmp_path / "hf"), str(names), "--overwrite"])
    assert result.exit_code == 2 and "name it .pt" in result.stderr  # refused by its name, before anything is read
    assert names.read_text() == "anna\nbob\n"
    names_pt = tmp_path / "names.pt"  # a names file under a checkpoint's name: refused by what it holds
    names_pt.write_text("anna\nbob\n")
    result = runner.invoke(app, ["import", str(tmp_path / "hf"), str(names_pt), "--overwrite"])
    assert result.exit_code == 2 and "is not a checkpoint: a checkpoint replaces only a checkpoint" in result.stderr
    assert names.read_text() == "anna\nbob\n"
