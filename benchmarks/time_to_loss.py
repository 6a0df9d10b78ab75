"""Time to quality: the validation loss a recipe reaches within a time budget.

    python benchmarks/time_to_loss.py --data names.txt --config default --seconds 180

Holds out 1000 names (a seeded split, written to --workdir), trains each recipe with
`minigpt train --time-limit SECONDS`, and reports the validation loss over time (from the
run's metrics.jsonl): the best reached, and when it was first reached.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from common import finish, parser, setup, table

from minigpt.files.names_file import read_names


def split(data: Path, workdir: Path, held_out: int = 1000, seed: int = 42) -> tuple[Path, Path]:
    names = read_names(data)
    order = list(range(len(names)))
    random.Random(seed).shuffle(order)
    workdir.mkdir(parents=True, exist_ok=True)
    train, val = workdir / "train.txt", workdir / "val.txt"
    train.write_text("\n".join(names[i] for i in order[held_out:]) + "\n", encoding="utf-8")
    val.write_text("\n".join(names[i] for i in order[:held_out]) + "\n", encoding="utf-8")
    return train, val


def run(config: str, train: Path, val: Path, seconds: float, run_dir: Path, overrides: list[str]) -> dict:
    command = [
        sys.executable,
        "-m",
        "minigpt",
        "train",
        "--config",
        config,
        "--data",
        str(train),
        "--val-data",
        str(val),
        "--time-limit",
        str(seconds),
        "--out",
        str(run_dir),
        "--overwrite",
        "--quiet",
        "--json",
        *[arg for o in overrides for arg in ("--set", o)],
    ]
    summary = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    curve = [(r["elapsed"], r["step"], r["val_loss"]) for r in records if "val_loss" in r]
    best = min(curve, key=lambda c: c[2])
    return {
        "config": config + "".join(f" {o}" for o in overrides),
        "command": " ".join(command[1:]),
        "steps": summary["steps"],
        "tokens_per_sec": round(summary["tokens_per_sec"]),
        "best_val_loss": round(best[2], 4),
        "best_at_seconds": round(best[0], 1),
        "final_val_loss": round(curve[-1][2], 4),
        "curve": curve,
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--config", action="append", help="recipe(s) to run [default: default]")
    p.add_argument("--seconds", type=float, default=180)
    p.add_argument("--set", dest="overrides", action="append", default=[], help="override for every recipe")
    p.add_argument("--workdir", type=Path, default=Path("runs/time_to_loss"))
    args = p.parse_args()
    results = setup(args)
    train, val = split(args.data, args.workdir)
    rows = []
    for config in args.config or ["default"]:
        name = Path(config).stem
        row = run(config, train, val, args.seconds, args.workdir / name, args.overrides)
        rows.append(row)
        print(
            f"{row['config']}: best val {row['best_val_loss']} at {row['best_at_seconds']} s "
            f"(final {row['final_val_loss']}, {row['steps']} steps, {row['tokens_per_sec']:,} tokens/s)",
            flush=True,
        )
    results.update(seconds=args.seconds, rows=rows)
    print(
        table(
            rows,
            [
                ("config", "recipe"),
                ("steps", "steps"),
                ("tokens_per_sec", "tokens/s"),
                ("best_val_loss", "best val"),
                ("best_at_seconds", "at s"),
                ("final_val_loss", "final val"),
            ],
        )
    )
    finish(results, args.out)


if __name__ == "__main__":
    main()
