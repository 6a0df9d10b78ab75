"""How fast the explorer page answers "why": the patching grid over (layer, position) for pairs of
names, and every position's logit attribution, in headless Chromium.

    python benchmarks/why_panels.py --page emma.html [--repeats 15]

The page is one `minigpt inspect-attention RUN --html PAGE` wrote. Each figure is the median (and
the 95th percentile) of `repeats` calls of the readers the tests add to the page (tests/page_readers.js: `minigpt.patchGrid`,
`minigpt.attribution`), timed inside the page.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import browser  # noqa: E402

PAIRS = [("emma", "amma"), ("christopher", "kristopher"), ("abcdefghijklmno", "bbcdefghijklmno")]


def percentile_95(times: list[float]) -> float:
    return sorted(times)[max(0, round(0.95 * len(times)) - 1)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", type=Path, required=True, help="an explorer page")
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    rows = []
    with browser.chromium() as chromium:
        page = browser.open_page(chromium, args.page)
        for a, b in PAIRS:
            times = [page.evaluate("([a, b]) => minigpt.patchGrid(a, b).ms", [a, b]) for _ in range(args.repeats)]
            rows.append((f"patching grid, {a} / {b}", statistics.median(times), percentile_95(times)))
        times = [page.evaluate("() => { const s = performance.now(); minigpt.attribution('christopher'); "
                               "return performance.now() - s; }") for _ in range(args.repeats)]
        rows.append(("attribution at every position of christopher", statistics.median(times), percentile_95(times)))
    width = max(len(name) for name, _, _ in rows)
    print(f"{'what':<{width}}  median ms  p95 ms")
    for name, median, p95 in rows:
        print(f"{name:<{width}}  {median:9.1f}  {p95:6.1f}")


if __name__ == "__main__":
    main()
