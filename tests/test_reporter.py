"""Training reports through a Reporter: a notebook's own hears what the run's records keep."""

import json

import pytest
from conftest import tiny_config

from minigpt import Reporter, train
from minigpt.errors import UsageError


class Collected(Reporter):
    def __init__(self):
        self.events, self.losses, self.samples, self.result = [], [], [], "unset"

    def start(self, trainer):
        self.events.append("start")

    def step(self, trainer):
        self.events.append("step")

    def log(self, trainer, train_loss):
        self.losses.append((trainer.step, train_loss))

    def evaluation(self, trainer, samples):
        self.samples.append((trainer.step, trainer.val_loss, samples))

    def end(self, trainer, result):
        self.result = result


def test_a_reporter_of_ones_own_collects_the_losses_the_records_keep(names_file, tmp_path, capsys):
    mine = Collected()
    result = train(
        tiny_config("train.steps=30", "train.eval_interval=10"),
        names_file,
        out_dir=tmp_path / "run",
        quiet=True,
        report=mine,
    )
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert mine.losses == [(r["step"], r["train_loss"]) for r in records if "train_loss" in r]
    assert [(step, loss) for step, loss, _ in mine.samples] == [
        (r["step"], r["val_loss"]) for r in records if "val_loss" in r
    ]
    assert mine.events == ["start"] + ["step"] * 30
    assert all(len(names) == 8 and all(isinstance(seen, bool) for _, seen in names) for _, _, names in mine.samples)
    assert mine.result is result and result.steps == 30
    assert capsys.readouterr().err == ""  # quiet: the display says nothing; the reporter is told all the same


def test_a_run_that_fails_ends_its_reporter_with_no_result(names_file, tmp_path, monkeypatch):
    mine = Collected()

    def fail_at_evaluation(self, trainer, samples):
        raise UsageError("stop here")

    monkeypatch.setattr(Collected, "evaluation", fail_at_evaluation)
    with pytest.raises(UsageError, match="stop here"):
        train(
            tiny_config("train.steps=20", "train.eval_interval=10"),
            names_file,
            out_dir=tmp_path / "run",
            quiet=True,
            report=mine,
        )
    assert mine.result is None and mine.events[:2] == ["start", "step"]


def test_training_imports_no_display_and_nothing_above_it():
    import ast
    from pathlib import Path

    import minigpt.training

    tree = ast.parse(Path(minigpt.training.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name.split(".")[0] in ("rich", "tqdm")}
    assert not {name for name in imported if name.startswith(("minigpt.cli", "minigpt.views", "minigpt.runs"))}
