"""Two versions of one function, timed step by step inside one training run: the function is swapped
every --every steps and each optimizer step is timed, so both versions meet the machine's same
seconds. Runs minutes apart on this machine move by a quarter, more than most changes to one part of
a step; steps a few milliseconds apart do not.

    python benchmarks/interleaved_steps.py --swap minigpt.optimizer:orthogonalize \
        --against /path/to/other/checkout -- train --out /tmp/run --quiet --steps 1000

The other version is the same function in the other checkout's copy of the module, loaded beside
this one (its own imports resolve to this checkout's package, so it must keep the same signature).
The swap reaches the calls made through the module's global name, as Muon's call of
`orthogonalize` is; a function that other modules import by name is not reached there.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path


def other_version(module_name: str, function: str, checkout: Path):
    """`function` as the other checkout's copy of `module_name` defines it."""
    path = checkout.joinpath(*module_name.split(".")).with_suffix(".py")
    if not path.is_file():
        sys.exit(f"interleaved_steps: {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"other_{module_name.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def summary(times: dict[str, list[float]]) -> list[str]:
    """Per version ("other", "this"): the median and mean step in ms, and this one's median against the other's."""
    lines, medians = [], {}
    for name, steps in times.items():
        medians[name] = statistics.median(steps)
        lines.append(f"{name:>8}: median {1e3 * medians[name]:.2f} ms, mean {1e3 * statistics.mean(steps):.2f} ms, "
                     f"{len(steps)} steps")
    this, other = medians["this"], medians["other"]
    lines.append(f"this checkout's median step is {100 * (this - other) / other:+.1f}% against the other's")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--swap", required=True, help="module:function, e.g. minigpt.optimizer:orthogonalize")
    p.add_argument("--against", type=Path, required=True, help="the other checkout's root")
    p.add_argument("--every", type=int, default=20, help="steps a stretch of one version [default: 20]")
    p.add_argument("--skip", type=int, default=5, help="steps left out at each stretch's start [default: 5]")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then minigpt's arguments (train ...)")
    args = p.parse_args()
    module_name, function = args.swap.split(":")
    module = importlib.import_module(module_name)
    versions = {"this": getattr(module, function), "other": other_version(module_name, function, args.against)}
    step = {"n": 0}

    def running() -> str:  # the version of the stretch the run is in: stretch 0 runs the other one
        return ("other", "this")[(step["n"] // args.every) % 2]

    setattr(module, function, lambda *a, **k: versions[running()](*a, **k))

    import minigpt.training as training

    times = {"other": [], "this": []}
    train_step = training.Trainer.train_step

    def timed(trainer):
        started = time.perf_counter()
        result = train_step(trainer)
        if step["n"] % args.every >= args.skip:
            times[running()].append(time.perf_counter() - started)
        step["n"] += 1
        return result

    training.Trainer.train_step = timed
    from minigpt.cli.main import main as minigpt

    sys.argv = ["minigpt", *[a for a in args.command if a != "--"]]
    try:
        minigpt()
    except SystemExit as stop:
        if stop.code:
            raise
    if times["this"] and times["other"]:
        print("\n".join(summary(times)))


if __name__ == "__main__":
    main()
