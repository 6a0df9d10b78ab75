"""Experiments as a tinkerer runs them: per-name losses, runs compared against seed noise, curves overlaid,
and a study swept with Optuna (journal file; processes on one study; a killed study resumed)."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import children_of, stepped, wait_for_command
from typer.testing import CliRunner

from minigpt.cli.main import app
from minigpt.runs.statistics import paired_interval, regularized_beta, welch_p

pytestmark = pytest.mark.xdist_group("experiments")  # the runs compared are made once, by one worker


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def student_p(t: float, df: int) -> float:
    """Two-sided p of Student's t by its closed forms at 1 and 2 degrees of freedom."""
    return 1 - 2 / math.pi * math.atan(abs(t)) if df == 1 else 1 - abs(t) / math.sqrt(2 + t * t)


def test_welch_p_values_match_students_t_closed_forms():
    # equal sizes and variances: Welch's degrees of freedom are 2(n - 1); n = 2 gives df = 2
    a, b = [1.0, 2.0], [3.0, 5.0]
    t = (1.5 - 4.0) / math.sqrt(0.5 / 2 + 2.0 / 2)
    df = (0.25 + 1.0) ** 2 / (0.25**2 + 1.0**2)  # not a whole number: checked against the incomplete beta directly
    assert welch_p(a, b) == pytest.approx(regularized_beta(df / (df + t * t), df / 2, 0.5), rel=1e-12)
    for t, df in [(0.5, 1), (3.0, 1), (1.2, 2), (7.0, 2)]:
        assert regularized_beta(df / (df + t * t), df / 2, 0.5) == pytest.approx(student_p(t, df), rel=1e-9)
    assert welch_p([1.0], [2.0, 3.0]) is None  # one seed a side: no test


def test_a_paired_interval_covers_the_difference_and_narrows_with_more_names():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(3, 10, (4000,), generator=g).double()
    differences = tokens * (-0.05 + 0.3 * torch.randn(4000, generator=g, dtype=torch.float64))
    low, high = paired_interval(differences, tokens)
    whole = float(differences.sum() / tokens.sum())
    assert low < whole < high and low < -0.03 and high < 0
    few_low, few_high = paired_interval(differences[:200], tokens[:200])
    assert few_high - few_low > 2 * (high - low)


def test_the_interval_draws_names_in_chunks_whose_size_is_bounded(monkeypatch):
    import minigpt.runs.statistics as statistics

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(3, 10, (500,), generator=g).double()
    differences = tokens * (-0.05 + 0.3 * torch.randn(500, generator=g, dtype=torch.float64))
    drawn, resample = [], statistics.resample
    monkeypatch.setattr(statistics, "DRAWN_AT_ONCE", 4 * 500)  # four resamples of 500 names at a time
    monkeypatch.setattr(
        statistics, "resample", lambda d, t, count, gen: drawn.append(count * len(d)) or resample(d, t, count, gen)
    )
    low, high = statistics.paired_interval(differences, tokens, resamples=2001)
    assert max(drawn) == 4 * 500 and sum(drawn) == 2001 * 500  # memory is bounded, every resample drawn
    assert low < float(differences.sum() / tokens.sum()) < high


@pytest.fixture(scope="module")
def four_runs(tmp_path_factory):
    """Two recipes (learning rates) by two seeds, and one run validated on other names."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    tmp = tmp_path_factory.mktemp("experiments")
    runs = {}
    for lr in (0.01, 0.03):
        for seed in (1, 2):
            config = tiny_config("train.steps=40", f"train.lr={lr}", f"train.seed={seed}", "train.eval_interval=20")
            runs[lr, seed] = train(config, out_dir=tmp / f"lr{lr}-s{seed}", quiet=True).run_dir
    other = tmp / "other.txt"
    other.write_text("\n".join(["anna", "bob", "carla", "dina", "emil"] * 40) + "\n", encoding="utf-8")
    runs["other"] = train(tiny_config("train.steps=20"), data_path=other, out_dir=tmp / "other", quiet=True).run_dir
    return runs


def test_eval_per_name_is_eval_by_name(four_runs):
    run_dir = four_runs[0.01, 1]
    rows = [json.loads(line) for line in run("eval", run_dir, "--per-name").stdout.splitlines()]
    mean = json.loads(run("eval", run_dir, "--json").stdout)
    assert len(rows) == mean["names"] and set(rows[0]) == {"name", "tokens", "loss"}
    assert sum(r["tokens"] for r in rows) == mean["tokens"]
    assert sum(r["tokens"] * r["loss"] for r in rows) / mean["tokens"] == pytest.approx(mean["loss"], abs=1e-5)
    csv = run("eval", run_dir, "--per-name", "--csv").stdout.splitlines()
    assert csv[0] == "name,tokens,loss" and csv[1].startswith(rows[0]["name"] + ",")
    refused = run("eval", run_dir, "--csv")
    assert refused.exit_code == 2 and "--per-name" in refused.output


def test_per_name_csv_never_hands_a_spreadsheet_a_formula(tmp_path):
    from conftest import tiny_config

    from minigpt.runs.run import train

    names = ["anna", "=cmd|' /C calc'!A0", "+x", "-y", "@z", "bob"]
    data = tmp_path / "odd.txt"
    data.write_text("\n".join(names * 5) + "\n", encoding="utf-8")
    run_dir = train(tiny_config("train.steps=2"), data_path=data, out_dir=tmp_path / "r", quiet=True).run_dir
    import csv

    rows = list(csv.reader(run("eval", run_dir, "--data", data, "--per-name", "--csv").stdout.splitlines()))[1:7]
    assert [r[0] for r in rows] == ["anna", "'=cmd|' /C calc'!A0", "'+x", "'-y", "'@z", "bob"]


def test_per_name_rows_come_as_they_are_scored_after_every_name_is_checked(trained_run):
    from minigpt import load_checkpoint
    from minigpt.errors import UsageError
    from minigpt.measurements.name_losses import name_losses, name_losses_as_scored

    ckpt = load_checkpoint(trained_run[0])
    names = ["emma", "olivia", "ava", "mia", "zoe"]
    rows = name_losses_as_scored(ckpt.model, ckpt.tokenizer, names, chunk=2)
    assert next(rows)[0] == "emma"  # a generator: rows come before the last name is scored
    assert [r[:2] for r in [name_losses(ckpt.model, ckpt.tokenizer, names)[0], *rows]] == [
        r[:2] for r in name_losses(ckpt.model, ckpt.tokenizer, names)
    ]
    with pytest.raises(UsageError):  # an unreadable name is refused before any row
        name_losses_as_scored(ckpt.model, ckpt.tokenizer, ["emma", "☃"])


def test_compare_groups_seeds_tests_them_and_says_what_differs(four_runs, tmp_path):
    order = [four_runs[0.01, 1], four_runs[0.03, 1], four_runs[0.01, 2], four_runs[0.03, 2]]
    result = run("compare", *order, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    base, other = report["groups"]
    assert base["runs"] == [str(order[0]), str(order[2])] and other["runs"] == [str(order[1]), str(order[3])]
    assert report["differs"] == {"train.lr": [0.01, 0.03]}
    best = [json.loads(run("info", r, "--json").stdout)["best_val_loss"] for r in order[1::2]]
    assert other["mean"] == pytest.approx(sum(best) / 2) and other["sd"] == pytest.approx(
        abs(best[0] - best[1]) / 2**0.5
    )
    assert 0 <= other["p"] <= 1 and base["p"] is None
    low, high = other["interval"]
    assert low <= other["mean"] - base["mean"] <= high  # the per-name difference's interval holds the difference
    verdict = report["verdicts"][0]
    assert verdict.startswith(f"lr0.03 is {'better' if other['mean'] < base['mean'] else 'worse'} than lr0.01 by")
    assert "2 and 2 seeds" in verdict
    from minigpt import load_checkpoint, sample

    assert base["samples"] == sample(load_checkpoint(order[0]), num=200, seed=0)[:6]  # what the table shows
    assert 0 <= other["new_share"] <= 1
    shown = run("compare", *order, "--baseline", order[1], "--png", tmp_path / "curves.png")
    assert shown.exit_code == 0, shown.output
    assert "baseline lr0.03" in shown.stdout and "train.lr: 0.03 | 0.01" in shown.stdout
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_whether_auto_scale_changed_a_recipe_does_not_split_its_seeds(four_runs):
    """A run records the keys it trained with; train.auto_scale is False once it scaled them (even to the same
    values), so runs of one recipe could carry either: the group is the recipe, not the flag."""
    from minigpt import load_checkpoint
    from minigpt.runs.compare import run_identity

    ckpt = load_checkpoint(four_runs[0.01, 1])
    before = run_identity(ckpt)
    ckpt.config.train.auto_scale = not ckpt.config.train.auto_scale
    assert run_identity(ckpt) == before
    ckpt.config.train.lr *= 2
    assert run_identity(ckpt) != before


def test_compare_refuses_runs_validated_on_other_names_unless_given_one_file(four_runs, names_file):
    refused = run("compare", four_runs[0.01, 1], four_runs["other"])
    assert refused.exit_code == 2 and "--data FILE" in refused.output and len(refused.output.splitlines()) == 1
    scored = json.loads(run("compare", four_runs[0.01, 1], four_runs[0.03, 1], "--data", names_file, "--json").stdout)
    assert scored["scored"].startswith("loss on names file")
    single = json.loads(run("eval", four_runs[0.03, 1], "--data", names_file, "--json").stdout)["loss"]
    assert scored["groups"][1]["mean"] == pytest.approx(single, abs=1e-5)
    assert "one seed a side" in scored["verdicts"][0]


def test_runs_of_one_recipe_on_other_names_are_never_one_group(four_runs, names_file, tmp_path):
    from conftest import tiny_config

    from minigpt.runs.run import train

    letters = tmp_path / "ab.txt"
    letters.write_text("\n".join(["ab", "ba", "aab", "abba", "bab"] * 20) + "\n", encoding="utf-8")
    runs = [
        train(tiny_config("train.steps=4"), data_path=data, out_dir=tmp_path / data.stem, quiet=True).run_dir
        for data in (names_file, letters)
    ]
    report = json.loads(run("compare", *runs, "--data", letters, "--json").stdout)
    assert len(report["groups"]) == 2 and "data.trained_on" in report["differs"]
    assert any("trained on different names" in note for note in report["notes"])
    unseen = run("compare", *runs, "--data", names_file)  # the second run never saw most letters: it is named
    assert unseen.exit_code == 2 and unseen.output.startswith(f"minigpt: error: {runs[1]}: ")


def test_a_run_is_one_run_however_its_path_is_spelled(four_runs, tmp_path):
    first, second = four_runs[0.01, 1], four_runs[0.03, 1]
    (tmp_path / "link").symlink_to(second)
    for baseline in (second.resolve(), f"{second}/", tmp_path / "link"):
        shown = run("compare", first, second, "--baseline", baseline, "--json")
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout)["baseline"] == "lr0.03"
    twice = run("compare", first, f"{first}/")
    assert twice.exit_code == 2 and "given twice" in twice.output


def test_compare_leaves_out_the_runs_of_sweep_trials_that_did_not_finish(four_runs, tmp_path):
    """A glob of a sweep's runs holds pruned, failed and stopped trials' runs: compare leaves them out and
    says so (58 §4)."""
    import shutil

    from minigpt.runs.study_folder import mark_trial_runs

    runs = [tmp_path / path.name for path in (four_runs[0.01, 1], four_runs[0.01, 2], four_runs[0.03, 1])]
    for source, copy in zip((four_runs[0.01, 1], four_runs[0.01, 2], four_runs[0.03, 1]), runs):
        shutil.copytree(source, copy)
    mark_trial_runs(tmp_path, [runs[2].name], 4, "pruned at step 20 (validation 3.1000)")
    shown = run("compare", *runs, "--json")
    assert shown.exit_code == 0, shown.output
    result = json.loads(shown.stdout)
    assert [g["label"] for g in result["groups"]] == ["lr0.01"]
    assert any("left out 1 run of sweep trials that did not finish (lr0.03-s1)" in note for note in result["notes"])
    alone = run("compare", runs[0], runs[2])
    assert alone.exit_code == 2 and "pruned at step 20" in alone.output and len(alone.output.splitlines()) == 1


def damaged_run(tmp_path, source, metrics=None, **stored):
    """A copy of a run with its metrics.jsonl replaced or best.pt's stored figures changed."""
    import shutil

    copy = tmp_path / "damaged"
    shutil.copytree(source, copy)
    if metrics is not None:
        (copy / "metrics.jsonl").write_text(metrics, encoding="utf-8")
    if stored:
        raw = torch.load(copy / "best.pt", weights_only=False)
        torch.save({**raw, **stored}, copy / "best.pt")
    return copy


@pytest.mark.parametrize(
    "metrics, stored, says",
    [
        ("", {}, "holds no records"),
        ('{"step": 0, "elap', {}, "holds no records"),
        ('{"step": 40, "val_loss": 2.1, "elapsed": "soon"}\n', {}, "'elapsed' should be a number"),
        ('{"step": 40, "val_loss": 2.1, "elapsed": null}\n', {}, "'elapsed' should be a number"),
        ('{"step": 40, "val_loss": -2.1, "elapsed": 1.0}\n', {}, "'val_loss' should be a number from 0"),
        (None, {"best_val_loss": 1e308}, "best_val_loss should be a loss from 0"),
        (None, {"best_val_loss": -5.0}, "best_val_loss should be a loss from 0"),
        (None, {"best_val_loss": "low"}, "best_val_loss should be a number"),
        (None, {"best_val_loss": float("nan")}, "not a number (the run diverged)"),
    ],
)
def test_every_record_is_checked_before_it_is_counted(four_runs, tmp_path, metrics, stored, says):
    damaged = damaged_run(tmp_path, four_runs[0.01, 1], metrics, **stored)
    refused = run("compare", four_runs[0.03, 1], damaged)
    assert refused.exit_code == 2 and says in refused.output, refused.output
    assert refused.output.splitlines()[-1].startswith("minigpt: error: ") and "Traceback" not in refused.output
    assert str(damaged) in refused.output.splitlines()[-1]  # the file is named
    if metrics:
        plotted = run("plot", damaged, "--out", tmp_path / "curve.png")
        assert plotted.exit_code == 2 and "Traceback" not in plotted.output  # every reader of the records checks them


def test_a_verdict_says_what_its_spread_is_and_calls_nothing_better_within_noise():
    from minigpt.runs.compare import Group, verdict
    from minigpt.runs.statistics import welch_p

    def group(label, scores):
        return Group(label, [type("Run", (), {"score": s})() for s in scores])

    base, close, far = group("a", [2.00, 2.02, 2.01]), group("b", [2.01, 1.99, 2.02]), group("c", [1.90, 1.91, 1.90])
    for g in (close, far):
        g.p = welch_p(g.scores, base.scores)
    assert "within seed noise" in verdict(close, base) and "better" not in verdict(close, base)
    assert verdict(far, base).startswith("c is better than a by 0.107 ± ") and "(standard error)" in verdict(far, base)


def test_plot_draws_several_runs_on_one_picture(four_runs, tmp_path):
    refused = run("plot", four_runs[0.01, 1], four_runs[0.03, 1])
    assert refused.exit_code == 2 and "--out" in refused.output
    drawn = run("plot", four_runs[0.01, 1], four_runs[0.03, 1], "--out", tmp_path / "both.png")
    assert drawn.exit_code == 0 and (tmp_path / "both.png").read_bytes()[:4] == b"\x89PNG"


def test_train_json_says_what_differs_from_its_recipe(names_file, tmp_path):
    result = run(
        "train",
        "-c",
        "tiny",
        "--data",
        names_file,
        "--out",
        tmp_path / "r",
        "--steps",
        5,
        "--lr",
        0.02,
        "--set",
        "model.dropout=0.2",
        "--quiet",
        "--json",
    )
    changed = json.loads(result.stdout)["differs_from_recipe"]
    assert changed == {
        "model.dropout": {"recipe": 0.0, "run": 0.2},
        "train.lr": {"recipe": 0.01, "run": 0.02},
        "train.steps": {"recipe": 120, "run": 5},
    } or set(changed) >= {"model.dropout", "train.lr"}


def test_info_json_holds_what_info_shows(trained_run):
    run_dir, _ = trained_run
    info = json.loads(run("info", run_dir, "--json").stdout)
    assert info["checkpoint"].endswith("best.pt") and info["config"]["model"]["n_layer"] >= 1
    assert info["tensors"]["wte"] == [len(info["vocabulary"]) + 1, info["config"]["model"]["n_embd"]]


SPEC = """
[sweep]
config = "tiny"
trials = {trials}
seeds = {seeds}
{budget}
[space]
"train.lr" = {{low = 0.003, high = 0.03, log = true}}
"model.n_layer" = {{low = 1, high = 2}}
[set]
"train.eval_interval" = 10
"""


def spec_file(tmp_path, trials=4, seeds=1, budget="steps = 20"):
    path = tmp_path / "study.toml"
    path.write_text(SPEC.format(trials=trials, seeds=seeds, budget=budget), encoding="utf-8")
    return path


def sweep_command(*args):
    return [sys.executable, "-m", "minigpt", "sweep", *map(str, args)]


def trials_of(out, *storage):
    shown = run("sweep", out, "--show", "--json", *storage)
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)["trials"]


def test_a_sweeps_own_process_and_its_look_need_no_torch():
    """The process that starts a sweep's workers, and `--show`, read text and Optuna's study alone: importing torch
    there (seconds) would only delay the workers, which import it themselves."""
    code = (
        "import sys, minigpt.runs.sweep, minigpt.runs.tables; "
        "from minigpt.runs.study_folder import names_digest; names_digest(None); "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr


def test_a_study_with_two_processes_runs_each_trial_once(tmp_path, names_file):
    out = tmp_path / "sweep"
    done = subprocess.run(
        sweep_command(
            spec_file(tmp_path, trials=2, budget="steps = 5"), "--out", out, "--data", names_file, "--jobs", 2, "--json"
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "2 trials at a time, 1 thread each" in done.stderr
    trials = json.loads(done.stdout)["trials"]
    assert sorted(t["number"] for t in trials) in ([0, 1], [0, 1, 2])  # two workers may start the last together
    assert all(t["state"] in ("complete", "pruned") for t in trials)
    runs = [r for t in trials for r in t["runs"]]
    assert len(runs) == len(set(runs)) == len(trials) and all((out / r / "best.pt").exists() for r in runs)
    assert len({json.dumps(t["params"], sort_keys=True) for t in trials}) == len(trials)  # the workers proposed apart


def test_a_trials_seeds_give_its_loss_and_the_best_recipe_trains_again(tmp_path, names_file):
    out = tmp_path / "sweep"
    spec = spec_file(tmp_path, trials=2, seeds=2, budget="steps = 5")
    done = run("sweep", spec, "--out", out, "--data", names_file, "--json")
    assert done.exit_code == 0, done.output
    trials = json.loads(done.stdout)["trials"]
    best = min((t for t in trials if t["state"] == "complete"), key=lambda t: t["value"])
    assert best["value"] == pytest.approx(sum(best["losses"]) / 2) and len(best["runs"]) == 2
    from minigpt.formats.recipes import load_config

    recipe = load_config(out / "best.toml")
    assert (
        recipe.train.lr == pytest.approx(best["params"]["train.lr"])
        and recipe.model.n_layer == best["params"]["model.n_layer"]
    )
    again = run("sweep", spec, "--out", out, "--data", names_file)
    assert again.exit_code == 0 and "trial " not in again.stderr
    (out / "best.toml").unlink()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    assert len(trials_of(out)) == len(trials)  # finished trials are kept, none is run twice
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # --show writes nothing, best.toml neither


def test_a_killed_study_goes_on_and_runs_the_killed_trial_again(tmp_path, names_file):
    out = tmp_path / "sweep"
    spec = spec_file(tmp_path, trials=2, budget="time_limit = 2")
    said = tmp_path / "stderr.txt"
    with open(said, "w") as stderr:  # what the sweep said, should it end before the kill
        process = subprocess.Popen(
            sweep_command(spec, "--out", out, "--data", names_file),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    wait_for_command(process, (out / "trial-0-seed-1337" / "metrics.jsonl").exists, stderr_file=said)  # training
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done = run("sweep", spec, "--out", out, "--data", names_file)
    assert done.exit_code == 0, done.output
    assert "running again trial 0" in done.stderr
    trials = trials_of(out)
    states = {t["number"]: t["state"] for t in trials}
    assert states[0] == "fail" and sum(s == "complete" for s in states.values()) == 2
    assert trials[1]["params"] == trials[0]["params"]  # the killed trial's values, run again


@pytest.mark.parametrize("jobs, workers_only", [(1, False), (2, False), (2, True)])
def test_ctrl_c_stops_a_sweep_in_one_line_that_says_how_to_go_on(tmp_path, names_file, jobs, workers_only):
    """Ctrl-C reaches every process of the sweep (the terminal signals its group); what is said is the sweep's,
    once: not a trial run's `train --resume`, which would train outside the study, nor a worker's failure (58 §4).
    The same when the signal reaches the workers and not the sweep's own process (sent to them alone; in three
    full-suite runs the group's Ctrl-C did so too, for a reason not found)."""
    if workers_only and not Path("/proc/self/task").is_dir():
        pytest.skip("needs Linux's /proc to find the workers")
    out = tmp_path / "sweep"
    spec = spec_file(tmp_path, trials=2, budget="time_limit = 30")
    process = subprocess.Popen(
        sweep_command(spec, "--out", out, "--data", names_file, "--jobs", jobs),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for_command(process, lambda: sum(stepped(m)() for m in out.glob("trial-*/metrics.jsonl")) >= jobs)  # all train
    if workers_only:
        for pid in children_of(process.pid):  # the workers (multiprocessing's resource tracker ignores SIGINT)
            os.kill(pid, signal.SIGINT)
    else:
        os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    lines = [line for line in stderr.splitlines() if line.startswith("minigpt:")]
    assert process.returncode == 130 and len(lines) == 1, stderr
    assert "run the same command again to go on" in lines[0] and "--resume" not in stderr and "Traceback" not in stderr
    states = {t["state"] for t in trials_of(out)}  # said "fail" once the sweep was run again
    assert "stopped" in states and "fail" not in states, states


@pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="needs Linux's /proc and 2 cores"
)
def test_workers_end_with_a_sweep_killed_with_minus_nine(tmp_path, names_file):
    """kill -9 of the sweep's own process (not its group) leaves no worker taking trials (58 §4)."""
    out = tmp_path / "sweep"
    spec = spec_file(tmp_path, trials=4, budget="time_limit = 30")
    with open(tmp_path / "stderr.txt", "wb") as stderr:
        process = subprocess.Popen(
            sweep_command(spec, "--out", out, "--data", names_file, "--jobs", 2),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    wait_for_command(
        process,
        lambda: len(list(out.glob("trial-*/metrics.jsonl"))) >= 2,  # both workers train
        stderr_file=tmp_path / "stderr.txt",
    )
    workers = children_of(process.pid)
    assert len(workers) >= 2
    process.kill()
    process.wait()
    try:
        deadline = time.monotonic() + 30
        while any(running(pid) for pid in workers):
            assert time.monotonic() < deadline, "a worker outlived the sweep that started it"
            time.sleep(0.1)
    finally:
        if any(running(pid) for pid in workers):
            os.killpg(process.pid, signal.SIGKILL)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # not a zombie
    except OSError:
        return False


@pytest.mark.parametrize(
    "space, says",
    [
        ('"model.n_layr" = {low = 1, high = 2}', "'model.n_layr' is not a recipe key"),
        ('"train.lr" = {low = 0.1, high = 0.01}', "low must be below high"),
        ('"model.n_layer" = {low = 1.5, high = 3}', "whole-number key"),
        ('"model.dropout" = {low = 0.0, high = 1.5}', "model.dropout must be in [0, 1)"),
        ('"model.activation" = {choices = ["relu", "tanh"]}', "model.activation must be one of"),
        ('"train.seed" = {low = 1, high = 5}', "seeds come from [sweep] seeds"),
    ],
)
def test_a_spec_is_checked_before_any_trial_runs(tmp_path, space, says):
    spec = tmp_path / "bad.toml"
    spec.write_text(f'[sweep]\nconfig = "tiny"\ntrials = 2\n[space]\n{space}\n', encoding="utf-8")
    result = run("sweep", spec, "--out", tmp_path / "out")
    assert result.exit_code == 2 and says in result.output and len(result.output.splitlines()) == 1
    assert not (tmp_path / "out" / "study.journal").exists()


DROPOUT = '"model.dropout" = {low = 0.0, high = 0.4}'


@pytest.mark.parametrize(
    "text, says",
    [
        (f"sweep = 5\n[space]\n{DROPOUT}", "sweep is a section, [sweep], not 5"),
        ("space = 5", "space is a section, [space], not 5"),
        ('[space]\n"model.dropout" = {low = {a = {b = {c = 1}}}, high = 0.4}', "low and high are numbers"),
        ('[space]\n"model.dropout" = {low = "a", high = 0.4}', "low and high are numbers"),
        ('[space]\n"train.lr" = {low = 0.001, high = 0.01, log = "yes"}', "log is true or false, got 'yes'"),
        ("x = " + "[" * 50_000 + "]" * 50_000, "nested too deeply"),
        (f"[sweep]\ntrials = {10**29}\n[space]\n{DROPOUT}", "trials must be a whole number from 1 to 100,000"),
        (f"[sweep]\nseeds = {10**29}\n[space]\n{DROPOUT}", "seeds must be a whole number from 1 to 1,000"),
        (f'[sweep]\nname = "{"x" * 100_000}"\n[space]\n{DROPOUT}', "name is at most 200 printable characters"),
        (
            f'[set]\n"model.dropout" = 0.1\n[space]\n{DROPOUT}',
            "'model.dropout' is both fixed in [set] and searched in [space]",
        ),
        (f'[sweep]\nsteps = 100\n[set]\n"train.steps" = 50\n[space]\n{DROPOUT}', "[set] train.steps and [sweep] steps"),
        (
            f'[sweep]\ntime_limit = 9\n[space]\n{DROPOUT}\n"train.steps" = {{low = 10, high = 99}}',
            "[space] train.steps and [sweep] time_limit",
        ),
    ],
)
def test_a_spec_is_read_as_data_within_the_projects_limits(tmp_path, text, says):
    """Every section and value of a spec has its type and range checked (59 §3), and a key given twice,
    where the later one would win without a word, is refused (59 §2)."""
    from minigpt.errors import UsageError
    from minigpt.runs.sweep_spec import read_spec

    spec = tmp_path / "bad.toml"
    spec.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        read_spec(spec)
    assert says in str(refused.value) and len(str(refused.value)) < 300


@pytest.mark.parametrize(
    "section, line, first",
    [
        ("sweep", "", 6),  # the tiny recipe's warm-up is 5 steps: the first prune may come after it
        ("sweep", "prune_after = 40", 41),
        ("set", '"train.warmup_steps" = 20', 21),
        ("space", '"train.warmup_steps" = {low = 10, high = 30}', 31),
    ],
)
def test_no_trial_is_pruned_before_the_warm_up_ends(tmp_path, section, line, first):
    """The median pruner waits for the recipe's warm-up (or prune_after), where the losses say little (58 §4)."""
    from minigpt.runs.study_storage import open_study
    from minigpt.runs.sweep_spec import read_spec

    text = SPEC.format(trials=2, seeds=1, budget="steps = 20").replace(f"[{section}]\n", f"[{section}]\n{line}\n")
    (tmp_path / "s.toml").write_text(text, encoding="utf-8")
    spec = read_spec(tmp_path / "s.toml")
    assert spec.first_prune_step == first
    assert open_study(spec, tmp_path, None).pruner._n_warmup_steps == first


def test_sweep_without_optuna_says_how_to_get_it(tmp_path, monkeypatch):
    from conftest import hide_package

    hide_package(monkeypatch, "optuna")
    result = run("sweep", spec_file(tmp_path), "--out", tmp_path / "out")
    assert result.exit_code == 2 and "pip install 'minigpt-names[sweep]'" in result.output


def test_a_typo_in_the_data_spends_no_trial_and_writes_nothing(tmp_path, names_file):
    out = tmp_path / "out"
    refused = run("sweep", spec_file(tmp_path, trials=1, budget="steps = 3"), "--out", out, "--data", "nmaes.txt")
    assert refused.exit_code == 2 and "names file not found: nmaes.txt" in refused.output
    assert len(refused.output.splitlines()) == 1 and not out.exists()


def test_a_folder_belongs_to_one_study_on_one_data(tmp_path, names_file):
    out, spec = tmp_path / "out", spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    other_storage = run(
        "sweep", spec, "--out", out, "--data", names_file, "--storage", f"sqlite:///{tmp_path / 'x.db'}"
    )
    assert other_storage.exit_code == 2 and "choose another --out" in other_storage.output
    fewer = tmp_path / "fewer.txt"
    fewer.write_text("\n".join(names_file.read_text(encoding="utf-8").split()[:50]) + "\n", encoding="utf-8")
    other_data = run("sweep", spec, "--out", out, "--data", fewer)
    assert other_data.exit_code == 2 and "holds other names" in other_data.output
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # nothing trained over, nothing mixed in


def test_a_database_study_is_found_by_show_and_a_look_writes_nothing(tmp_path, names_file):
    out, spec, url = (
        tmp_path / "out",
        spec_file(tmp_path, trials=1, budget="steps = 3"),
        f"sqlite:///{tmp_path / 'x.db'}",
    )
    assert run("sweep", spec, "--out", out, "--data", names_file, "--storage", url).exit_code == 0
    assert len(trials_of(out)) == 1 and not (out / "study.journal").exists()


def test_two_specs_of_one_name_in_one_storage_are_two_questions_and_the_second_is_refused(tmp_path, names_file):
    """A spec of the same [sweep] name with another recipe, in another folder on the same database, neither runs
    nothing and reports the first study's best as its own, nor leaves a folder behind (59 §2)."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    first = tmp_path / "first.toml"
    first.write_text(
        '[sweep]\nname = "same"\nconfig = "tiny"\ntrials = 1\nsteps = 3\n[space]\n'
        '"train.lr" = {low = 0.003, high = 0.03, log = true}\n',
        encoding="utf-8",
    )
    assert run("sweep", first, "--out", tmp_path / "a", "--data", names_file, "--storage", url).exit_code == 0
    second = tmp_path / "second.toml"
    second.write_text(first.read_text(encoding="utf-8").replace('"tiny"', '"microgpt"'), encoding="utf-8")
    refused = run("sweep", second, "--out", tmp_path / "b", "--data", names_file, "--storage", url)
    assert refused.exit_code == 2 and "study 'same'" in refused.output and "its recipe differ" in refused.output
    assert len(refused.output.splitlines()) == 1 and not (tmp_path / "b").exists()
    fewer = tmp_path / "fewer.txt"
    fewer.write_text("\n".join(names_file.read_text(encoding="utf-8").split()[:50]) + "\n", encoding="utf-8")
    other_data = run("sweep", first, "--out", tmp_path / "c", "--data", fewer, "--storage", url)
    assert other_data.exit_code == 2 and "its names (another data file) differ" in other_data.output


def test_a_journal_cut_mid_record_is_mended_before_anything_is_appended(tmp_path, names_file):
    """A write cut short (a kill, a full disk) leaves a torn last record; the next sweep must not glue its first
    record onto it, after which no open could read the study (59 §1)."""
    import json as json_module

    out, spec = tmp_path / "out", spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    journal = out / "study.journal"
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-37])  # the last record cut, as an interrupted write leaves it
    again = run("sweep", spec, "--out", out, "--data", names_file)
    assert again.exit_code == 0, again.output
    assert "ended in a cut record" in again.stderr
    kept = list(out.glob("study.journal.torn-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == whole[:-37]  # the user's file, kept as it was
    assert all(json_module.loads(line) for line in journal.read_bytes().splitlines())  # whole records only
    assert [t["state"] for t in trials_of(out)].count("complete") == 1


def test_a_journal_damaged_in_its_middle_is_refused_and_left_as_it_is(tmp_path, names_file):
    """Damage with whole records after it is no torn tail: cutting back would drop those records and retrain their
    trials, so a look and a run both refuse it in one line, and the journal stays as it was (83 §17)."""
    out, spec = tmp_path / "out", spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    journal = out / "study.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    damaged = b"".join(lines[:2]) + b"garbage\n" + b"".join(lines[2:])  # a line of garbage, whole records after it
    journal.write_bytes(damaged)
    look = run("sweep", out, "--show")
    assert look.exit_code == 2 and len(look.output.splitlines()) == 1
    again = run("sweep", spec, "--out", out, "--data", names_file)
    assert again.exit_code == 2 and "line 3 is damaged and whole records follow it" in again.output
    assert len(again.output.splitlines()) == 1
    assert journal.read_bytes() == damaged and not list(out.glob("study.journal.torn-*"))


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KB filesystem (tmpfs), where this machine lets the tests mount one: room for one tiny trial."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small filesystem here (the full-disk test needs root)")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.parametrize("room", [8_192, 150_000])  # full at the study's own files, or at a trial's checkpoints
def test_a_full_disk_is_one_line_and_the_study_goes_on_once_there_is_room(small_disk, tmp_path, names_file, room):
    out, spec = small_disk / "out", spec_file(tmp_path, trials=1, budget="steps = 3")
    (small_disk / "filler").write_bytes(bytes(512 * 1024 - room))
    full = run("sweep", spec, "--out", out, "--data", names_file)
    assert full.exit_code in (1, 2) and "No space left on device" in full.output
    assert len(full.output.splitlines()) == 1 and "Traceback" not in full.output
    (small_disk / "filler").unlink()
    again = run("sweep", spec, "--out", out, "--data", names_file)
    assert again.exit_code == 0, again.output
    assert [t["state"] for t in trials_of(out)].count("complete") == 1


def test_a_study_whose_every_trial_fails_uses_no_budget_and_exits_non_zero(tmp_path, names_file):
    spec = tmp_path / "odd.toml"  # each value is fine alone; 18 dimensions do not split into 4 heads
    spec.write_text(
        '[sweep]\nconfig = "tiny"\ntrials = 2\nsteps = 3\n[space]\n"model.n_embd" = {choices = [18]}\n'
        '"model.n_head" = {choices = [4]}\n',
        encoding="utf-8",
    )
    failed = run("sweep", spec, "--out", tmp_path / "out", "--data", names_file)
    assert failed.exit_code == 1 and "every trial failed" in failed.output and "Traceback" not in failed.output
    assert "trial 0 failed (model.n_embd=18  model.n_head=4): " in failed.output
    from minigpt.runs.study_storage import open_study
    from minigpt.runs.sweep import counted
    from minigpt.runs.sweep_spec import read_spec

    assert counted(open_study(read_spec(spec), tmp_path / "out", None))[0] == 0  # the budget is untouched


def test_a_storage_password_is_never_shown(tmp_path):
    from minigpt.errors import RunError, UsageError
    from minigpt.runs.study_folder import masked, without_password
    from minigpt.runs.study_storage import open_study
    from minigpt.runs.sweep_spec import read_spec

    url = "postgresql://minigpt:secretpw@127.0.0.1:1/study"
    assert masked(url) == "postgresql://minigpt:***@127.0.0.1:1/study"
    assert without_password(url) == "postgresql://minigpt@127.0.0.1:1/study"
    with pytest.raises((RunError, UsageError)) as refused:
        open_study(read_spec(spec_file(tmp_path)), tmp_path, url)
    assert "secretpw" not in str(refused.value) and "***" in str(refused.value)


@pytest.mark.parametrize("jobs", [0, -5, 1.5, "2", 10**6])
def test_the_api_refuses_jobs_no_sweep_can_have(tmp_path, jobs):
    from minigpt.errors import UsageError
    from minigpt.runs.sweep import run_sweep

    with pytest.raises(UsageError, match="jobs must be from 1 to"):
        run_sweep(spec_file(tmp_path), tmp_path / "out", jobs=jobs)
    assert not (tmp_path / "out").exists()


def test_many_machines_share_one_study_in_postgresql(tmp_path, names_file):
    """Two workers, as on two machines, join one study through --storage and finish its trials once each."""
    url = os.environ.get("MINIGPT_TEST_POSTGRES")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("MINIGPT_TEST_POSTGRES is not set: .ci/run starts PostgreSQL and sets it")
        pytest.skip("no PostgreSQL server: set MINIGPT_TEST_POSTGRES=postgresql://... (.ci/run starts one)")
    spec = spec_file(tmp_path, trials=4)
    name = f'name = "test-{os.getpid()}-{time.time_ns()}"\n'  # a study of its own in a shared server
    spec.write_text(spec.read_text().replace("[sweep]\n", "[sweep]\n" + name), encoding="utf-8")
    workers = [
        subprocess.Popen(
            sweep_command(spec, "--out", tmp_path / f"machine{i}", "--data", names_file, "--storage", url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2)
    ]
    for w in workers:
        assert w.wait(timeout=300) == 0, w.stderr.read()
    trials = trials_of(tmp_path / "machine1", "--storage", url)
    finished = [t for t in trials if t["state"] in ("complete", "pruned")]
    assert 4 <= len(finished) <= 5  # two workers that start a trial at the same moment may run one more
    ran = [
        (machine, r)
        for machine in ("machine1", "machine2")
        for r in os.listdir(tmp_path / machine)
        if r.startswith("trial-")
    ]
    numbers = [r.split("-")[1] for _, r in ran]
    assert len(numbers) == len(set(numbers)) == len(trials)  # each trial ran once, on one of the machines
    assert {machine for machine, _ in ran} == {"machine1", "machine2"} or len(trials) == 4


def test_a_study_shown_to_a_full_standard_output_is_one_line_and_exit_1(tmp_path, names_file):
    out = tmp_path / "sweep"
    assert (
        run("sweep", spec_file(tmp_path, trials=1, budget="steps = 5"), "--out", out, "--data", names_file).exit_code
        == 0
    )
    with open("/dev/full", "w") as full:
        shown = subprocess.run(
            sweep_command(out, "--show"), stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert shown.returncode == 1 and shown.stderr.startswith("minigpt: error: cannot write to standard output")
    assert len(shown.stderr.splitlines()) == 1


def test_compare_html_puts_the_two_groups_first_runs_on_one_page(four_runs, tmp_path):
    runs = [four_runs[lr, seed] for lr in (0.01, 0.03) for seed in (1, 2)]
    page = tmp_path / "two.html"
    result = run("compare", *runs, "--html", page)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert '"train.lr":[0.01,0.03]' in text  # the recipes' difference, as the page shows it
    assert f"{runs[0]} beside {runs[2]}" in result.output.replace("\n", "")
    # one group (or three) is not a pair: refused in one line, nothing written
    refused = tmp_path / "one.html"
    result = run("compare", runs[0], runs[1], "--html", refused)
    assert result.exit_code == 2 and "1 group;" in result.output and not refused.exists()


def test_compare_refuses_scores_that_do_not_compare(four_runs, tmp_path):
    """One rule decides whether two runs' losses compare: each a masked model's loss over the same tokens of the
    same names. A run whose block size cuts the names elsewhere printed "+0.064 nats" with an interval from
    other tokens, and an unmasked run was compared with no caveat; both are refused, saying why."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    names = tmp_path / "long.txt"
    names.write_text("\n".join(["alexandrina", "maximiliana", "bob", "evangeline", "anna"] * 30) + "\n")
    cut = [
        train(
            tiny_config("train.steps=4", f"model.block_size={b}", "train.auto_scale=false"),
            data_path=names,
            out_dir=tmp_path / f"block{b}",
            quiet=True,
        ).run_dir
        for b in (6, 16)
    ]
    result = run("compare", *cut)
    assert result.exit_code == 2 and "score different tokens of the same names (block sizes 6 and 16" in result.stderr
    unmasked = train(
        tiny_config("train.steps=4", "model.causal=false", "train.seed=3"), out_dir=tmp_path / "nomask", quiet=True
    ).run_dir
    result = run("compare", four_runs[0.01, 1], unmasked)
    assert result.exit_code == 2 and "trained without the causal mask" in result.stderr


def test_a_sweep_refuses_to_search_or_fix_a_model_without_the_mask(tmp_path):
    """A sweep whose space offered model.causal picked false as the best recipe: its loss read the answers."""
    import minigpt
    from minigpt.runs.sweep_spec import read_spec

    for space, fixed in (
        ('"model.causal" = {choices = [true, false]}', ""),
        ('"train.lr" = {low = 1e-3, high = 1e-2}', '"model.causal" = false'),
    ):
        spec = tmp_path / "s.toml"
        spec.write_text(f'[sweep]\nconfig = "tiny"\ntrials = 2\n\n[space]\n{space}\n\n[set]\n{fixed}\n')
        with pytest.raises(minigpt.UsageError, match="a study cannot train without the causal mask"):
            read_spec(spec)


def test_compare_says_when_the_runs_got_unequal_compute_and_compares_them_at_equal_steps(four_runs, tmp_path):
    """Four seeds a side at --time-limit 30 got 594 to 1,065 steps, and compare said nothing of it (its note said
    "within 1,065 steps"); runs whose steps differ by more than a tenth are named, with each run's loss at the last
    step every one of them evaluated."""
    from conftest import tiny_config

    from minigpt.runs.run import train

    longer = train(
        tiny_config("train.steps=80", "train.lr=0.03", "train.seed=3", "train.eval_interval=20"),
        out_dir=tmp_path / "lr0.03-s3",
        quiet=True,
    ).run_dir
    result = run("compare", four_runs[0.01, 1], four_runs[0.01, 2], four_runs[0.03, 1], longer, "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    notes = " ".join(found["notes"])
    assert "the runs took 40 to 80 steps" in notes
    assert "at equal steps (step 40, which every run reached and evaluated)" in found["equal_steps"]
    assert found["equal_steps"] in found["verdicts"]
    runs = {
        steps: (tokens, threads)
        for group in found["groups"]  # each run's compute, as it trained
        for steps, tokens, threads in zip(group["run_steps"], group["run_tokens"], group["run_threads"])
    }
    assert set(runs) == {40, 80} and runs[80][0] > 1.5 * runs[40][0] > 0 and runs[80][1] >= 1
    shown = run("compare", four_runs[0.01, 1], longer)
    assert "80 steps, " in shown.stdout + shown.stderr and " tokens, " in shown.stdout + shown.stderr
    even = run("compare", four_runs[0.01, 1], four_runs[0.03, 1], "--json")
    assert "unequal compute" not in " ".join(json.loads(even.stdout)["notes"])


def test_a_sweep_whose_ranking_follows_compute_says_so_and_shows_each_trials_steps():
    """Time-limited trials of one study got 358 to 672 steps and the best came from a quiet minute: the table
    shows each trial's steps, and a note says when the loss follows them."""
    from types import SimpleNamespace

    from minigpt.runs.tables import compute_note, trial_row

    def trial(number, value, steps):
        return SimpleNamespace(
            number=number,
            value=value,
            params={},
            state=SimpleNamespace(name="COMPLETE"),
            user_attrs={"losses": [value], "steps": steps},
        )

    follows = [trial(0, 2.10, [358]), trial(1, 2.07, [500]), trial(2, 2.06, [672])]
    assert "took 358 to 672 steps and the loss follows them (r = -0.9" in compute_note(follows)
    assert trial_row(follows[2], [])[4] == "672"
    assert compute_note([trial(0, 2.10, [400]), trial(1, 2.07, [401]), trial(2, 2.06, [402])]) is None


def test_a_sweep_on_names_too_few_to_hold_validation_out_is_refused_before_any_trial(tmp_path):
    """A sweep on three names trained its first trial and then failed with a TypeError (no validation loss)."""
    three = tmp_path / "three.txt"
    three.write_text("anna\nbob\ncarl\n")
    spec = spec_file(tmp_path, trials=2, budget="steps = 5")
    result = run("sweep", spec, "--out", tmp_path / "out", "--data", three)
    assert result.exit_code == 2 and "3 names leave none for validation" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "url, secret",
    [
        ("postgresql://minigpt:p/a#b?c@127.0.0.1:1/study", "p/a#b?c"),
        ("postgresql://minigpt@127.0.0.1:1/study?password=qsecret", "qsecret"),
        ("postgresql://minigpt:pw%2Fx@127.0.0.1:1/study", "pw/x"),
        ("postgresql://minigpt:v6secret@[::1/study", "v6secret"),
        ("postgresql://minigpt:pw@127.0.0.1:1/study?sslpassword=sslsecret", "sslsecret"),
        ("postgresql://minigpt@127.0.0.1:1/study?options=-c%20password%3Doptsecret", "optsecret"),
        ("postgresql://tok3nsecret@127.0.0.1:1/study", "tok3nsecret"),
    ],
)
def test_a_storage_password_of_any_spelling_is_never_shown_nor_stored(tmp_path, url, secret):
    """A password holding / # or ?, given as ?password=, or in a URL no parser reads, was printed whole in errors
    and written to a world-readable study.json; the driver's own parser finds it now, and study.json is the
    owner's alone."""
    from urllib.parse import quote

    result = run("sweep", spec_file(tmp_path), "--out", tmp_path / "out", "--storage", url, "--json")
    said = result.stdout + result.stderr
    assert result.exit_code != 0 and secret not in said and quote(secret, safe="") not in said, said
    assert "Error" not in result.stderr.replace("RunError", "")  # one line, not Python's exception names
    record = tmp_path / "out" / "study.json"
    if record.exists():
        assert secret not in record.read_text() and record.stat().st_mode & 0o077 == 0


def test_a_password_is_masked_by_the_urls_parts_never_where_its_letters_appear():
    """A password "p" turned a line into "***ostgresql://u:***@localhost:1/db ... ***ort 1 failed"."""
    from minigpt.runs.study_folder import hide_password, masked

    url = "postgresql://u:p@localhost:1/db"
    said = hide_password(f"connection to {url} at port 1 failed for p", url)
    assert said == "connection to postgresql://u:***@localhost:1/db at port 1 failed for ***"
    assert masked("postgresql://u:pw@h/db?sslpassword=x1&sslmode=require") == (
        "postgresql://u:***@h/db?sslmode=require&sslpassword=***"
    )
    assert masked("postgresql://t0ken@h/db") == "postgresql://***@h/db"


def test_a_sweep_never_writes_into_a_folder_of_the_users_own(tmp_path):
    """sweep --out into a folder holding the user's own best.toml and run folders overwrote both."""
    mine = tmp_path / "mine"
    (mine / "trial-0-seed-1337").mkdir(parents=True)
    (mine / "best.toml").write_text("# my recipe\n")
    result = run("sweep", spec_file(tmp_path), "--out", mine)
    assert result.exit_code == 2 and "holds files of its own and no study" in result.stderr
    assert (mine / "best.toml").read_text() == "# my recipe\n" and sorted(p.name for p in mine.iterdir()) == [
        "best.toml",
        "trial-0-seed-1337",
    ]


def test_a_journal_a_full_disk_cannot_hold_is_a_failure_exit_1(tmp_path, monkeypatch, names_file):
    """A journal that could not be created on a full disk exited 2, as if the user could fix the command."""
    import errno

    import optuna.storages.journal as journal

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal, "JournalFileBackend", full)
    result = run("sweep", spec_file(tmp_path), "--out", tmp_path / "out", "--data", names_file)
    assert result.exit_code == 1 and "cannot write the study's journal" in result.stderr
    assert "No space left on device" in result.stderr


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc to find the workers")
@pytest.mark.parametrize("how", ["SIGTERM to the sweep", "SIGINT to the sweep", "SIGKILL to a worker"])
def test_a_signal_to_the_sweep_or_a_killed_worker_stops_every_worker_at_once(tmp_path, names_file, how):
    """SIGTERM to a --jobs sweep killed it with no message (and resource_tracker's warning); SIGINT to its own
    process alone let every remaining trial run before "interrupted"; a worker killed with SIGKILL left the sweep
    running to its end before one line. The sweep's process now passes a signal on to its workers, and stops
    them when one is killed: no trial after the running ones starts, and one line says what happened."""
    out = tmp_path / "sweep"
    spec = spec_file(tmp_path, trials=6, budget="time_limit = 30")
    process = subprocess.Popen(
        sweep_command(spec, "--out", out, "--data", names_file, "--jobs", 2),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for_command(process, lambda: sum(stepped(m)() for m in out.glob("trial-*/metrics.jsonl")) >= 2)  # both train
    if how == "SIGKILL to a worker":
        workers = [
            pid
            for pid in children_of(process.pid)
            if "resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        ]
        os.kill(workers[0], signal.SIGKILL)
    else:
        os.kill(process.pid, signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    lines = [line for line in stderr.splitlines() if line.startswith("minigpt:")]
    expected = {"SIGTERM to the sweep": 143, "SIGINT to the sweep": 130, "SIGKILL to a worker": 1}[how]
    assert process.returncode == expected and len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    if not how.startswith("SIGKILL"):  # a killed worker leaves its lock for multiprocessing's tracker to name
        assert "resource_tracker" not in stderr, stderr
    assert ("killed by SIGKILL" if how.startswith("SIGKILL") else "run the same command again") in lines[0]
    started = {p.name.split("-seed-")[0] for p in out.glob("trial-*-seed-*")}
    assert len(started) <= 3, started  # the running trials (and at most one taken as the signal came), no more


def test_two_sweeps_of_one_folder_at_once_are_one_at_a_time(tmp_path, names_file):
    """A second sweep of a folder a sweep is running in would propose the same values (their samplers are seeded
    alike) and train every configuration twice: it is refused in one line, naming the first (83 §17)."""
    from minigpt.runs.run_directory import RunLock

    out, spec = tmp_path / "out", spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    before = trials_of(out)
    held = RunLock(out, "another sweep")  # as the first sweep holds it while it runs
    try:
        second = run("sweep", spec, "--out", out, "--data", names_file)
    finally:
        held.release()
    assert second.exit_code == 2 and "is in use by another sweep" in second.output and "--jobs" in second.output
    assert len(second.output.strip().splitlines()) == 1 and trials_of(out) == before
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0  # once the first has finished


def with_more_steps(run_dir, out, steps):
    """A copy of a run whose records go on to `steps` (a run the machine gave more compute, as far as compare
    reads it)."""
    import shutil

    from minigpt.files.run_records import metrics_line

    shutil.copytree(run_dir, out)
    with open(out / "metrics.jsonl", "a", encoding="utf-8") as records:
        records.write(metrics_line(steps, 9.0, train_loss=2.0) + "\n")
    return out


def test_runs_of_one_recipe_with_three_times_the_steps_are_not_pooled_silently(four_runs, tmp_path):
    """The same recipe run beside two CPU hogs took 151-181 steps against 541-664 quiet, and compare pooled all
    six as seeds: runs of one recipe more than 1.5x apart in steps are split by their compute, and said so;
    --pool pools them, said so too."""
    hogged = with_more_steps(four_runs[0.01, 2], tmp_path / "lr0.01-s2", 120)  # 3x the 40 steps of seed 1
    runs = [four_runs[0.01, 1], hogged, four_runs[0.03, 1], four_runs[0.03, 2]]
    found = json.loads(run("compare", *runs, "--json").stdout)
    labels = [group["label"] for group in found["groups"]]
    assert labels == ["lr0.01 (40 steps)", "lr0.01 (120 steps)", "lr0.03"], labels
    notes = " ".join(found["notes"])
    assert "lr0.01's runs took 40 to 120 steps, more than 1.5x apart" in notes and "--pool" in notes
    pooled = json.loads(run("compare", *runs, "--json", "--pool").stdout)
    assert [group["label"] for group in pooled["groups"]] == ["lr0.01", "lr0.03"]
    assert "pooled as seeds of one group" in " ".join(pooled["notes"])
    shown = run("compare", *runs).stdout
    assert "40-120" not in shown and "120 " in shown  # each group's steps in the table


def test_runs_that_never_shared_an_evaluation_get_the_reason_and_time_limited_runs_share_one(four_runs, tmp_path):
    """Hogged runs that never reached an evaluation got a verdict with no equal-steps figure and no word why; a
    time-limited run now also evaluates at steps 64, 128, 256, ..., which any two such runs share."""
    from conftest import tiny_config

    from minigpt.runs.compare import compare
    from minigpt.training import Trainer

    longer = with_more_steps(four_runs[0.03, 1], tmp_path / "lr0.03-s1", 70)
    lines = (longer / "metrics.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"val_loss"' not in line]  # its evaluations, at other steps than seed 1's
    (longer / "metrics.jsonl").write_text("\n".join(kept + ['{"step": 70, "val_loss": 2.9, "elapsed": 9.5}']) + "\n")
    said = compare([four_runs[0.01, 1], longer]).equal_steps
    assert said.startswith("no answer at equal steps: no step was evaluated by every run"), said
    trainer = Trainer.from_names(tiny_config("train.time_limit=30"), ["anna", "bob", "carl"] * 10)
    shared = []
    for trainer.step in range(1, 600):
        shared += [trainer.step] if trainer.shared_step() else []
    assert shared == [64, 128, 256, 512]
    trainer.recipe.time_limit = 0.0  # a run by steps evaluates as its recipe says alone
    assert not trainer.shared_step()


@pytest.mark.parametrize(
    "a, b",
    [
        ([2.16, 2.10, 2.21], [2.12, 2.07, 2.15]),  # the tinkerer's first case: p about 0.3
        ([2.10, 2.18, 2.12], [2.16, 2.13, 2.17]),  # the second: p about 0.57
    ],
)
def test_the_verdicts_interval_and_test_cannot_disagree(a, b):
    """The per-name interval resampled names only: [-0.047, -0.037] beside p = 0.304, and [+0.029, +0.037]
    beside p = 0.572. The verdict's interval is now Welch's own, so it holds 0 exactly when p >= 0.05; the
    names-only interval is shown, labelled, but never in the verdict."""
    import random
    from types import SimpleNamespace

    from minigpt.runs.compare import Group, verdict
    from minigpt.runs.statistics import welch_interval, welch_p

    group = Group("b", [SimpleNamespace(score=score) for score in b])  # runs as far as a verdict reads them
    baseline = Group("a", [SimpleNamespace(score=score) for score in a])
    group.p, group.interval = welch_p(b, a), welch_interval(b, a)
    group.names_only = (-0.047, -0.037)
    said = verdict(group, baseline)
    assert group.p >= 0.05 and group.interval[0] < 0 < group.interval[1]
    assert "within seed noise" in said and "-0.047" not in said and "95% interval [" in said
    rng = random.Random(0)
    for _ in range(300):
        x = [rng.gauss(2.0, 0.05) for _ in range(rng.randint(2, 5))]
        y = [rng.gauss(2.0 + rng.choice([0, 0.05, 0.1]), 0.05) for _ in range(rng.randint(2, 5))]
        low, high = welch_interval(x, y)
        assert (welch_p(x, y) < 0.05) == (not low <= 0 <= high)


def test_a_two_trial_sweep_whose_seeds_took_unequal_steps_gets_the_note():
    from types import SimpleNamespace

    from minigpt.runs.tables import compute_note

    def trial(number, value, steps):
        return SimpleNamespace(
            number=number,
            value=value,
            params={},
            state=SimpleNamespace(name="COMPLETE"),
            user_attrs={"losses": [value] * len(steps), "steps": steps},
        )

    note = compute_note([trial(0, 2.10, [138, 236]), trial(1, 2.05, [190, 200])])
    assert "trial 0's seeds alone took 138-236 steps" in note and "may be the machine's compute" in note


def test_within_seed_noise_with_few_seeds_says_they_cannot_tell_and_how_many_would():
    """+0.175 ± 0.028 over 2 and 3 seeds was called "within seed noise" and no more: the verdict now says so few
    seeds cannot tell a difference of that size, and about how many a side would."""
    from types import SimpleNamespace

    from minigpt.runs.compare import Group, verdict
    from minigpt.runs.statistics import welch_interval, welch_p

    a, b = [2.10, 2.30], [2.35, 2.40, 2.33]
    group, baseline = (
        Group("b", [SimpleNamespace(score=s) for s in b]),
        Group("a", [SimpleNamespace(score=s) for s in a]),
    )
    group.p, group.interval = welch_p(b, a), welch_interval(b, a)
    said = verdict(group, baseline)
    assert group.p >= 0.05 and "within seed noise" in said and "3 and 2 seeds are too few to tell" in said
    needed = int(said.split("about ")[1].split(" seeds")[0])
    assert 3 < needed < 20, said


def test_a_journal_or_a_page_cache_entry_that_is_a_pipe_is_never_waited_on(
    tmp_path, names_file, trained_run, monkeypatch
):
    """A study journal that is a FIFO: sweep waited silently and --show called it "a database"; a page-cache
    entry replaced by a FIFO: inspect-attention --html waited silently."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "study.journal")
    result = run("sweep", spec_file(tmp_path), "--out", out, "--data", names_file)
    assert result.exit_code == 2 and "is a pipe (FIFO)" in result.stderr, result.output
    (out / "sweep.toml").write_text(spec_file(tmp_path).read_text())
    shown = run("sweep", out, "--show")
    assert shown.exit_code == 2 and "is a pipe (FIFO)" in shown.stderr and "database" not in shown.stderr

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.views import page_cache

    cache = tmp_path / "cache"
    monkeypatch.setenv("MINIGPT_CACHE_DIR", str(cache))
    ckpt = load_checkpoint(trained_run[0])
    key = page_cache.cache_key(ckpt, ["emma"], "test")
    cache.mkdir()
    os.mkfifo(cache / f"{key}.json")
    assert page_cache.read_cached(key, {"a": int}) is None  # not read: measured again


def test_a_study_whose_journal_was_emptied_never_trains_into_its_trial_folders(tmp_path, names_file):
    """A study whose journal was emptied by hand ran its trials again into the trial folders it held, rewriting
    their best.pt, exit 0."""
    out = tmp_path / "out"
    spec = spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    best = out / "trial-0-seed-1337" / "best.pt"
    before = best.read_bytes()
    (out / "study.journal").write_text("")
    result = run("sweep", spec, "--out", out, "--data", names_file)
    assert result.exit_code == 2 and "trial-0" in result.stderr and "the study's record" in result.stderr
    assert best.read_bytes() == before


def test_a_journal_deleted_while_the_study_runs_stops_it_in_one_line(tmp_path, names_file):
    """A journal deleted while the study ran: Optuna wrote the next trials' ends into a new file that lacked
    their starts and failed inside itself ("UnboundLocalError: ... 'updated_state'"), exit 1."""
    from minigpt import UsageError, run_sweep

    out = tmp_path / "out"

    def delete_after_the_first_trial(line):
        if line.startswith("trial 0:"):
            (out / "study.journal").unlink()

    with pytest.raises(UsageError, match="study.journal was deleted or replaced while the study ran") as said:
        run_sweep(spec_file(tmp_path, trials=3, budget="steps = 3"), out, names_file, say=delete_after_the_first_trial)
    assert "trial folders kept" in str(said.value) and (out / "trial-0-seed-1337" / "best.pt").is_file()
    assert not (out / "trial-2-seed-1337").exists()
    again = run("sweep", tmp_path / "study.toml", "--out", out, "--data", names_file)
    assert again.exit_code == 2 and "the study's record" in again.stderr


def test_a_signal_heard_as_a_trials_run_ended_stops_the_sweep_after_keeping_that_trial(
    tmp_path, names_file, monkeypatch
):
    """SIGTERM in a run's last step asks it to stop, but the run is complete and ends as usual: the sweep took it
    for a finished trial and went on to the next, and a one-trial sweep exited 0 (a full-suite run on a busy
    machine). Now the trial is kept and the sweep stops there, 143."""
    import minigpt.runs.run as runs_run
    from minigpt import Interrupted, run_sweep

    train = runs_run.train

    def heard_at_the_end(*args, **kwargs):
        result = train(*args, **kwargs)
        result.signal_at_the_end = signal.SIGTERM
        return result

    monkeypatch.setattr(runs_run, "train", heard_at_the_end)
    out = tmp_path / "out"
    with pytest.raises(Interrupted, match="the sweep stopped, its finished trials kept") as said:
        run_sweep(spec_file(tmp_path, trials=3, budget="steps = 3"), out, names_file)
    assert said.value.exit_code == 143 and "runs again" not in str(said.value)
    monkeypatch.setattr(runs_run, "train", train)
    result = run_sweep(tmp_path / "study.toml", out, names_file)  # goes on: trial 0 kept, two more
    assert [t.number for t in result.trials if t.state.name == "COMPLETE"] == [0, 1, 2]


def test_a_journal_record_optuna_does_not_know_is_one_line_naming_the_journal(tmp_path, names_file):
    """A record of an operation Optuna does not know: "cannot open the study's storage None: Should not reach.",
    exit 1, from the sweep and from its look alike."""
    out = tmp_path / "out"
    spec = spec_file(tmp_path, trials=1, budget="steps = 3")
    assert run("sweep", spec, "--out", out, "--data", names_file).exit_code == 0
    with (out / "study.journal").open("a") as journal:
        journal.write('{"op_code": 99, "worker_id": "edited"}\n')
    for result in (run("sweep", out, "--show"), run("sweep", spec, "--out", out, "--data", names_file)):
        assert result.exit_code == 2, result.output
        assert "study.journal holds a record this Optuna" in result.stderr and "None" not in result.stderr


def test_a_trial_value_that_is_not_a_number_is_shown_not_formatted(tmp_path, names_file):
    """A string where a trial's value belongs ended in "ValueError: Unknown format code 'f' for object of type
    'str'" (runs/tables.py)."""
    import re as regex

    out = tmp_path / "out"
    assert (
        run("sweep", spec_file(tmp_path, trials=1, budget="steps = 3"), "--out", out, "--data", names_file).exit_code
        == 0
    )
    journal = out / "study.journal"
    journal.write_text(regex.sub(r'"values": ?\[([0-9.e-]+)\]', r'"values":["\1"]', journal.read_text()))
    shown = run("sweep", out, "--show")
    assert shown.exit_code == 0 and "Error" not in shown.output and "is not a number" in shown.output, shown.output


@pytest.mark.parametrize(
    "url, says",
    [
        ("http://example.com/db", "no database is served by 'http'"),
        ("postgresql://u:pw@h1:5432,h2:5433/db", "several hosts in one URL"),
    ],
)
def test_a_storage_no_database_serves_is_said_in_minigpts_words(url, says, tmp_path, names_file):
    """ "Can't load plugin: sqlalchemy.dialects:http" and "invalid literal for int() with base 10"."""
    result = run("sweep", spec_file(tmp_path), "--out", tmp_path / "out", "--storage", url, "--data", names_file)
    assert result.exit_code == 2 and says in result.stderr and "sqlalchemy" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "pw" not in result.stderr
