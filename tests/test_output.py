"""Output that suits where it goes: a log file gets no redraws, NO_COLOR gets no colour."""

import os
import re
import subprocess
import sys

from typer.testing import CliRunner

from minigpt.cli.main import app

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def minigpt(*args, env=None, stderr=subprocess.PIPE):
    env = {**{k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "minigpt", *map(str, args)], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
    )


def coloured(text: str) -> bool:
    """Whether any escape sequence sets a foreground or background colour."""
    for params in SGR.findall(text):
        codes = [int(c) for c in params.split(";") if c]
        if any(30 <= c <= 49 or 90 <= c <= 107 for c in codes):
            return True
    return False


def test_a_run_logged_to_a_file_has_no_carriage_return_redraws(names_file, tmp_path):
    log = tmp_path / "train.log"
    with log.open("w") as f:
        proc = minigpt("train", "-c", "tiny", "--data", names_file, "--out", tmp_path / "run", "--steps", 20, stderr=f)
    assert proc.returncode == 0
    text = log.read_text()
    assert "\r" not in text and not coloured(text)
    assert "step 10/20  loss " in text and "step 20/20  loss " in text  # a plain line at each evaluation


def test_no_color_is_respected_even_where_colour_is_forced(trained_run, monkeypatch):
    run_dir, _ = trained_run
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert coloured(CliRunner().invoke(app, ["inspect-attention", str(run_dir), "ab"]).stdout)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = CliRunner().invoke(app, ["inspect-attention", str(run_dir), "ab"])
    assert plain.exit_code == 0 and "0." in plain.stdout and not coloured(plain.stdout)


def test_a_width_no_table_fits_in_still_prints_what_the_command_owes(trained_run):
    for columns in ("0", "-4", "wide", "3"):
        for args in (["info", trained_run[0]], ["inspect-attention", trained_run[0], "emma"]):
            shown = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": columns})
            assert shown.exit_code == 0 and len(shown.stdout) > 200, (columns, args, shown.output)


def test_an_error_about_a_huge_input_quotes_it_shortened(trained_run):
    refused = CliRunner().invoke(app, ["inspect-attention", str(trained_run[0]), "é" * 100_000])
    [line] = refused.stderr.splitlines()
    assert refused.exit_code == 2 and len(line) < 1_200
    assert "characters left out" in line and line.endswith("this model reads at most 15")


def test_one_name_is_one_name_not_one_names():
    from minigpt.formats.checkpoint import describe_data

    line = describe_data({"train_names": 1, "characters": 4, "val_names": 0}, where="one.txt")
    assert line.startswith("one.txt: 1 training name (4 characters") and "1 training names" not in line
    assert "2 training names" in describe_data({"train_names": 2, "characters": 7, "val_names": 0}, where="two.txt")


def test_a_time_limited_runs_panel_says_once_whether_patience_can_stop_it(names_file, tmp_path):
    """The recipe's note said "too few for train.patience (4) to stop it early" and the stopping line below it
    "stopping early after 4 evaluations", and nothing where patience could act: now the note says which, and the
    stopping line defers to it."""
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            "tiny",
            "--data",
            str(names_file),
            "--out",
            str(tmp_path / "run"),
            "--time-limit",
            "1",
            "--set",
            "train.patience=4",
            "--no-page",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    said = [
        p
        for p in ("too few for train.patience (4) to stop it early", "enough for train.patience (4) to stop it early")
        if p in text
    ]
    assert len(said) == 1, text
    assert "should its time limit hold them" in text
