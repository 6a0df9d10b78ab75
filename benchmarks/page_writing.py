"""How long `minigpt inspect-attention RUN --html PAGE` takes: the first page of a run, the same
run's page again, and both beside CPU-bound processes; alternated against another checkout.

    python benchmarks/page_writing.py --run runs/names [--repeats 3] [--against /path/to/other/checkout]
    python benchmarks/page_writing.py --run runs/names --competitors 2     # and beside two busy processes

Each write is the command in a fresh process (as a user runs it: starting Python and torch
included), with a fresh, empty page cache for the first write and the one it left for the second.
With --against, each repeat runs the other checkout's code too (PYTHONPATH), right after this
one's, so both meet the machine's same minutes. --competitors N starts N CPU-bound processes
(they stop by themselves) for a second set of the same runs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import finish, parser, table
from contention import competitors

ROOT = Path(__file__).resolve().parent.parent


def write_page(code: Path, run: Path, page: Path, cache: Path) -> float:
    """Seconds for one `minigpt inspect-attention RUN --html PAGE` with `code`'s minigpt."""
    env = {**os.environ, "PYTHONPATH": str(code), "MINIGPT_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "minigpt", "inspect-attention", str(run), "--html", str(page), "--overwrite"]
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=code)
    return time.perf_counter() - start


def first_and_again(code: Path, run: Path) -> tuple[float, float]:
    """The first page of the run (an empty cache), then the same run's page again (to another file)."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        first = write_page(code, run, Path(tmp) / "first.html", cache)
        again = write_page(code, run, Path(tmp) / "again.html", cache)
    return first, again


def measure(codes: dict[str, Path], run: Path, repeats: int) -> dict[str, list[tuple[float, float]]]:
    times = {name: [] for name in codes}
    for _ in range(repeats):
        for name, code in codes.items():  # alternated, so both meet the machine's same minutes
            times[name].append(first_and_again(code, run))
            print(f"  {name}: first {times[name][-1][0]:.2f} s, again {times[name][-1][1]:.2f} s", flush=True)
    return times


def rows(times: dict, setting: str) -> list[dict]:
    found = []
    for name, runs in times.items():
        firsts, agains = [t for t, _ in runs], [t for _, t in runs]
        found.append(
            {
                "code": name,
                "setting": setting,
                "first": f"{statistics.median(firsts):.2f} ({min(firsts):.2f}–{max(firsts):.2f})",
                "again": f"{statistics.median(agains):.2f} ({min(agains):.2f}–{max(agains):.2f})",
            }
        )
    return found


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True, help="a run directory (its best.pt, snapshots and metrics)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--against", type=Path, default=None, help="another checkout of minigpt to alternate with")
    p.add_argument("--competitors", type=int, default=0, help="CPU-bound processes beside a second set of runs")
    args = p.parse_args()
    codes = {"this checkout": ROOT}
    if args.against:
        codes[f"{args.against}"] = args.against.resolve()
    run = args.run.resolve()
    print(f"quiet, {os.cpu_count()} cores:")
    results = {"cores": os.cpu_count(), "rows": rows(measure(codes, run, args.repeats), "quiet")}
    if args.competitors:
        print(f"beside {args.competitors} CPU-bound processes:")
        busy = competitors(args.competitors, limit=3600)
        try:
            results["rows"] += rows(measure(codes, run, args.repeats), f"beside {args.competitors} busy")
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
    print()
    print(
        table(
            results["rows"],
            [
                ("code", "code"),
                ("setting", "machine"),
                ("first", "first page, s (median, range)"),
                ("again", "same run again, s"),
            ],
        )
    )
    finish(results, args.out)


if __name__ == "__main__":
    main()
