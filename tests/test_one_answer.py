"""One answer: the same command trains the same model (precision "auto" is a rule, not a timing), and an
ordinary step of `minigpt train` is the core's step, entering nothing around the core but the reporters
it tells."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import tiny_config
from test_layers import CORE_FILES, PACKAGE

from minigpt.runs.run import train
from minigpt.training import Reporter


def trained_by_the_command(names_file, out: Path) -> tuple[list, dict]:
    command = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "--config",
        "tiny",
        "--data",
        str(names_file),
        "--out",
        str(out),
        "--quiet",
        "--no-page",
        "--set",
        "model.dropout=0.1",
        "--set",
        "train.precision='auto'",
    ]
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
    train(
        tiny_config("train.steps=8", "train.eval_interval=8", "train.log_interval=8"),
        names_file,
        out_dir=tmp_path / "run",
        quiet=True,
        report=tracer,
    )
    core = {(PACKAGE / name).resolve() for name in CORE_FILES}
    assert tracer.entered, "the trace saw no call"
    assert tracer.entered <= core, sorted(str(p) for p in tracer.entered - core)
    assert (PACKAGE / "training.py").resolve() in tracer.entered


def run_command(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "minigpt", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


EDITED_NAMES = "\n".join(Path(PACKAGE.parent / "data" / "names.txt").read_text().split()[::17][:300]) + "\n"


@pytest.fixture(scope="module")
def edited_core(tmp_path_factory):
    """A tinkerer's clone whose core squares its ReLU, and runs of the unchanged tiny recipe, two seeds each, by
    it and by this checkout, with a repeat of one of this checkout's: the folder, and how to run the clone."""
    import os
    import shutil

    tmp = tmp_path_factory.mktemp("edited")
    names_file = tmp / "names.txt"
    names_file.write_text(EDITED_NAMES, encoding="utf-8")
    copy = tmp / "clone"
    shutil.copytree(PACKAGE, copy / "minigpt", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PACKAGE.parent / "configs", copy / "configs")
    shutil.copytree(PACKAGE.parent / "data", copy / "data")
    model = copy / "minigpt" / "model.py"
    text = model.read_text(encoding="utf-8")
    relu = "h = F.relu(h, inplace=True) if self.relu"
    assert relu in text
    model.write_text(text.replace(relu, "h = F.relu(h).square() if self.relu"), encoding="utf-8")
    clone = {"cwd": copy, "env": {**os.environ, "PYTHONPATH": str(copy), "HOME": str(tmp)}}
    train_args = ["train", "--config", "tiny", "--data", str(names_file), "--quiet", "--no-page"]
    for seed in (1, 2):
        run_command(*train_args, "--out", str(tmp / f"orig-s{seed}"), "--set", f"train.seed={seed}")
        run_command(*train_args, "--out", str(tmp / f"edit-s{seed}"), "--set", f"train.seed={seed}", **clone)
    run_command(*train_args, "--out", str(tmp / "again-s1"), "--set", "train.seed=1")
    return tmp, clone


@pytest.mark.processes
def test_runs_of_an_edited_core_are_kept_apart_from_the_originals_and_a_repeat_is_no_seed(edited_core):
    """A tinkerer's squared ReLU, under the unchanged recipe: compare keeps its runs apart from the original's and
    says why; a run of the same recipe, seed and code as another is a repeat, counted once."""
    from minigpt.runs.compare import compare

    tmp, _ = edited_core
    edited = torch.load(tmp / "edit-s1" / "best.pt", weights_only=True)["code"]
    original = torch.load(tmp / "orig-s1" / "best.pt", weights_only=True)["code"]
    assert edited["core"] != original["core"]
    assert "trained by" in (tmp / "orig-s1" / "config.toml").read_text()
    comparison = compare([tmp / name for name in ("orig-s1", "orig-s2", "edit-s1", "edit-s2", "again-s1")])
    assert [len(g.runs) for g in comparison.groups] == [2, 2]  # the repeat counted once, the edit apart
    assert {r.path.name for r in comparison.groups[0].runs} == {"orig-s1", "orig-s2"}
    notes = " ".join(comparison.notes)
    assert "different code" in notes and "again-s1 repeats" in notes and "not another seed" in notes


def test_the_page_of_an_edited_core_says_it_disagrees_with_torch_and_draws_nothing(edited_core, chromium, tiny_page):
    """The page recomputes torch's logits for its name as it opens: an edited core's page says plainly that it
    disagrees, and draws none of its numbers; this checkout's page agrees and draws them."""
    import browser

    tmp, clone = edited_core
    run_command("inspect-attention", str(tmp / "edit-s1"), "emma", "--html", str(tmp / "edited.html"), **clone)
    page = browser.open_page(chromium, tmp / "edited.html")
    browser.wait_until(page, "document.getElementById('torch-check') !== null")
    said = page.inner_text("#torch-check")
    assert "does not agree with torch" in said and "\u201cemma\u201d" in said
    assert page.locator("#name-input").count() == 0  # no panel was drawn
    page = browser.open_page(chromium, tiny_page[1])
    browser.wait_until(page, "document.getElementById('name-input') !== null")
    assert page.locator("#torch-check").count() == 0


def test_the_two_run_page_of_an_edited_core_says_it_disagrees_with_torch_and_draws_nothing(edited_core, chromium):
    """The two-run page did not check itself: written by an edited core it drew numbers model.js computes for a
    model that is not the core's. It checks both models as it opens, and names the first that disagrees (here
    both: the edited core computes A's logits its own way too)."""
    import browser

    tmp, clone = edited_core
    run_command(
        "inspect-attention",
        str(tmp / "orig-s1"),
        str(tmp / "edit-s1"),
        "emma",
        "--html",
        str(tmp / "two.html"),
        **clone,
    )
    page = browser.open_page(chromium, tmp / "two.html")
    browser.wait_until(page, "document.getElementById('torch-check') !== null")
    said = page.inner_text("#torch-check")
    assert "does not agree with torch" in said and re.search(r"computes for A \(orig-s1\) differ", said), said
    assert page.locator("#heads").count() == 0  # no panel was drawn
    run_command(
        "inspect-attention", str(tmp / "orig-s1"), str(tmp / "orig-s2"), "emma", "--html", str(tmp / "same.html")
    )
    page = browser.open_page(chromium, tmp / "same.html")
    browser.wait_until(page, "document.querySelectorAll('#heads button').length > 0")
    assert page.locator("#torch-check").count() == 0
