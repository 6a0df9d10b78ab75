"""Edges a tester, a newcomer and a tinkerer found (issue 96): each a line that says what was meant, where the
command took the input for something else, or said nothing."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app

runner = CliRunner()


def minigpt(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "minigpt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_a_shortcut_and_a_set_of_one_key_with_two_values_are_refused(names_file, tmp_path):
    result = runner.invoke(
        app,
        [
            "train",
            "--config",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "r"),
            "--set",
            "train.steps=7",
            "--steps",
            "9",
        ],
    )
    assert result.exit_code == 2 and "--steps 9 and --set train.steps=7 set one key to two values" in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5", ""])
def test_a_thread_count_that_is_no_number_is_left_out_and_said(value, names_file, tmp_path):
    done = minigpt(
        "train",
        "--config",
        "tiny",
        "--data",
        names_file,
        "--out",
        tmp_path / "r",
        "--no-page",
        env={"OMP_NUM_THREADS": value, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert "is not a whole number of threads from 1" in done.stderr and "libgomp" not in done.stderr
    assert "as OMP_NUM_THREADS says" not in done.stdout


def test_a_home_that_does_not_exist_is_not_made_for_the_page_cache(trained_run, tmp_path):
    home = tmp_path / "nobody"
    env = {"HOME": str(home), "XDG_CACHE_HOME": "", "MINIGPT_CACHE_DIR": ""}
    done = minigpt("inspect-attention", trained_run[0], "emma", "--html", tmp_path / "page.html", env=env)
    assert done.returncode == 0, done.stderr
    assert not home.exists() and (tmp_path / "page.html").is_file()
    assert done.stderr.count("does not exist, so the page's measurements are not kept") == 1


def test_a_run_given_to_train_by_its_place_is_pointed_to_resume_and_out(trained_run):
    result = runner.invoke(app, ["train", str(trained_run[0])])
    assert result.exit_code == 2 and "--resume" in result.stderr and "--out" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_name_and_a_run_swapped_are_said_to_be(trained_run, tmp_path):
    done = minigpt("inspect-attention", "emma", trained_run[0], cwd=tmp_path)
    assert done.returncode == 2 and "the run comes first" in done.stderr
    assert f"inspect-attention {trained_run[0]} emma" in done.stderr


def test_a_third_run_is_not_read_as_the_pages_text(trained_run, tmp_path):
    run = trained_run[0]
    done = minigpt("inspect-attention", run, run, run, "--html", tmp_path / "two.html")
    assert done.returncode == 2 and "is a third" in done.stderr and not (tmp_path / "two.html").exists()


def test_a_name_no_spelling_reads_whole_still_gets_the_plainer_one(trained_run):
    result = runner.invoke(app, ["inspect-attention", str(trained_run[0]), "São Paulo"])
    assert result.exit_code == 2 and 'reads as "sao paulo" but for' in result.stderr, result.stderr


def test_a_run_worse_than_guessing_says_so_and_names_the_recipe_that_fits(names_file):
    """--config short on a 391-name file rose to 4.27, worse than a uniform guess (3.30), without a word."""
    import math

    from conftest import tiny_config

    from minigpt.files.names_file import read_names
    from minigpt.runs.run import worse_than_guessing
    from minigpt.training import Trainer

    trainer = Trainer.from_names(tiny_config(), read_names(names_file))
    uniform = math.log(trainer.config.model.vocab_size)
    trainer.best_val_loss = uniform + 1
    said = worse_than_guessing(trainer)
    assert said and "worse than a uniform guess" in said and "configs/few.toml" in said and "--config few" in said
    trainer.best_val_loss = uniform - 0.05  # past how often the characters come, short of a uniform guess
    assert worse_than_guessing(trainer) is None  # a run of a few steps has not had the time to beat it
    trainer.step = 1000
    assert "by how often the training names use it" in worse_than_guessing(trainer)
    trainer.best_val_loss = 1.0
    assert worse_than_guessing(trainer) is None


def test_compare_says_what_a_runs_records_hold_a_reader_must_know(trained_run, tmp_path):
    """A validation loss that is not a number was dropped from the curve silently, a repeated line drew the curve
    twice, and a run still training was compared with no note."""
    import fcntl
    import shutil

    from minigpt.runs.compare import compare

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(trained_run[0], a)
    shutil.copytree(trained_run[0], b)
    lines = (b / "metrics.jsonl").read_text().splitlines()
    (b / "metrics.jsonl").write_text(
        "\n".join(lines + lines[-2:] + ['{"step": 61, "val_loss": NaN, "elapsed": 1.0}']) + "\n"
    )
    with open(b / ".lock", "w") as lock:
        lock.write("4242")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        notes = " ".join(compare([a, b]).notes)
    assert "repeats 2 lines: each counted once" in notes
    assert "not a number at step 61" in notes
    assert "still training (process 4242)" in notes
    assert "a repeat, not another seed" in notes  # a copied run is no second seed


def test_a_resumed_run_keeps_a_damaged_metrics_file_aside_before_writing_its_records(trained_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    damaged = b"\x00\x01\xff\xfe binary, no record" * 3
    (run / "metrics.jsonl").write_bytes(damaged)
    result = runner.invoke(app, ["train", "--resume", str(run), "--steps", "70", "--quiet", "--no-page"])
    assert result.exit_code == 0, result.stderr
    assert (run / "metrics.jsonl.damaged").read_bytes() == damaged and "is kept as" in result.stderr
    assert b"\x00" not in (run / "metrics.jsonl").read_bytes()


LONG = "a" * 300  # a name past the file system's 255 bytes


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--config", "tiny", "--out", LONG],
        ["train", "--config", "tiny", "--data", LONG],
        ["sample", LONG],
        ["eval", LONG],
        ["info", LONG],
        ["export", LONG, "out.json"],
        ["inspect-attention", "RUN", "emma", "--html", f"{LONG}.html"],
        ["compare", "RUN", LONG],
        ["plot", LONG],
        ["sample", f"RUN/{LONG}/best.pt"],
    ],
)
def test_a_name_too_long_for_the_file_system_is_one_line_in_every_command(args, trained_run, tmp_path, monkeypatch):
    """The path check itself raised again (is_symlink on the same path), and every command that takes a path
    ended in a traceback."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, [str(trained_run[0]) if a == "RUN" else a.replace("RUN", str(trained_run[0])) for a in args]
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "too long for the file system" in lines[0] and "Traceback" not in result.output
    assert lines[0].endswith("and a name may have 255)")


@pytest.mark.parametrize("given", [42, ["tiny"], b"tiny", {"model": {}}])
def test_load_config_takes_a_name_or_a_path_and_says_so(given):
    from minigpt import UsageError, load_config

    with pytest.raises(UsageError, match="takes a recipe's name or path"):
        load_config(given)


@pytest.mark.parametrize(
    "device, says", [("tpu", "unknown device"), ("mps", "MPS is not available"), (5, "expected auto, cpu, cuda")]
)
def test_load_checkpoint_refuses_a_device_in_one_line(device, says, trained_run):
    from minigpt import UsageError, load_checkpoint

    with pytest.raises(UsageError, match=says):
        load_checkpoint(trained_run[0], device=device)


def test_name_losses_refuses_a_batch_size_below_one(trained_run):
    from minigpt import UsageError, load_checkpoint, name_losses

    ckpt = load_checkpoint(trained_run[0])
    with pytest.raises(UsageError, match="batch_size"):
        name_losses(ckpt.model, ckpt.tokenizer, ["emma"], batch_size=-1)


@pytest.mark.parametrize(
    "content, says",
    [
        ("emma\nolivia\nava\n".encode("utf-16-le"), "looks like UTF-16 without its byte-order mark"),
        (b"emma\nol\x00ivia\nava\n", "line 2 holds a NUL character, which no name holds"),
        (b"name,gender,count\nalvina,F,200\nbob,M,100\n", "looks like a CSV table with a header"),
    ],
)
def test_a_names_file_that_is_no_list_of_names_is_said_to_be_what_it_looks_like(content, says, tmp_path):
    path = tmp_path / "names.txt"
    path.write_bytes(content)
    result = runner.invoke(app, ["train", "--config", "tiny", "--data", str(path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and says in result.stderr, result.stderr
    assert not (tmp_path / "r").exists()


def test_names_with_a_comma_here_and_there_still_train(tmp_path):
    from minigpt.files.names_file import read_names

    path = tmp_path / "names.txt"
    path.write_text("smith, john\nemma\nava\n")
    assert read_names(path) == ["smith, john", "emma", "ava"]
