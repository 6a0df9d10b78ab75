"""One answer: the same command trains the same model (precision "auto" is a rule, not a timing), and an
ordinary step of `minigpt train` is the core's step, entering nothing around the core but the reporters
it tells."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import tiny_config
from minigpt.runs.run import train
from minigpt.training import Reporter
from test_layers import CORE_FILES, PACKAGE


def trained_by_the_command(names_file, out: Path) -> tuple[list, dict]:
    command = [sys.executable, "-m", "minigpt", "train", "--config", "tiny", "--data", str(names_file), "--out",
               str(out), "--quiet", "--no-page", "--set", "model.dropout=0.1", "--set", "train.precision='auto'"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [(r["step"], r.get("train_loss"), r.get("val_loss")) for r in records if "step" in r]
    return losses, torch.load(out / "last.pt", weights_only=True)["model"]


@pytest.mark.processes
def test_one_command_run_twice_trains_the_same_model(names_file, tmp_path):
    """Two runs of one command, with dropout drawing random numbers, give the same losses bit for bit and the
    same weights; "auto" precision is recorded as the float32 it resolved to."""
    losses_a, weights_a = trained_by_the_command(names_file, tmp_path / "a")
    losses_b, weights_b = trained_by_the_command(names_file, tmp_path / "b")
    assert len(losses_a) > 3 and losses_a == losses_b
    assert weights_a.keys() == weights_b.keys() and all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    assert 'precision = "float32"' in (tmp_path / "a" / "config.toml").read_text()


REPORTER_CALLS = {name for name in vars(Reporter) if not name.startswith("_")}


class TraceOneStep(Reporter):
    """Traces every Python call from after step `at` to after step `at + 1`, leaving out what happens inside a
    reporter's callback: the files of minigpt that an ordinary step enters."""

    def __init__(self, at: int):
        self.at, self.entered = at, set()

    def inside_a_reporter(self, frame) -> bool:
        while frame is not None:
            if frame.f_code.co_name in REPORTER_CALLS and isinstance(frame.f_locals.get("self"), Reporter):
                return True
            frame = frame.f_back
        return False

    def trace(self, frame, event, arg):
        if event == "call" and "minigpt" in frame.f_code.co_filename and not self.inside_a_reporter(frame):
            self.entered.add(Path(frame.f_code.co_filename).resolve())

    def step(self, trainer):
        if trainer.step == self.at:
            sys.setprofile(self.trace)
        elif trainer.step == self.at + 1:
            sys.setprofile(None)


def test_an_ordinary_step_of_a_run_enters_only_the_core_and_the_reporters(names_file, tmp_path):
    """In one process the run hands the loop the core's own OneProcess answers: a traced step between two
    evaluations and logs enters the core's files and the reporters' callbacks, nothing else of minigpt."""
    tracer = TraceOneStep(at=3)
    train(tiny_config("train.steps=8", "train.eval_interval=8", "train.log_interval=8"), names_file,
          out_dir=tmp_path / "run", quiet=True, report=tracer)
    core = {(PACKAGE / name).resolve() for name in CORE_FILES}
    assert tracer.entered, "the trace saw no call"
    assert tracer.entered <= core, sorted(str(p) for p in tracer.entered - core)
    assert (PACKAGE / "training.py").resolve() in tracer.entered
