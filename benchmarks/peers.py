"""minigpt against nanoGPT (and makemore) on the same model, side by side in one run, at matched tokens a step;
with --quality SECONDS, which of the two trains the better model of names in that time (peer_quality.py).

    python benchmarks/peers.py --nanogpt NANOGPT_DIR [--makemore MAKEMORE_DIR] --data names.txt
    python benchmarks/peers.py --quality 60 --nanogpt NANOGPT_DIR --data names.txt

NANOGPT_DIR is a checkout of karpathy/nanoGPT the user fetched (likewise makemore's); nothing
of either is copied: their own train.py / makemore.py run from where they are, on files this
script writes to a temporary folder.

The model is makemore's size (configs/makemore.toml: 4 layers, 4 heads, 64 dimensions, block
16), float32, no compile, no dropout, no gradient clipping, on the training names of a seeded
split (1,000 held out). nanoGPT reads them as one character stream (names joined by newlines,
the newline a character, as its shakespeare_char does) in rows of 16 positions, every position
a predicted token: batch 32 is 512 tokens a step, batch 256 is 4,096. minigpt trains on names,
so its batch is the number of names that holds as many predicted tokens (each name's
characters and its end). makemore pads every name to the longest name of the file.

Every peer runs as its own process with this one's torch threads (OMP_NUM_THREADS, --threads 0
included), one after another and again (--repeats, 3: the median is a measured run, and the
spread of the repeats is in the table), and is timed by its own per-step clock after its first
steps (nanoGPT's "iter N: ... time" lines, makemore's "step time", minigpt's train_step over the
same stretch): tokens per second is the predicted tokens of the timed steps over their summed
time. The clocks cover the same work: nanoGPT's covers a whole iteration (the step, fetching its
next batch, reading the loss and printing its line), minigpt's building its batch and the step;
the line and the loss read on a CPU take microseconds against steps of milliseconds.

A busy machine is not a result: the load at the start, the matmul peak before and after, and the
repeats' spread are checked, and the figures are marked NOT TO BE TRUSTED, with the reason, when
the machine was busy, the peak moved by more than 15% or fell that far below --usual-peak, or the
repeats of a row lie more than 15% apart. The
float32 matrix-multiply peak is measured in the same run, and each rate is given as a fraction
of it, counted as 6 FLOPs per parameter in a matrix multiply and predicted token (attention's
own small products left out, alike for every peer).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from common import finish, machine_load, matmul_peak, median, parser, say_trust, setup, spread, table, untrusted
from peer_quality import race

from minigpt.data import split_names
from minigpt.files.names_file import read_names

HERE = Path(__file__).resolve().parent
BLOCK = 16  # makemore.toml's block size; nanoGPT's row length
SIZE = {"n_layer": 4, "n_head": 4, "n_embd": 64}
# in the blocks' matrix multiplies: attention's four n_embd x n_embd and the MLP's two n_embd x 4 n_embd, each layer
MATRIX_PARAMS = SIZE["n_layer"] * 12 * SIZE["n_embd"] ** 2


def nanogpt_data(folder: Path, train: list[str], val: list[str]) -> int:
    """train.bin, val.bin and meta.pkl as nanoGPT's shakespeare_char prepares them: one id per character."""
    import numpy as np

    text, val_text = "\n".join(train) + "\n", "\n".join(val) + "\n"
    chars = sorted(set(text + val_text))
    stoi = {c: i for i, c in enumerate(chars)}
    for name, part in (("train.bin", text), ("val.bin", val_text)):
        np.array([stoi[c] for c in part], dtype=np.uint16).tofile(folder / name)
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)
    return len(chars)


def run_nanogpt(checkout: Path, folder: Path, rows: int, steps: int, skip: int) -> float:
    args = [
        f"--dataset={folder}",
        f"--out_dir={folder / 'out'}",
        "--device=cpu",
        "--dtype=float32",
        "--compile=False",
        f"--batch_size={rows}",
        f"--block_size={BLOCK}",
        "--gradient_accumulation_steps=1",
        "--dropout=0.0",
        "--bias=False",
        "--grad_clip=0.0",
        f"--max_iters={steps}",
        "--eval_interval=1000000",
        "--eval_iters=1",
        "--log_interval=1",
        "--always_save_checkpoint=False",
        "--learning_rate=5e-4",
        "--decay_lr=False",
        *[f"--{k}={v}" for k, v in SIZE.items()],
    ]
    out = subprocess.run([sys.executable, "train.py", *args], cwd=checkout, capture_output=True, text=True)
    times = [float(t) for t in re.findall(r"^iter \d+: loss [\d.]+, time ([\d.]+)ms", out.stdout, re.M)]
    if len(times) <= skip:
        raise SystemExit(f"nanoGPT did not run: {out.stderr.strip().splitlines()[-1:] or out.stdout[-300:]}")
    timed = times[skip:]
    return rows * BLOCK * len(timed) / (sum(timed) / 1000)


def run_makemore(
    checkout: Path, names_file: Path, batch: int, steps: int, skip: int, folder: Path, predicted: float
) -> float:
    """makemore's transformer at this batch, in tokens/s (`predicted`: a name's predicted tokens, on average).
    makemore.py needs tensorboard installed (it writes its logs with it)."""
    args = [
        "--input-file",
        str(names_file),
        "--work-dir",
        str(folder / "makemore"),
        "--type",
        "transformer",
        "--n-layer",
        "4",
        "--n-head",
        "4",
        "--n-embd",
        "64",
        "--batch-size",
        str(batch),
        "--max-steps",
        str(steps),
        "--device",
        "cpu",
        "--learning-rate",
        "5e-4",
    ]
    out = subprocess.run([sys.executable, str(checkout / "makemore.py"), *args], capture_output=True, text=True)
    times = [float(t) for t in re.findall(r"step time ([\d.]+)ms", out.stdout)]
    if len(times) <= skip:
        raise SystemExit(f"makemore did not run: {out.stderr.strip()[-500:] or out.stdout[-300:]}")
    # makemore pads each name to the longest of the file; its tokens are counted as names' tokens
    timed = times[skip:]
    return batch * predicted * len(timed) / (sum(timed) / 1000)


def run_minigpt(train_file: Path, names: int, steps: int, skip: int, overrides: list[str]) -> float:
    code = f"""
import json, time, torch
from minigpt.formats.recipes import load_config
from minigpt.data import Tokenizer
from minigpt.files.names_file import read_names
from minigpt.machine.threads import keep_freed_memory
from minigpt.training import Trainer
keep_freed_memory()
names = read_names({str(train_file)!r})
tokenizer = Tokenizer.from_names(names)
config = load_config("makemore", ["train.batch_size={names}", "train.device='cpu'", *{overrides!r}])
config.model.vocab_size = tokenizer.vocab_size
trainer = Trainer.from_names(config, names, [], tokenizer)
for _ in range({skip}):
    trainer.train_step()
tokens, seconds = trainer.tokens, trainer.seconds
for _ in range({steps - skip}):
    trainer.train_step()
print(json.dumps((trainer.tokens - tokens) / (trainer.seconds - seconds)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"minigpt did not run: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--nanogpt", type=Path, required=True, help="a checkout of karpathy/nanoGPT")
    p.add_argument("--makemore", type=Path, default=None, help="a checkout of karpathy/makemore [default: left out]")
    p.add_argument("--tokens", default="512,4096", help="predicted tokens a step, matched [default: 512,4096]")
    p.add_argument("--makemore-batches", default="32,256,1024", help="makemore's batch sizes [default: 32,256,1024]")
    p.add_argument("--steps", type=int, default=300, help="steps a run, the first --skip untimed [default: 300]")
    p.add_argument("--skip", type=int, default=30)
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each, alternated; the median and the spread "
        "are reported (an odd count: the median is a measured run)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="a recipe override for minigpt alone, as minigpt train --set (train.precision=bfloat16: "
        "nanoGPT computes in float32 on a CPU whatever its dtype)",
    )
    p.add_argument(
        "--quality",
        type=float,
        default=None,
        metavar="SECONDS",
        help="compare the models trained in SECONDS instead of tokens a second (peer_quality.py)",
    )
    p.add_argument(
        "--lrs",
        default="1e-3,3e-3,1e-2",
        help="with --quality: nanoGPT's learning rates, widened "
        "past an edge where its best sits [default: 1e-3,3e-3,1e-2]",
    )
    p.add_argument("--dropouts", default="0,0.1", help="with --quality: nanoGPT's dropouts [default: 0,0.1]")
    p.add_argument("--seeds", type=int, default=1, help="with --quality: minigpt's seeds at each budget [default: 1]")
    args = p.parse_args()
    load = machine_load()
    info = setup(args)
    if args.quality:  # each run takes the threads a plain run would as its turn begins
        train, val = split_names(read_names(args.data), 0.1, 1000, 1337)
        finish({**info, **race(args, train, val, nanogpt_data)}, args.out)
        return
    os.environ["OMP_NUM_THREADS"] = str(torch.get_num_threads())  # the peers' processes get this one's threads
    peak = matmul_peak()
    print(f"float32 matmul peak: {peak['gflops']} GFLOP/s; {torch.get_num_threads()} threads each")
    per_gflop = 6 * MATRIX_PARAMS / 1e9
    names = read_names(args.data)
    train, val = split_names(names, 0.1, 1000, 1337)
    predicted = sum(len(n) + 1 for n in train) / len(train)
    rows, spreads = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train_file = folder / "train.txt"
        train_file.write_text("\n".join(train) + "\n")
        nanogpt_data(folder, train, val)
        for tokens in map(int, args.tokens.split(",")):
            batch_rows, batch_names = tokens // BLOCK, round(tokens / predicted)
            runs = {"nanogpt": [], "minigpt": []}
            for _ in range(args.repeats):
                runs["nanogpt"].append(run_nanogpt(args.nanogpt, folder, batch_rows, args.steps, args.skip))
                runs["minigpt"].append(run_minigpt(train_file, batch_names, args.steps, args.skip, args.overrides))
            nano_spread, mini_spread = spread(runs["nanogpt"]), spread(runs["minigpt"])
            spreads[f"nanogpt at {tokens} tokens"], spreads[f"minigpt at {tokens} tokens"] = nano_spread, mini_spread
            nano, mini = nano_spread["median"], mini_spread["median"]
            rows.append(
                {
                    "tokens": tokens,
                    "nanogpt_batch": batch_rows,
                    "minigpt_batch": batch_names,
                    "nanogpt": round(nano),
                    "minigpt": round(mini),
                    "ratio": round(mini / nano, 2),
                    "nanogpt_spread": f"{nano_spread['spread']:.0%}",
                    "minigpt_spread": f"{mini_spread['spread']:.0%}",
                    "nanogpt_peak": f"{nano * per_gflop / peak['gflops']:.0%}",
                    "minigpt_peak": f"{mini * per_gflop / peak['gflops']:.0%}",
                    "runs": runs,
                }
            )
            print(table(rows[-1:], COLUMNS).splitlines()[-1], flush=True)
        makemore = []
        if args.makemore:
            for batch in map(int, args.makemore_batches.split(",")):
                # makemore prints its step time every 10 steps: the first three printed are left out
                rates = [
                    run_makemore(args.makemore, train_file, batch, args.steps, 3, folder, predicted)
                    for _ in range(args.repeats)
                ]
                makemore.append(
                    {
                        "batch": batch,
                        "tokens_per_sec": round(median(rates)),
                        "names_share": f"{predicted / (max(map(len, train)) + 1):.0%}",
                    }
                )
                print(f"makemore batch {batch}: {makemore[-1]['tokens_per_sec']:,} tokens/s", flush=True)
    peak_after = matmul_peak()
    print()
    print(table(rows, COLUMNS))
    reasons = untrusted(peak, peak_after, spreads, load, args.usual_peak)
    say_trust(reasons)
    if makemore:
        best = max(makemore, key=lambda r: r["tokens_per_sec"])
        fastest = max(r["minigpt"] for r in rows)
        print(
            f"makemore at its best batch ({best['batch']}): {best['tokens_per_sec']:,} tokens/s; "
            f"minigpt's fastest above is {fastest / best['tokens_per_sec']:.1f}x that"
        )
    finish(
        {
            **info,
            "overrides": args.overrides,
            "matmul_peak": peak,
            "matmul_peak_after": peak_after,
            "load_at_start": load,
            "untrusted": reasons,
            "predicted_per_name": predicted,
            "rows": rows,
            "makemore": makemore,
        },
        args.out,
    )


COLUMNS = [
    ("tokens", "tokens a step"),
    ("nanogpt_batch", "nanoGPT rows"),
    ("minigpt_batch", "minigpt names"),
    ("nanogpt", "nanoGPT tok/s"),
    ("nanogpt_spread", "spread"),
    ("minigpt", "minigpt tok/s"),
    ("minigpt_spread", "spread"),
    ("ratio", "ratio"),
    ("nanogpt_peak", "nanoGPT of peak"),
    ("minigpt_peak", "minigpt of peak"),
]

if __name__ == "__main__":
    main()
