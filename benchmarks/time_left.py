"""How close the training bar's "time left" comes to the time the run really had left.

    python benchmarks/time_left.py [--config default] [--data FILE] [--set KEY=VALUE ...]

Trains the recipe as `minigpt train` does (its bar included, evaluations, checkpoints and
snapshots between steps), records the bar's estimate of the time left at every step, and once
the run has ended compares each with the truth: the time from that step until train() returns
(the last evaluation, the summary and loss.png included). It prints the error at every tenth
of the run from 10% to 90%, relative to the truth, and the largest of them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import finish, parser, table

from minigpt.cli import display
from minigpt.recipes.loading import load_config
from minigpt.runs.run import train


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--config", default="default")
    p.add_argument("--set", action="append", default=[], help="a recipe override, as minigpt train --set")
    args = p.parse_args()
    seen = []  # (when, step, the bar's estimate of the seconds left)
    advance = display.advance

    def recording(bar, trainer):
        advance(bar, trainer)
        rate = bar.format_dict["rate"] or (bar.n / bar.format_dict["elapsed"] if bar.format_dict["elapsed"] else None)
        if rate:
            seen.append((time.perf_counter(), trainer.step, (bar.total - bar.n) / rate))

    display.advance = recording
    bar = display.progress_bar
    display.progress_bar = lambda trainer, hidden: bar(trainer, hidden=False)  # live even when stderr is a file
    with tempfile.TemporaryDirectory() as tmp:
        result = train(load_config(args.config, args.set), args.data, out_dir=Path(tmp) / "run", quiet=True)
    end = time.perf_counter()
    steps = result.steps
    errors = [(step, left, end - when) for when, step, left in seen if step >= steps / 10]
    rows, worst = [], 0.0
    for tenth in range(1, 10):  # at 10%, 20%, ... 90% of the run
        step, left, truth = min(errors, key=lambda e: abs(e[0] - tenth * steps / 10))
        worst = max(worst, abs(left - truth) / truth)
        rows.append({"step": f"{step:,}", "bar": f"{left:.1f}", "truth": f"{truth:.1f}", "error": f"{(left - truth) / truth:+.0%}"})
    print()
    print(table(rows, [("step", "step"), ("bar", "bar says left, s"), ("truth", "really left, s"), ("error", "error")]))
    print(f"largest error at the tenths from 10% to 90%: {worst:.0%} ({steps:,} steps, {result.seconds:.1f} s of training)")
    finish({"steps": steps, "largest_error": worst, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
