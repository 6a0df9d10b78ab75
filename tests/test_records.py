"""What a run leaves behind, and the commands that read it."""

import json
import runpy
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.formats.recipes import load_config
from minigpt.views.loss_curve import sparkline

runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent


def test_run_directory_holds_the_whole_record(trained_run):
    run_dir, _ = trained_run
    assert load_config(run_dir / "config.toml").train.steps == 60
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    logged = [r for r in records if "train_loss" in r]
    assert {"step", "train_loss", "lr", "tokens_per_sec", "elapsed"} <= set(logged[0])
    assert [r["step"] for r in logged] == list(range(10, 61, 10))
    assert [r["step"] for r in records if "val_loss" in r] == [10, 20, 30, 40, 50, 60]
    samples = (run_dir / "samples.txt").read_text().splitlines()
    assert len(samples) == 6 and samples[0].startswith("step 10  val ")
    if pytest.importorskip("matplotlib"):
        assert (run_dir / "loss.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_writes_a_png(trained_run, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.png"
    result = runner.invoke(app, ["plot", str(trained_run[0]), "--out", str(out)])
    assert result.exit_code == 0 and out.read_bytes()[:4] == b"\x89PNG"
    assert runner.invoke(app, ["plot", str(tmp_path)]).exit_code == 2  # no metrics.jsonl there


def test_info_lists_tensors_under_microgpt_names(trained_run):
    result = runner.invoke(app, ["info", str(trained_run[0])])
    assert result.exit_code == 0
    for expected in ("layer0.attn_wq", "16 x 16", "lm_head", "boundary", "vocabulary", "4,192 parameters"):
        assert expected in result.stdout


def test_json_outputs_are_the_only_thing_on_stdout(trained_run, names_file, tmp_path):
    outputs = [
        runner.invoke(
            app,
            ["train", "-c", "tiny", "--data", str(names_file), "--out", str(tmp_path / "r"), "--steps", "5", "--json"],
        ),
        runner.invoke(app, ["sample", str(trained_run[0]), "-n", "3", "--json"]),
        runner.invoke(app, ["eval", str(trained_run[0]), "--data", str(names_file), "--json"]),
    ]
    for result in outputs:
        assert result.exit_code == 0
        json.loads(result.stdout)  # the whole of stdout is one JSON document


def test_sparkline():
    assert sparkline([3.0, 2.0, 1.0]) == "█▅▁"
    assert len(sparkline([float(i) for i in range(1000)], width=40)) == 40
    assert sparkline([]) == ""


def test_the_api_example_runs_and_ends_with_names_that_look_like_names(tmp_path, monkeypatch, capsys):
    """It trains by steps, as it is written (its default 1,000), so a slow machine gets the same model."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["quickstart.py", str(tmp_path / "run")])
    runpy.run_path(str(REPO / "examples" / "quickstart.py"), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("trained 1000 steps") and float(lines[0].split()[-1]) < 2.5  # a uniform guess: 3.30
    names = lines[1].removeprefix("new names: ").split(", ")
    assert len(names) == 8 and all(2 <= len(n) <= 12 and set(n) & set("aeiouy") for n in names), names
    assert "after 'emma' the model expects:" in lines[-1]


def test_metrics_record_what_the_numbers_depend_on(trained_run):
    import torch

    first = json.loads((trained_run[0] / "metrics.jsonl").read_text().splitlines()[0])
    assert first["step"] == 0 and first["torch"] == torch.__version__ and first["threads"] >= 1
    assert first["device"] == ("cuda" if torch.cuda.is_available() else "cpu") and first["processes"] == 1  # "auto"


@pytest.mark.parametrize(
    "line, plot_ok", [("null", False), ("[" * 50_000 + "]" * 50_000, False), ('{"step": 0, "train_loss": 3.3}', True)]
)
def test_a_damaged_metrics_line_is_one_line_for_plot_and_no_curve_for_the_page(trained_run, tmp_path, line, plot_ok):
    import shutil

    from minigpt.views.page_data import loss_curve

    run = tmp_path / "run"
    shutil.copytree(trained_run[0], run)
    metrics = run / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join([lines[0], line, *lines[1:]]) + "\n")
    result = CliRunner().invoke(app, ["plot", str(run), "--out", str(tmp_path / "loss.png")])
    if plot_ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and "line 2 is not" in result.stderr and len(result.stderr.splitlines()) == 1
        assert loss_curve(run) is None  # the page drops a damaged curve, and is written all the same


def test_the_samples_table_shows_every_name_whole_at_any_width():
    import io

    from rich.console import Console

    from minigpt.views.panels import samples_table

    names = [
        ("chipeldale-on-the-marsh", False),
        ("king's lingelmouth", True),
        ("anna", True),
        ("bishop's farngat leaness", False),
    ]
    console = Console(file=io.StringIO(), width=60, highlight=False)
    samples_table(console, 250, 2.1, names * 2, block_size=64)
    shown = console.file.getvalue()
    assert all(name in shown for name, _ in names) and "…" not in shown  # one a line, each whole


def test_samples_txt_keeps_names_with_spaces_apart():
    from minigpt.files.run_records import samples_line, samples_step

    line = samples_line(250, 2.1095, [("bishop's farngat leaness", False), ("anna", True), ("a\tb", False)])
    assert line.split("\t") == ["step 250  val 2.1095", "bishop's farngat leaness", "anna*", "a\\tb"]
    assert samples_step(line) == 250


@pytest.mark.draws_loss_png
def test_the_pyplot_import_for_loss_png_ends_before_the_first_step(names_file, tmp_path, monkeypatch):
    """Imported beside the first steps, pyplot held Python's lock and slowed them by its whole length
    (a time-limited run lost it from its budget): the run waits for it before its clock starts."""
    import threading
    import time

    import minigpt
    from minigpt.views import plotting

    imported = threading.Event()

    def slow_import():
        time.sleep(1.0)  # longer than a tiny run's setting up
        imported.set()

    monkeypatch.setattr(plotting, "import_pyplot", slow_import)
    monkeypatch.setattr("minigpt.runs.recorder.write_loss_png_if_possible", lambda run_dir: None)
    seen = []

    class FirstStep(minigpt.Reporter):
        def start(self, trainer):
            seen.append(imported.is_set())

    config = load_config("tiny", ["train.steps=2", "train.eval_interval=2"])
    minigpt.train(config, data_path=names_file, out_dir=tmp_path / "r", quiet=True, report=FirstStep())
    assert seen == [True]


def test_a_long_runs_metrics_keep_one_copy_of_each_key(tmp_path):
    """A 100 MB metrics.jsonl took 1.03 GB to compare: each of its 750,000 records held its own copies of its
    keys. Read now with one copy of each key for all the records (0.69 GB, the command's own 0.24 included)."""
    from minigpt.files.run_records import read_metrics

    lines = [json.dumps({"step": s, "train_loss": 2.5, "lr": 0.01, "elapsed": s / 100}) for s in range(1, 50)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = read_metrics(tmp_path)
    assert len(records) == 49 and records[-1]["step"] == 49
    keys = [next(k for k in record if k == "train_loss") for record in records]
    assert all(key is keys[0] for key in keys)
