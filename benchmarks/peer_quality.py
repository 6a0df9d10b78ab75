"""The better model of names in the time there is: minigpt against nanoGPT at one wall-clock budget.

    python benchmarks/peers.py --quality 60 --nanogpt NANOGPT_DIR --data names.txt

nanoGPT's own train.py (a checkout the user fetched; nothing of it is copied) trains on the training names
as one character stream (names joined by newlines, as its shakespeare_char does), the same model size as
minigpt's default (4 layers, 4 heads, 64 dimensions, block 16), float32, no compile, batch 64, its cosine
schedule fitted to the budget: a calibration run measures its time an iteration and max_iters is the budget
over it, and a run whose clock misses the budget by more than a tenth runs again refitted (twice at most;
the machine's speed can move by half from one run to the next). It runs at every learning rate and dropout
of a grid, and the grid grows past an edge where the best sits on one, so its best is not an artefact of
where the grid stopped. Its final checkpoint is scored per name on the held-out names exactly as minigpt
scores them: the boundary (its newline), the name, the boundary; every character and the end predicted, the
loss a mean over those tokens.

minigpt's default recipe trains with `--time-limit` at the budget, a quarter and an eighth of it, on the same
training names, validated on the same held-out names. The figure compared is each run's loss at its end (its
last evaluation), not its best: nanoGPT's final checkpoint is not chosen by the held-out names either, so
neither side picks its model by the names that score it. minigpt's best is shown beside it.

The clocks cover the same work. nanoGPT's is the sum of its iterations' times as it prints them (each covers
the step, fetching the next batch, reading the loss, printing the line, and, in its first and last, its
evaluation and checkpoint), which leaves out its start-up; minigpt's is its run's clock (steps, evaluations
and checkpoints, not the start-up). Each side runs alone on the machine, with the threads a plain run would
take as its turn begins (minigpt train's choice: a torch thread per free core), recorded with each run.

The two sides take turns: minigpt's runs are spread among nanoGPT's (seed by seed, each seed's whole,
quarter and eighth of the budget together), so that both see the same minutes of a machine whose speed can halve and
recover within them, rather than one side a slow stretch and the other a fast one.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

from common import machine_load, matmul_peak, say_trust, spread, table, untrusted

from minigpt.machine.threads import choose_threads

BATCH = 64  # nanoGPT's rows a step: 1,024 characters, about the names minigpt's default reads a step
CALIBRATION = 60  # iterations of the calibration run; the first SETTLE are not timed
SETTLE = 10
BUDGET_MISS = 0.10  # a nanoGPT run whose clock ends further than this share from the budget missed it:
REFITS = 2  # it runs again, its iterations refitted, at most this many times; then the race is untrusted


def nanogpt_args(folder: Path, out: Path, iters: int, lr: float, dropout: float) -> list[str]:
    return [
        f"--dataset={folder}",
        f"--out_dir={out}",
        "--device=cpu",
        "--dtype=float32",
        "--compile=False",
        f"--batch_size={BATCH}",
        "--block_size=16",
        "--gradient_accumulation_steps=1",
        f"--dropout={dropout}",
        "--n_layer=4",
        "--n_head=4",
        "--n_embd=64",
        "--bias=False",
        f"--max_iters={iters}",
        f"--lr_decay_iters={iters}",
        f"--warmup_iters={max(10, iters // 50)}",
        f"--learning_rate={lr}",
        f"--min_lr={lr / 10}",
        "--beta2=0.99",
        f"--eval_interval={iters}",
        "--eval_iters=5",
        "--log_interval=1",
        "--always_save_checkpoint=True",
    ]


def plain_threads() -> dict:
    """The environment of a run that takes the threads a plain run would take now: on a busy machine one
    core's worth, where a fixed count would have both sides wait on a core another process holds."""
    threads = choose_threads()[0]
    return {**os.environ, "OMP_NUM_THREADS": str(threads)}


def run_nanogpt(checkout: Path, args: list[str]) -> list[float]:
    """nanoGPT's train.py; the seconds of each of its iterations."""
    out = subprocess.run(
        [sys.executable, "train.py", *args], cwd=checkout, capture_output=True, text=True, env=plain_threads()
    )
    times = [float(t) / 1000 for t in re.findall(r"^iter \d+: loss [\d.]+, time ([\d.]+)ms", out.stdout, re.M)]
    if out.returncode or not times:
        raise SystemExit(f"nanoGPT did not run: {out.stderr.strip().splitlines()[-1:] or out.stdout[-300:]}")
    return times


def fitted_iters(checkout: Path, folder: Path, seconds: float, dropout: float) -> tuple[int, float]:
    """max_iters for a budget: a short run's median time an iteration (after it settles) into the budget."""
    times = run_nanogpt(checkout, nanogpt_args(folder, folder / "calibration", CALIBRATION, 1e-3, dropout))
    per_iter = statistics.median(times[SETTLE:])
    return max(20, int(seconds / per_iter)), per_iter


SCORE = """
import pickle, sys, torch, torch.nn.functional as F
sys.path.insert(0, {checkout!r})
from model import GPT, GPTConfig
saved = torch.load({ckpt!r}, map_location="cpu", weights_only=False)
model = GPT(GPTConfig(**saved["model_args"]))
model.load_state_dict({{k.removeprefix("_orig_mod."): v for k, v in saved["model"].items()}})
model.eval()
stoi = pickle.load(open({meta!r}, "rb"))["stoi"]
names = open({val!r}, encoding="utf-8").read().split("\\n")[:-1]
total, tokens = 0.0, 0
with torch.no_grad():
    for start in range(0, len(names), 256):
        chunk = names[start : start + 256]
        ids = [[stoi["\\n"]] + [stoi[c] for c in name] + [stoi["\\n"]] for name in chunk]
        width = max(map(len, ids)) - 1
        x = torch.tensor([row[:-1] + [0] * (width + 1 - len(row)) for row in ids])
        y = torch.tensor([row[1:] + [-1] * (width + 1 - len(row)) for row in ids])
        logits, _ = model(x, y)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-1, reduction="sum").item()
        tokens += int((y >= 0).sum())
print(total / tokens)
"""


def score_nanogpt(checkout: Path, out: Path, folder: Path) -> float:
    """The final checkpoint's mean loss per predicted token on the held-out names, as minigpt scores them."""
    code = SCORE.format(
        checkout=str(checkout), ckpt=str(out / "ckpt.pt"), meta=str(folder / "meta.pkl"), val=str(folder / "val.txt")
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"scoring nanoGPT failed: {done.stderr.strip().splitlines()[-1:]}")
    return float(done.stdout.strip().splitlines()[-1])  # after the model's own line of its size


def refitted(iters: int, took: float, seconds: float) -> int:
    """The next run's max_iters from the last one's clock: a short calibration misjudges a long run by 10% or
    more here (its first iterations are slower), so every run corrects the next."""
    return max(20, round(iters * seconds / took))


def missed(took: float, seconds: float) -> bool:
    return abs(took - seconds) > BUDGET_MISS * seconds


def nanogpt_at(checkout: Path, folder: Path, seconds: float, iters: int, lr: float, dropout: float) -> dict:
    """nanoGPT at one (lr, dropout), run again with its iterations refitted while its clock misses the budget
    (the machine's speed can move by half between one run and the next): its schedule is fixed by
    max_iters, where minigpt's follows the clock."""
    out = folder / f"nanogpt-lr{lr:g}-dropout{dropout:g}"
    for attempt in range(1 + REFITS):
        took = sum(run_nanogpt(checkout, nanogpt_args(folder, out, iters, lr, dropout)))
        again = refitted(iters, took, seconds)
        if not missed(took, seconds) or attempt == REFITS or again == iters:  # the same run again tells nothing
            break
        print(
            f"nanoGPT  lr {lr:g}, dropout {dropout:g}: {iters:,} steps took {took:.1f} s of {seconds:g}; "
            f"again with {again:,}",
            flush=True,
        )
        iters = again
    return {
        "who": "nanoGPT",
        "budget": seconds,
        "lr": float(f"{lr:.3g}"),
        "dropout": dropout,
        "steps": iters,
        "seconds": round(took, 1),
        "loss": round(score_nanogpt(checkout, out, folder), 4),
    }


def grid(
    checkout: Path, folder: Path, seconds: float, lrs: list[float], dropouts: list[float], between=lambda: None
) -> list[dict]:
    """nanoGPT at every (lr, dropout); past an edge of the lrs, by factors of 3, while the best sits there.
    `between()` runs after each of its runs: the other side's turn."""
    results = []
    for dropout in dropouts:
        iters, per_iter = fitted_iters(checkout, folder, seconds, dropout)
        print(
            f"nanoGPT, dropout {dropout:g}: {per_iter * 1000:.1f} ms an iteration, so {iters:,} iterations", flush=True
        )
        tried, pending = {}, list(lrs)
        while pending:
            lr = pending.pop(0)
            tried[lr] = nanogpt_at(checkout, folder, seconds, iters, lr, dropout)
            print(row_line(tried[lr]) + ("" if lr in lrs else "  (past the grid's edge)"), flush=True)
            between()
            iters = refitted(tried[lr]["steps"], tried[lr]["seconds"], seconds)
            best = min(tried, key=lambda lr: tried[lr]["loss"])
            if not pending and len(tried) < len(lrs) + 3 and best in (min(tried), max(tried)):  # 3 past an edge
                pending.append(best * 3 if best == max(tried) else best / 3)
        results += [tried[lr] for lr in sorted(tried)]
    return results


SHARES = (1, 0.25, 0.125)  # of the budget minigpt trains for: the race asks what an eighth of it does

FAIR = (
    "fair to both: the same training names, the same 1,000 held-out names, the same model size and threads; the "
    "held-out names choose neither side's weights nor when it stops (minigpt: train.patience 0, its last weights; "
    "nanoGPT: its final checkpoint); nanoGPT's learning rate is its best on a grid grown until the best is inside"
)


def minigpt_at(folder: Path, seconds: float, seed: int, budget: float) -> dict:
    out = folder / f"minigpt-{seconds:g}s-seed{seed}"
    command = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "--data",
        str(folder / "train.txt"),
        "--val-data",
        str(folder / "val.txt"),
        "--time-limit",
        str(seconds),
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--quiet",
        "--no-page",
        # the held-out names score the run and choose nothing of it: no stopping on them, its last weights
        "--set",
        "train.patience=0",
        "--set",
        "train.keep_best=false",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=plain_threads())
    if done.returncode:
        raise SystemExit(f"minigpt did not run: {done.stderr.strip().splitlines()[-1:]}")
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evaluations = [r for r in records if r.get("val_loss") is not None]
    threads = next((r["threads"] for r in records if "threads" in r), None)
    return {
        "who": "minigpt",
        "budget": seconds,
        "seed": seed,
        "steps": records[-1]["step"],
        "threads": threads,
        "seconds": round(records[-1]["elapsed"], 1),
        "loss": round(evaluations[-1]["val_loss"], 4),
        "best": round(min(r["val_loss"] for r in evaluations), 4),
        "share": f"{seconds / budget:g}",
    }


def row_line(row: dict) -> str:
    if row["who"] == "nanoGPT":
        return (
            f"nanoGPT  lr {row['lr']:g}, dropout {row['dropout']:g}: {row['loss']:.4f} after {row['steps']:,} "
            f"steps in {row['seconds']} s"
        )
    return (
        f"minigpt  {row['budget']:g} s, seed {row['seed']}: {row['loss']:.4f} at its end (best {row['best']:.4f})"
        f" after {row['steps']:,} steps in {row['seconds']} s"
    )


def write_data(folder: Path, train: list[str], val: list[str], nanogpt_data) -> None:
    (folder / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    (folder / "val.txt").write_text("\n".join(val) + "\n", encoding="utf-8")
    nanogpt_data(folder, train, val)


def race(args, train: list[str], val: list[str], nanogpt_data) -> dict:
    """The whole comparison: nanoGPT's grid at the budget, minigpt at the budget, a quarter and an eighth."""
    seconds, load, peak = args.quality, machine_load(), matmul_peak()
    print(f"float32 matmul peak: {peak['gflops']} GFLOP/s; load {load['load_1min']} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_data(folder, train, val, nanogpt_data)
        lrs, dropouts = [float(x) for x in args.lrs.split(",")], [float(x) for x in args.dropouts.split(",")]
        turns = deque((seconds * share, seed) for seed in range(1, args.seeds + 1) for share in SHARES)
        per_turn = math.ceil(len(turns) / (len(lrs) * len(dropouts)))  # the grid's runs, before any past an edge
        mini = []

        def minigpt_turn(runs: int = per_turn):
            for _ in range(min(runs, len(turns))):
                mini.append(minigpt_at(folder, *turns.popleft(), budget=seconds))
                print(row_line(mini[-1]), flush=True)

        nano = grid(args.nanogpt, folder, seconds, lrs, dropouts, between=minigpt_turn)
        minigpt_turn(len(turns))  # none left (per_turn rounds up), unless the grid ran fewer runs than planned
    peak_after = matmul_peak()
    best = min(nano, key=lambda r: r["loss"])
    summary = summarize(mini, best, seconds)
    print("\n" + table(nano, NANO_COLUMNS) + "\n\n" + table(summary, MINI_COLUMNS) + "\n")
    print(FAIR)
    eighth = next(r for r in summary if r["share"] == "0.125")
    # below nanoGPT's best by more than its own seeds' spread (their highest less their lowest): a margin that
    # one seed's luck could make is not a lead
    seeds_apart = eighth["spread"]["high"] - eighth["spread"]["low"] if eighth["spread"] else 0.0
    margin = best["loss"] - eighth["loss"]
    met = margin > seeds_apart
    print(
        f"minigpt in an eighth of the budget ({seconds / 8:g} s): {eighth['loss']:.4f}; nanoGPT's best in the "
        f"whole budget ({seconds:g} s, lr {best['lr']:g}, dropout {best['dropout']:g}): {best['loss']:.4f}; "
        f"{abs(margin):.4f} {'below' if margin > 0 else 'above'} it, its seeds {seeds_apart:.4f} apart: "
        f"{'met' if met else 'NOT met'}"
    )
    spreads = {f"minigpt's seeds at {r['budget']:g} s": r["spread"] for r in summary if r["spread"]}
    spreads |= speed_spreads(nano, mini)
    reasons = untrusted(peak, peak_after, spreads, load, args.usual_peak)
    reasons += [
        f"nanoGPT's run at lr {r['lr']:g}, dropout {r['dropout']:g} took {r['seconds']} s of a {seconds:g} s budget"
        for r in nano
        if missed(r["seconds"], seconds)
    ]
    reasons += [
        f"minigpt's {r['budget']:g}-s run (seed {r['seed']}) took {r['seconds']} s"
        for r in mini
        if missed(r["seconds"], r["budget"])
    ]
    say_trust(reasons)
    return {
        "budget": seconds,
        "nanogpt": nano,
        "minigpt": mini,
        "summary": summary,
        "met": met,
        "matmul_peak": peak,
        "matmul_peak_after": peak_after,
        "load_at_start": load,
        "untrusted": reasons,
    }


def speed_spreads(nano: list[dict], mini: list[dict]) -> dict[str, dict]:
    """How far the machine's speed moved during the race, as each side saw it: nanoGPT's time a step
    over its runs (the learning rate does not change a step's work) and minigpt's steps over the seeds of
    one budget. Where they are far apart the two sides did not race on the same machine."""
    found = {}
    if len(nano) > 1:
        found["nanoGPT's milliseconds a step"] = spread([1000 * r["seconds"] / r["steps"] for r in nano])
    for runs in by_share(mini):
        if len(runs) > 1:
            found[f"minigpt's steps at {runs[0]['budget']:g} s"] = spread([r["steps"] for r in runs])
    return found


def by_share(mini: list[dict]) -> list[list[dict]]:
    """minigpt's runs grouped by their share of the budget: the whole, a quarter, an eighth."""
    return [[r for r in mini if r["share"] == f"{share:g}"] for share in SHARES]


def summarize(mini: list[dict], best: dict, seconds: float) -> list[dict]:
    """minigpt's seeds at each share of the budget: the mean end loss, its spread, against nanoGPT's best."""
    rows = []
    for runs in by_share(mini):
        share, losses = runs[0]["share"], [r["loss"] for r in runs]
        loss = statistics.mean(losses)
        rows.append(
            {
                "share": share,
                "budget": seconds * float(share),
                "seeds": len(runs),
                "loss": round(loss, 4),
                "sd": f"{statistics.stdev(losses):.4f}" if len(runs) > 1 else "",
                "best": round(statistics.mean(r["best"] for r in runs), 4),
                "steps": round(statistics.mean(r["steps"] for r in runs)),
                "against": f"{loss - best['loss']:+.4f}",
                "spread": spread(losses) if len(runs) > 1 else None,
            }
        )
    return rows


NANO_COLUMNS = [
    ("lr", "nanoGPT lr"),
    ("dropout", "dropout"),
    ("steps", "steps"),
    ("seconds", "seconds"),
    ("loss", "held-out loss"),
]
MINI_COLUMNS = [
    ("budget", "minigpt seconds"),
    ("seeds", "seeds"),
    ("steps", "steps"),
    ("loss", "loss at its end"),
    ("sd", "sd"),
    ("best", "its best"),
    ("against", "against nanoGPT's best"),
]
