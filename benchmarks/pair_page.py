"""The page of two models in headless Chromium: its size beside the two models' own pages, how fast it
opens, and a real key press to the next frame painted.

    python benchmarks/pair_page.py runs/names runs/drop0lr2x

It writes the page of the two runs (and each run's own page, for their sizes), opens it in a fresh tab
several times (navigation to the end of the load event: both models decoded, every panel drawn), then
types at the end of a 14-character name, a character and Backspace in turn, timing each key from its
keydown to the first frame after the redraw (as benchmarks/explorer.py times the one-model page).
The browser is the tests' (tests/browser.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import browser  # noqa: E402
from explorer import key_to_frame, open_ms  # noqa: E402

from minigpt.views.explorer_page import write_page  # noqa: E402
from minigpt.views.pair_page import write_pair_page  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("first", type=Path, help="a checkpoint or run directory (A)")
    p.add_argument("second", type=Path, help="another, on the same characters (B)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--keys", type=int, default=100, help="key presses timed (after 20 that warm up)")
    p.add_argument("--out", type=Path, default=None, help="JSON file for the results")
    args = p.parse_args()
    reason = browser.missing()
    if reason:
        sys.exit(f"pair page benchmark: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        pair = write_pair_page(args.first, args.second, Path(tmp) / "pair.html", text="emma")
        results = {"pair_page_mb": round(pair.stat().st_size / 1e6, 2)}
        for n, run in enumerate((args.first, args.second)):
            try:
                results[f"own_page_{'ab'[n]}_mb"] = round(
                    write_page(run, Path(tmp) / f"{n}.html").stat().st_size / 1e6, 2
                )
            except Exception as e:  # a model trained without the mask has no page of its own
                results[f"own_page_{'ab'[n]}_mb"] = f"none ({str(e).splitlines()[0][:60]}...)"
        with browser.chromium() as chromium:
            results["open_ms"] = open_ms(chromium, pair, args.repeats)
            page = browser.open_page(chromium, pair)
            results.update(key_to_frame(page, keys=args.keys))
            results["errors"] = page.watched.errors
    for key, value in results.items():
        print(f"{key:>22}  {value}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
