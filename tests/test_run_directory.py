"""A run directory is written only where it is a run, never through a link, and never left half-made."""

import errno
import shutil

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.files import atomic_file
from minigpt.formats import checkpoint as checkpoint_module
from minigpt.runs.run_directory import LOCK, RUN_FILES

runner = CliRunner()
USER_FILES = {"config.toml": "[mine]\n", "samples.txt": "a\nb\nc\n", "metrics.jsonl": "x\ny\n", "loss.png": "png"}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(result, code: int, *words: str) -> None:
    assert result.exit_code == code, result.output
    assert len(result.stderr.splitlines()) == 1 and all(w in result.stderr for w in words), result.stderr


def test_resume_from_a_checkpoint_among_other_files_writes_none_of_them(trained_run, tmp_path):
    folder = tmp_path / "dl"
    folder.mkdir()
    shutil.copy(trained_run[0] / "last.pt", folder / "model.pt")
    for name, text in USER_FILES.items():
        (folder / name).write_text(text)
    one_line_error(
        invoke("train", "--resume", folder / "model.pt", "--steps", "70", "-q"), 2, "not in a run directory", "--out"
    )
    assert {p.name: p.read_text() for p in folder.iterdir() if p.name in USER_FILES} == USER_FILES
    assert sorted(p.name for p in folder.iterdir()) == sorted([*USER_FILES, "model.pt"])
    # --out continues it in a new run directory
    result = invoke("train", "--resume", folder / "model.pt", "--steps", "70", "-q", "--out", tmp_path / "new")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "last.pt").is_file() and (folder / "config.toml").read_text() == "[mine]\n"


def test_a_run_whose_records_are_not_minigpts_is_left_as_it_is(trained_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    (run / "samples.txt").write_text("my notes\nmore notes\n")
    config_before = (run / "config.toml").read_text()
    one_line_error(invoke("train", "--resume", run, "--steps", "70", "-q"), 2, "samples.txt: line 1")
    assert (run / "samples.txt").read_text() == "my notes\nmore notes\n"
    assert (run / "config.toml").read_text() == config_before


@pytest.mark.parametrize("name", [LOCK, *RUN_FILES])
def test_resume_never_writes_through_a_link_in_the_run(trained_run, tmp_path, name):
    run, target = tmp_path / "run", tmp_path / "users-file"
    shutil.copytree(trained_run[0], run)
    target.write_bytes((run / name).read_bytes() if (run / name).is_file() else b"mine")
    before = target.read_bytes()
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(target)
    result = invoke("train", "--resume", run, "--steps", "70", "-q")
    if name in ("best.pt", "last.pt"):  # a linked checkpoint: the run is not one minigpt made whole
        assert result.exit_code == 2
    else:
        one_line_error(result, 2, f"{name} is a symbolic link")
    assert target.read_bytes() == before


def test_a_new_run_never_writes_through_a_linked_lock(names_file, tmp_path):
    run, target = tmp_path / "run", tmp_path / "users-file"
    run.mkdir()
    target.write_text("mine")
    (run / LOCK).symlink_to(target)
    one_line_error(
        invoke("train", "-c", "tiny", "--data", names_file, "--steps", "3", "--out", run, "-q"),
        2,
        ".lock is a symbolic link",
    )
    assert target.read_text() == "mine"
    assert (
        invoke("train", "-c", "tiny", "--data", names_file, "--steps", "3", "--out", run, "-q", "--overwrite").exit_code
        == 0
    )
    assert (
        target.read_text() == "mine" and not (run / LOCK).is_symlink()
    )  # --overwrite removes the link, not its target


def test_plot_replaces_a_linked_loss_png_and_leaves_its_target(trained_run, tmp_path):
    pytest.importorskip("matplotlib")
    run, checkpoint = tmp_path / "run", tmp_path / "precious.pt"
    shutil.copytree(trained_run[0], run)
    shutil.copy(run / "best.pt", checkpoint)
    (run / "loss.png").unlink()
    (run / "loss.png").symlink_to(checkpoint)
    assert invoke("plot", run).exit_code == 0
    assert checkpoint.read_bytes() == (run / "best.pt").read_bytes()
    assert (run / "loss.png").read_bytes()[:4] == b"\x89PNG" and not (run / "loss.png").is_symlink()


def test_an_existing_run_suggests_resume_as_well_as_overwrite(trained_run):
    one_line_error(invoke("train", "--out", trained_run[0]), 2, f"--resume {trained_run[0]}", "--overwrite")


def test_a_new_run_that_cannot_write_its_first_checkpoint_leaves_nothing(names_file, tmp_path, monkeypatch):
    def onto_a_full_disk(path, data, failed):
        def write(f):
            raise OSError(errno.ENOSPC, "No space left on device")

        return atomic_file.write_atomically(path, write, failed)

    monkeypatch.setattr(checkpoint_module, "write_bytes", onto_a_full_disk)
    result = invoke("train", "-c", "tiny", "--data", names_file, "--steps", "3", "--out", tmp_path / "run", "-q")
    one_line_error(result, 1, "cannot write checkpoint", "No space left on device")
    assert not (tmp_path / "run").exists()
    kept = tmp_path / "mine"  # an empty directory the user made stays (--overwrite of one of theirs is refused)
    kept.mkdir()
    result = invoke("train", "-c", "tiny", "--data", names_file, "--steps", "3", "--out", kept, "-q")
    assert result.exit_code == 1 and kept.is_dir() and list(kept.iterdir()) == []


def test_overwrite_replaces_a_run_and_refuses_a_folder_of_the_users_own_files(names_file, tmp_path):
    """--overwrite replaces a run; a folder that holds no run (even a text file named best.pt) is refused, named,
    and left as it was."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for name, text in {**USER_FILES, "best.pt": "my notes, not a checkpoint\n", "page.html": "<p>mine</p>"}.items():
        (folder / name).write_text(text)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = invoke(
        "train", "--config", "tiny", "--data", names_file, "--out", folder, "--overwrite", "--quiet", "--no-page"
    )
    one_line_error(result, 2, "holds no run", "best.pt", "config.toml", "another --out")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize(
    "command", [("train", "--config", "tiny", "--out", ""), ("sample", ""), ("train", "--config", "tiny", "--data", "")]
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(*command)
    one_line_error(result, 2, "an empty path names no file or folder")
    assert list(tmp_path.iterdir()) == []


def test_the_api_refuses_an_empty_out_dir_too():
    from minigpt.errors import UsageError
    from minigpt.formats.recipes import load_config
    from minigpt.runs.run import train

    with pytest.raises(UsageError, match="empty path"):
        train(load_config("tiny"), out_dir="")
