"""Sampling speed: names per second with the key/value cache, and without it, side by side.

    python benchmarks/sampling.py [--checkpoint RUN] [--num 10000] [--batch-size 2048]

Without --checkpoint it first trains the default recipe for 30 seconds on --data, so the
names have realistic lengths (an untrained model rambles on to the block size).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from common import finish, median, parser, setup, table

from minigpt.formats.checkpoint import load_checkpoint
from minigpt.sampling import generate


def trained_checkpoint(data: Path) -> Path:
    run_dir = Path(tempfile.mkdtemp()) / "run"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "minigpt",
            "train",
            "--data",
            str(data),
            "--time-limit",
            "30",
            "--out",
            str(run_dir),
            "--quiet",
        ],
        check=True,
    )
    return run_dir


def rate(ckpt, num: int, batch_size: int, use_cache: bool, repeats: int) -> tuple[float, list[str]]:
    times = []
    for seed in range(repeats):
        start = time.perf_counter()
        names = generate(ckpt.model, ckpt.tokenizer, num, seed=seed, batch_size=batch_size, use_cache=use_cache)
        times.append(time.perf_counter() - start)
    return num / median(times), names


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, default=None)
    p.add_argument("--num", type=int, default=10_000)
    p.add_argument("--batch-sizes", default="256,2048,10000")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    results = setup(args)
    path = args.checkpoint or trained_checkpoint(args.data)
    ckpt = load_checkpoint(path)
    rows = []
    with torch.inference_mode():
        for batch_size in map(int, args.batch_sizes.split(",")):
            cached, names = rate(ckpt, args.num, batch_size, True, args.repeats)
            recomputed, same = rate(ckpt, args.num, batch_size, False, args.repeats)
            # the two paths round differently in the last bits, so a draw on a boundary can differ
            agree = sum(a == b for a, b in zip(names, same)) / len(names)
            rows.append(
                {
                    "batch_size": batch_size,
                    "cached": round(cached),
                    "recomputed": round(recomputed),
                    "speedup": f"{cached / recomputed:.1f}x",
                    "same_names": f"{agree:.1%}",
                    "mean_length": round(sum(map(len, names)) / len(names), 2),
                }
            )
            print(table(rows[-1:], COLUMNS).splitlines()[-1], flush=True)
    results.update(checkpoint=str(path), num=args.num, rows=rows)
    print()
    print(table(rows, COLUMNS))
    finish(results, args.out)


COLUMNS = [
    ("batch_size", "batch"),
    ("cached", "names/s, KV cache"),
    ("recomputed", "names/s, recomputing"),
    ("speedup", "speed-up"),
    ("same_names", "same names"),
    ("mean_length", "mean length"),
]

if __name__ == "__main__":
    main()
