"""Large corpora: how long until training starts, peak memory, checkpoint size and speed.

    python benchmarks/scale.py --names 1000000 --source names.txt
    python benchmarks/scale.py --names 10000000 --source names.txt

Makes a synthetic corpus of N names (names from --source with seeded random suffixes of
up to four letters), then runs `minigpt train` on it for a few steps, evaluating and
saving at the end, and reports:

- start: seconds from the command until its first training step (when the run writes
  metrics.jsonl, which it opens just before its loop);
- peak memory of the training process (its maximum resident set);
- the size of a checkpoint (last.pt), and tokens/s over the steps;
- total: the whole command's wall-clock time, evaluation and saving included.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import finish, parser, setup, table


def make_corpus(source: Path, n: int, out: Path, seed: int = 0) -> Path:
    base = [line.strip() for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    letters = string.ascii_lowercase
    with out.open("w", encoding="utf-8") as f:
        for start in range(0, n, 100_000):
            chunk = []
            for _ in range(min(100_000, n - start)):
                suffix = "".join(rng.choice(letters) for _ in range(rng.randint(0, 4)))
                chunk.append(rng.choice(base) + suffix)
            f.write("\n".join(chunk) + "\n")
    return out


def run_training(corpus: Path, run_dir: Path, steps: int, extra: list[str]) -> dict:
    shutil.rmtree(run_dir, ignore_errors=True)  # a metrics.jsonl left by an earlier run would stop the clock at once
    command = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "--data",
        str(corpus),
        "--out",
        str(run_dir),
        "--steps",
        str(steps),
        "--set",
        f"train.eval_interval={steps}",
        "--json",
        "--quiet",
        "--overwrite",
        *extra,
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first_step = None
    while proc.poll() is None:
        if first_step is None and (run_dir / "metrics.jsonl").exists():
            first_step = time.perf_counter() - started
        time.sleep(0.02)
    total = time.perf_counter() - started
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"minigpt train failed: {err.strip()}")
    summary = json.loads(out)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux reports kilobytes
    return {
        "start_s": round(first_step or total, 1),
        "total_s": round(total, 1),
        "peak_gb": round(peak_kb / 1e6, 2),
        "checkpoint_mb": round((run_dir / "last.pt").stat().st_size / 1e6, 1),
        "tokens_per_sec": round(summary["tokens_per_sec"]),
        "val_loss": round(summary["val_loss"], 4),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--names", type=int, default=1_000_000, help="how many names the corpus holds")
    p.add_argument("--source", type=Path, default=None, help="names to build it from [default: --data]")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--workdir", type=Path, default=None, help="where the corpus and run go [default: a temp dir]")
    p.add_argument("--set", dest="overrides", action="append", default=[], help="config overrides for the run")
    args = p.parse_args()
    info = setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        corpus = work / f"names-{args.names}.txt"
        if not corpus.exists():
            make_corpus(args.source or args.data, args.names, corpus)
        extra = [arg for item in args.overrides for arg in ("--set", item)]
        row = {
            "names": args.names,
            "corpus_mb": round(corpus.stat().st_size / 1e6, 1),
            **run_training(corpus, work / "run", args.steps, extra),
        }
    columns = ["names", "corpus_mb", "start_s", "total_s", "peak_gb", "checkpoint_mb", "tokens_per_sec", "val_loss"]
    print(table([row], [(c, c) for c in columns]))
    finish({**info, "rows": [row]}, args.out)


if __name__ == "__main__":
    main()
