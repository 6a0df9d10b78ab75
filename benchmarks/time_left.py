"""How close the training bar's "time left" comes to the time the run really had left.

    python benchmarks/time_left.py [--config default] [--data FILE] [--set KEY=VALUE ...]

Trains the recipe as `minigpt train` does (evaluations, checkpoints and snapshots between steps),
records at every step, through a Reporter, the time left as the bar estimates it (the run's average
rate since the bar started, tqdm's smoothing 0), and once
the run has ended compares each with the truth: the time from that step until train() returns
(the last evaluation, the summary and loss.png included). It prints the error at every tenth
of the run from 10% to 90%, relative to the truth, and the largest of them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import finish, parser, table

from minigpt.recipes.loading import load_config
from minigpt.runs.run import train
from minigpt.training import Reporter


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--config", default="default")
    p.add_argument("--set", action="append", default=[], help="a recipe override, as minigpt train --set")
    args = p.parse_args()
    seen = []  # (when, step, the bar's estimate of the seconds left)

    class BarEstimate(Reporter):
        """What the bar says is left after each step: its rate is the run's average so far (tqdm's smoothing 0,
        views/training_display.py's progress_bar), from when the bar started."""

        def start(self, trainer):
            self.started, self.first = time.perf_counter(), trainer.step

        def step(self, trainer):
            now = time.perf_counter()
            if trainer.step > self.first:
                rate = (trainer.step - self.first) / (now - self.started)
                seen.append((now, trainer.step, (trainer.recipe.steps - trainer.step) / rate))

    with tempfile.TemporaryDirectory() as tmp:
        result = train(load_config(args.config, args.set), args.data, out_dir=Path(tmp) / "run", quiet=True,
                       report=BarEstimate())
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
