"""Inputs that never end, files far larger than their kind, compressed bombs and editors' byte-order
marks: each reader of minigpt refuses past its kind's bound in one line (exit 2), memory bounded."""

import os
import zipfile

import pytest
import torch
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.errors import UsageError
from minigpt.files import bounded

runner = CliRunner()


@pytest.fixture
def small_limits(monkeypatch):
    """Each kind's bound at 64 kB, so that a test can pass it with a small file or a few reads of a device."""
    monkeypatch.setattr(bounded, "LIMITS", {kind: 64 * 1024 for kind in bounded.LIMITS})


def one_line_refusal(result):
    assert result.exit_code == 2, result.output
    assert "refused" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


# every command that reads each kind of file, as a user would name the file
READERS = {
    "names file": lambda path, run: ["train", "--config", "tiny", "--data", path, "--out", "unused"],
    "recipe": lambda path, run: ["train", "--config", path, "--out", "unused"],
    "checkpoint": lambda path, run: ["sample", path],
    "JSON file": lambda path, run: ["import", path, "unused.pt"],
}


@pytest.mark.parametrize("kind", sorted(READERS))
@pytest.mark.parametrize("source", ["a device that never ends", "a file larger than its kind"])
def test_every_reader_refuses_past_its_kinds_bound(kind, source, small_limits, trained_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if source == "a device that never ends":
        path = "/dev/zero"
    else:
        path = str(tmp_path / ("big.json" if kind == "JSON file" else "big.pt" if kind == "checkpoint" else "big.txt"))
        with open(path, "wb") as f:
            f.write(b"anna\n" * (70 * 1024 // 5))
    if kind == "checkpoint" and source == "a device that never ends":
        result = runner.invoke(app, READERS[kind](path, trained_run[0]))
        assert result.exit_code == 2 and "not a regular file" in result.stderr  # a checkpoint is an archive: a file
        return
    one_line_refusal(runner.invoke(app, READERS[kind](path, trained_run[0])))
    assert not os.path.exists("unused") and not os.path.exists("unused.pt")  # nothing half made


def test_a_pipe_is_read_up_to_the_bound(small_limits, tmp_path):
    fifo = tmp_path / "names"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # a writer that would go on for ever
        try:
            with open(fifo, "wb") as f:
                while True:
                    f.write(b"anna\n" * 1000)
        finally:
            os._exit(0)
    try:
        with pytest.raises(UsageError, match="refused: more than 0 MB"):
            bounded.read_bytes(fifo, "names file")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_a_small_archive_that_unpacks_huge_is_refused_before_torch_reads_it(trained_run, tmp_path, small_limits):
    bomb = tmp_path / "bomb.pt"
    torch.save({"model": {"wte": torch.zeros(64 * 1024)}}, bomb)  # 256 kB of zeros, deflated below...
    with zipfile.ZipFile(tmp_path / "packed.pt", "w", zipfile.ZIP_DEFLATED) as out, zipfile.ZipFile(bomb) as source:
        for member in source.infolist():
            out.writestr(member.filename, source.read(member))
    assert (tmp_path / "packed.pt").stat().st_size < 64 * 1024  # ...so the file itself is within the bound
    for command in (["sample", str(tmp_path / "packed.pt")], ["info", str(tmp_path / "packed.pt")]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "unpacks to" in result.stderr, result.output
    snapshots = trained_run[0] / "snapshots.pt"
    copy = tmp_path / "run"
    copy.mkdir()
    (copy / "snapshots.pt").write_bytes((tmp_path / "packed.pt").read_bytes())
    from minigpt.formats.snapshots import read_snapshots

    with pytest.raises(UsageError, match="unpacks to"):
        read_snapshots(copy)
    assert snapshots.is_file()


def test_a_recipe_saved_with_a_byte_order_mark_and_crlf_is_read(tmp_path):
    from minigpt.formats.recipes import load_config

    recipe = tmp_path / "recipe.toml"
    recipe.write_bytes(b"\xef\xbb\xbf[model]\r\nn_layer = 2\r\n[train]\r\nsteps = 7\r\n")
    config = load_config(recipe)
    assert config.model.n_layer == 2 and config.train.steps == 7


@pytest.mark.parametrize("ending", [b"\x00", b"\x00" * 512, b"\r\n\x00\x00"])
def test_recipes_and_names_files_padded_with_nul_read_as_written(tmp_path, ending):
    from minigpt.files.names_file import read_names
    from minigpt.formats.recipes import load_config

    recipe, names = tmp_path / "recipe.toml", tmp_path / "names.txt"
    recipe.write_bytes(b"\xef\xbb\xbf[train]\r\nsteps = 7" + ending)
    names.write_bytes(b"\xef\xbb\xbfemma\r\nava" + ending)
    assert load_config(recipe).train.steps == 7
    assert read_names(names) == ["emma", "ava"]


def test_a_names_stream_is_read_no_further_than_memory_allows(monkeypatch):
    """A device or a pipe has no size to check before reading: it is read up to what training on it could
    hold in the memory available (about MEMORY_PER_BYTE bytes a byte), not up to the kind's whole bound."""
    from minigpt.errors import UsageError
    from minigpt.files.names_file import MEMORY_PER_BYTE, read_names

    monkeypatch.setattr("minigpt.files.names_file.available_memory", lambda: MEMORY_PER_BYTE * 2**20)
    with pytest.raises(
        UsageError,
        match=r"/dev/zero: refused: more than 1 MB, as much as training can hold: it takes "
        r"about 25 bytes of memory per byte of names, and 25 MB is available",
    ):
        read_names("/dev/zero")
