"""The benchmark scripts run (on tiny settings); what they measure is not tested here."""

import json
import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def run(monkeypatch, capsys):
    """Run a benchmark script in this process (torch is loaded already) and return what it printed."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def run_script(script, *args):
        monkeypatch.setattr(sys, "argv", [script, *map(str, args)])
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
        return capsys.readouterr().out

    return run_script


def test_throughput_reports_every_batch_size(run, tmp_path):
    out = tmp_path / "throughput.json"
    printed = run(
        "throughput.py", "--config", "tiny", "--batch-sizes", "8,16", "--seconds", "0.3", "--no-peak", "--out", out
    )
    results = json.loads(out.read_text())
    assert [row["batch_size"] for row in results["rows"]] == [8, 16]
    assert all(
        row["tokens_per_sec"] > 0 and row["gflops"] > 0 and row["flops_per_token"] > 0 for row in results["rows"]
    )
    assert "tokens/s" in printed and "GFLOP/s" in printed  # the table


@pytest.mark.processes  # startup.py times the commands it starts: no word of that is in this module
def test_sampling_and_startup(run, trained_run, tmp_path):
    run_dir, _ = trained_run
    out = run("sampling.py", "--checkpoint", run_dir, "--num", "40", "--batch-sizes", "16", "--repeats", "1")
    assert "names/s" in out
    assert "minigpt --help" in run("startup.py", "--checkpoint", run_dir, "--repeats", "1")


def test_peers_writes_the_names_as_nanogpts_character_stream(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import pickle

    import numpy as np
    from peers import nanogpt_data

    nanogpt_data(tmp_path, ["emma", "zoe"], ["ada"])
    meta = pickle.loads((tmp_path / "meta.pkl").read_bytes())
    ids = np.fromfile(tmp_path / "train.bin", dtype=np.uint16)
    assert "".join(meta["itos"][int(i)] for i in ids) == "emma\nzoe\n"  # one id a character, the newline one too
    assert meta["vocab_size"] == len(set("emma\nzoe\nada"))


@pytest.mark.parametrize("script", sorted(path.name for path in BENCHMARKS.glob("*.py")))
def test_every_benchmark_imports_only_what_the_package_has(script):
    """A restructure that moves a name breaks the benchmarks that import it, and none of them runs in the suite
    whole: each name a benchmark imports from minigpt is where it says."""
    import ast
    import importlib

    for node in ast.walk(ast.parse((BENCHMARKS / script).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "minigpt":
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or is_module(f"{node.module}.{alias.name}"), (
                    f"{script}: from {node.module} import {alias.name}"
                )


def is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its parent is a module, not a package
        return False


def test_a_busy_or_drifting_machine_marks_the_figures_untrusted(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from common import spread, untrusted

    steady, quiet = {"gflops": 120.0}, {"load_1min": 0.1, "cores": 2}
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "low": 1.0, "high": 3.0, "spread": 1.0, "values": [3.0, 1.0, 2.0]}
    assert untrusted(steady, steady, {"a": spread([100.0, 104.0, 102.0])}, quiet, usual_peak=125.0) == []
    reasons = untrusted(
        steady,
        {"gflops": 60.0},
        {"a": spread([1337.0, 3900.0, 1969.0])},
        {"load_1min": 2.3, "cores": 2},
        usual_peak=190.0,
    )
    assert len(reasons) == 4 and "busy" in reasons[0] and "moved from 120.0 to 60.0" in reasons[1]
    assert "far below this machine's usual 190.0" in reasons[2] and "a: repeats" in reasons[3]


def test_the_readmes_terminal_examples_are_found_and_a_changed_figure_is_caught(monkeypatch):
    """benchmarks/docs_examples.py runs the README's inspect-attention examples on the run they describe: here,
    that it finds them, and that one figure changed in the run's output is named by its line."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from docs_examples import ROOT, differs, examples

    found = examples((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [command for command, _ in found] == ["minigpt inspect-attention runs/names emma --layer 0 --head 2"]
    output = found[0][1]
    assert differs(output, output.replace(" \n", "\n")) is None  # trailing spaces aside
    changed = output.replace("0.75", "0.74", 1)  # the a row's weight on the m before it
    assert differs(output, changed).startswith("line 8:")


def test_the_race_refits_a_nanogpt_run_that_misses_its_budget_and_sees_the_machine_slow_down(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import peer_quality

    ran = []

    def run_nanogpt(checkout, args):  # the machine at half speed for the first run: 0.1 s a step, then 0.05
        iters = int(next(a for a in args if a.startswith("--max_iters=")).split("=")[1])
        ran.append(iters)
        return [0.1 if len(ran) == 1 else 0.05] * iters

    monkeypatch.setattr(peer_quality, "run_nanogpt", run_nanogpt)
    monkeypatch.setattr(peer_quality, "score_nanogpt", lambda checkout, out, folder: 2.0)
    row = peer_quality.nanogpt_at(tmp_path, tmp_path, 60.0, 1200, 1e-2, 0.0)
    assert ran == [1200, 600, 1200] and row["steps"] == 1200 and row["seconds"] == 60.0  # refitted twice, then fits
    nano = [{"seconds": 60.0, "steps": 1200}, {"seconds": 60.0, "steps": 600}]
    mini = [{"share": "1", "budget": 60.0, "steps": s} for s in (2000, 2040)]
    spreads = peer_quality.speed_spreads(nano, mini)
    assert spreads["nanoGPT's milliseconds a step"]["spread"] > 0.15 > spreads["minigpt's steps at 60 s"]["spread"]


def nanogpt_row(seconds, iters, lr, dropout) -> dict:
    """A nanoGPT run of the fake races: its best at lr 1e-2, inside the grid (no run past an edge)."""
    return {
        "who": "nanoGPT",
        "budget": seconds,
        "lr": lr,
        "dropout": dropout,
        "steps": iters,
        "seconds": seconds,
        "loss": 2.0 + abs(lr - 1e-2),
    }


def minigpt_row(seconds, seed, budget, loss) -> dict:
    return {
        "who": "minigpt",
        "budget": seconds,
        "seed": seed,
        "steps": 1000,
        "seconds": seconds,
        "loss": loss,
        "best": loss,
        "share": f"{seconds / budget:g}",
    }


def fake_race(monkeypatch, peer_quality, nanogpt_at, minigpt_at, seeds: int) -> dict:
    """The race at 60 s over a grid of three learning rates, each side's runs replaced by `nanogpt_at` and
    `minigpt_at`, on a quiet machine of a steady matmul peak."""
    import argparse

    for name, fake in [
        ("nanogpt_at", nanogpt_at),
        ("minigpt_at", minigpt_at),
        ("write_data", lambda *a: None),
        ("fitted_iters", lambda *a: (1000, 0.06)),
        ("machine_load", lambda: {"load_1min": 0.0, "cores": 2}),
        ("matmul_peak", lambda: {"gflops": 190.0}),
    ]:
        monkeypatch.setattr(peer_quality, name, fake)
    args = argparse.Namespace(
        quality=60.0, nanogpt=Path("."), seeds=seeds, lrs="3e-3,1e-2,3e-2", dropouts="0", usual_peak=190.0
    )
    return peer_quality.race(args, ["ann"], ["bob"], None)


def test_the_race_takes_turns_so_both_sides_see_the_same_minutes(monkeypatch):
    """minigpt's runs are spread among nanoGPT's, each seed's three budgets together, not all after them: on a
    machine whose speed halves and recovers within minutes, a race run one side then the other was unfair. The
    race is met where an eighth of the budget is below nanoGPT's best by more than its seeds' spread."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import peer_quality

    order = []

    def nanogpt_at(checkout, folder, seconds, iters, lr, dropout):
        order.append(f"nanoGPT {lr:g}")
        return nanogpt_row(seconds, iters, lr, dropout)

    def minigpt_at(folder, seconds, seed, budget):
        order.append(f"minigpt {seconds:g} s seed {seed}")
        return minigpt_row(seconds, seed, budget, 1.9)

    result = fake_race(monkeypatch, peer_quality, nanogpt_at, minigpt_at, seeds=2)
    assert order == [
        "nanoGPT 0.003",
        "minigpt 60 s seed 1",
        "minigpt 15 s seed 1",
        "nanoGPT 0.01",
        "minigpt 7.5 s seed 1",
        "minigpt 60 s seed 2",
        "nanoGPT 0.03",
        "minigpt 15 s seed 2",
        "minigpt 7.5 s seed 2",
    ]
    assert [row["seeds"] for row in result["summary"]] == [2, 2, 2] and result["met"]


def test_the_race_distrusts_minigpts_overruns_reruns_no_identical_run_and_takes_a_plain_runs_threads(
    monkeypatch, tmp_path
):
    """83 §11: a 7.5-s minigpt run that took 14.4 s was not among the race's reasons to distrust it; nanoGPT's refit,
    stuck at its floor of 20 iterations, ran the same run again; both sides were told 2 threads on a busy machine
    where a plain run takes 1."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import peer_quality

    ran = []

    def slow_nanogpt(checkout, args):  # a machine so slow that 20 iterations miss a 1-s budget
        ran.append(args)
        return [0.5] * int(next(a for a in args if a.startswith("--max_iters=")).split("=")[1])

    monkeypatch.setattr(peer_quality, "run_nanogpt", slow_nanogpt)
    monkeypatch.setattr(peer_quality, "score_nanogpt", lambda checkout, out, folder: 2.0)
    row = peer_quality.nanogpt_at(tmp_path, tmp_path, 1.0, 20, 1e-2, 0.0)
    assert len(ran) == 1 and row["steps"] == 20  # the refit would be 20 again: no second identical run

    monkeypatch.setattr(peer_quality, "choose_threads", lambda: (1, "one core free"))
    assert peer_quality.plain_threads()["OMP_NUM_THREADS"] == "1"

    def minigpt_at(folder, seconds, seed, budget):
        return {**minigpt_row(seconds, seed, budget, 1.9), "threads": 1, "seconds": 14.4 if seconds == 15 else seconds}

    def nanogpt(checkout, folder, seconds, iters, lr, dropout):
        return nanogpt_row(seconds, iters, lr, dropout)

    result = fake_race(monkeypatch, peer_quality, nanogpt, minigpt_at, seeds=1)
    assert "minigpt's 15-s run (seed 1) took 14.4 s" not in " ".join(result["untrusted"])  # within a tenth: fine

    def overrun(folder, seconds, seed, budget):
        return {**minigpt_at(folder, seconds, seed, budget), "seconds": 2 * seconds}

    result = fake_race(monkeypatch, peer_quality, nanogpt, overrun, seeds=1)
    assert "minigpt's 15-s run (seed 1) took 30.0 s" in " ".join(result["untrusted"])


def test_the_races_minigpt_runs_let_the_held_out_names_choose_nothing(monkeypatch, tmp_path, capsys):
    """Fair to the peer and the user: minigpt's runs in the race neither stop on the held-out names (patience)
    nor end on the weights they chose (keep_best), and the race says so in its output."""
    import subprocess

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import peer_quality

    seen = []

    def refuse(command, **options):
        seen.append(command)
        return subprocess.CompletedProcess(command, 1, "", "stopped here")

    monkeypatch.setattr(peer_quality.subprocess, "run", refuse)
    with pytest.raises(SystemExit):
        peer_quality.minigpt_at(tmp_path, 15.0, 1, 60.0)
    assert "train.patience=0" in seen[0] and "train.keep_best=false" in seen[0]
    assert "choose neither side's weights nor when it stops" in peer_quality.FAIR


def test_the_race_is_met_only_by_a_margin_wider_than_minigpts_seeds(monkeypatch):
    """An eighth of the budget below nanoGPT's best by less than its own seeds are apart is luck, not a lead."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import peer_quality

    def eighth_at(losses):
        def minigpt_at(folder, seconds, seed, budget):
            return minigpt_row(seconds, seed, budget, losses[seed - 1] if seconds == budget / 8 else 1.9)

        return minigpt_at

    def nanogpt_at(checkout, folder, seconds, iters, lr, dropout):
        return nanogpt_row(seconds, iters, lr, dropout)

    assert not fake_race(monkeypatch, peer_quality, nanogpt_at, eighth_at([1.95, 2.04]), seeds=2)["met"]
    assert fake_race(monkeypatch, peer_quality, nanogpt_at, eighth_at([1.95, 1.96]), seeds=2)["met"]
