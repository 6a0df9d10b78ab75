"""The explorer page in headless Chromium: its size, how fast it opens, reads a name and samples.

    python benchmarks/explorer.py --checkpoint runs/names
    python benchmarks/explorer.py --checkpoint runs/names --screenshots docs/explorer   # and pictures of each part
    python benchmarks/explorer.py --checkpoint runs/names --trace   # and where a key's time goes, from Chromium's trace

It writes the page for the checkpoint, opens it in a fresh tab several times (the time from
navigation to the end of the load event, which includes decoding the weights and drawing
every panel), then times, inside the page, `minigpt.forward` on a 15-character name and
`minigpt.sampleNames(100)`, and the whole redraw after a keystroke (a character typed at the end
of a 14-character name, or deleted; painting excluded) and after the whole name is replaced. The browser is the
tests' (tests/browser.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import browser  # noqa: E402
from common import describe_png  # noqa: E402

from minigpt.views.explorer_page import write_page  # noqa: E402

PARTS = {  # screenshots of each part of the page, as a learner meets them
    "lesson": "#lesson",
    "flow": "#flow",
    "walk": "#walk",
    "predict": "#predict",
    "generate": "#generate",
    "heads": "#heads-section",
    "card": "#about-model",
}

# Key to next frame: a real key press (Playwright's keyboard, so the browser runs its whole input
# path), timed inside the page from the keydown event to the first frame painted after it: the
# frame is the requestAnimationFrame after the redraw, and a message posted from it runs once the
# frame has been produced. Typing alternates a character and Backspace so the name stays 14-15 long.
KEY_TO_FRAME_SETUP = """(name) => {
    const box = document.getElementById("name-input");
    window.__frames = [];
    box.addEventListener("keydown", (event) => {
        const start = event.timeStamp;
        requestAnimationFrame(() => {
            const channel = new MessageChannel();
            channel.port1.onmessage = () => window.__frames.push(performance.now() - start);
            channel.port2.postMessage(null);
        });
    });
    box.value = name;
    box.dispatchEvent(new Event("input"));
    box.focus();
}"""


def open_ms(chromium, path: Path, repeats: int) -> float:
    """The median time from navigation to the end of the load event, over `repeats` fresh tabs."""
    loads = []
    for _ in range(repeats):
        page = browser.open_page(chromium, path)
        loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        page.close()
    return round(statistics.median(loads), 1)


def key_to_frame(page, name: str = "abcdefghijklmn", keys: int = 100) -> dict:
    """A real key press's time to the next frame on a page with a #name-input box (a character and
    Backspace in turn at the end of `name`, after 20 that warm up): its median and 95th percentile."""
    page.evaluate(KEY_TO_FRAME_SETUP, name)
    for n in range(20 + keys):
        page.keyboard.press("o" if n % 2 == 0 else "Backspace")
        page.wait_for_function(f"window.__frames.length > {n}")
    frames = sorted(page.evaluate("window.__frames.slice(20)"))
    return {
        "key_to_frame_ms": round(frames[len(frames) // 2], 1),
        "key_to_frame_p95_ms": round(frames[int(len(frames) * 0.95)], 1),
    }


TIME_IN_PAGE = """([what, repeats]) => {
    const name = "abcdefghijklmno".slice(0, minigpt.config.model.block_size - 1);
    const box = document.getElementById("name-input");
    // the model's forward pass itself (model.js), as the page runs it: not the console API, which
    // also copies every result into plain arrays
    const data = JSON.parse(document.getElementById("minigpt-data").textContent);
    const model = what === "forward" ? MiniGPTModel.load(data) : null;
    const tokens = minigpt.forward(name).tokens;
    const runs = {
        forward: () => MiniGPTModel.forward(model, tokens),
        sample: () => minigpt.sampleNames(100, {seed: 1}),
        // a key typed at the end of a 14-character name, then Backspace: as the key-to-frame runs type
        keystroke: () => {
          box.value = box.value === name ? name.slice(0, -1) : name;
          box.dispatchEvent(new Event("input"));
        },
        // the whole name replaced (a paste, or a generated name clicked): every position computed again
        replace: () => { box.value = box.value === name ? "emma" : name; box.dispatchEvent(new Event("input")); },
    };
    const run = runs[what];
    for (let i = 0; i < 20; i++) run();  // warm up, as a learner's first keystrokes do: V8 optimises hot code
    const times = [];
    for (let i = 0; i < repeats; i++) { const t = performance.now(); run(); times.push(performance.now() - t); }
    times.sort((a, b) => a - b);
    return [times[Math.floor(times.length / 2)], times[Math.floor(times.length * 0.95)]];
}"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", type=Path, required=True, help="a checkpoint or run directory")
    p.add_argument(
        "--page",
        type=Path,
        default=None,
        help="time this page, already written for the checkpoint, rather than write it again",
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--screenshots", type=Path, default=None, help="folder for PNGs of the page and its parts")
    p.add_argument("--text", default="emma", help="the name the page starts with")
    p.add_argument("--out", type=Path, default=None, help="JSON file for the results")
    p.add_argument(
        "--trace",
        action="store_true",
        help="also trace 30 more key presses and print where a key's time goes (script, style, layout, paint, raster)",
    )
    p.add_argument(
        "--hide",
        default=None,
        metavar="SELECTOR",
        help="hide these parts (CSS display: none) before timing: what they cost the browser to show",
    )
    args = p.parse_args()
    reason = browser.missing()
    if reason:
        sys.exit(f"explorer benchmark: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = args.page or write_page(args.checkpoint, Path(tmp) / "page.html", text=args.text)
        results = {"checkpoint": str(args.checkpoint), "page_mb": round(page_path.stat().st_size / 1e6, 2)}
        with browser.chromium() as chromium:
            results["open_ms"] = open_ms(chromium, page_path, args.repeats)
            page = browser.open_page(chromium, page_path)
            if args.hide:
                page.add_style_tag(content=f"{args.hide} {{ display: none !important; }}")
                results["hidden"] = args.hide
            results["forward_15_chars_ms"] = round(page.evaluate(TIME_IN_PAGE, ["forward", 50])[0], 2)
            results["sample_100_names_ms"] = round(page.evaluate(TIME_IN_PAGE, ["sample", args.repeats])[0], 1)
            # one keystroke's whole redraw (the model and every panel; the browser's painting not included)
            median, p95 = page.evaluate(TIME_IN_PAGE, ["keystroke", 100])
            results["keystroke_script_ms"] = round(median, 1)
            results["keystroke_script_p95_ms"] = round(p95, 1)
            median, p95 = page.evaluate(TIME_IN_PAGE, ["replace", 100])
            results["whole_name_script_ms"] = round(median, 1)
            results["whole_name_script_p95_ms"] = round(p95, 1)
            # the live cost of switching each head off, on a 15-character name (every part's too)
            page.evaluate("minigpt.setText('abcdefghijklmno'.slice(0, minigpt.config.model.block_size - 1))")
            lives = [
                page.evaluate("""() => { minigpt.liveCosts();
                                            const d = document.getElementById('ablation-table').dataset;
                                            return [+d.headsMs, +d.liveMs]; }""")
                for _ in range(args.repeats)
            ]
            results["heads_off_costs_ms"] = round(statistics.median(h for h, _ in lives), 1)
            results["all_parts_off_costs_ms"] = round(statistics.median(a for _, a in lives), 1)
            if page.evaluate("Boolean(JSON.parse(document.getElementById('minigpt-data').textContent).snapshots)"):
                # a move of the step slider: the snapshot's weights (decoded on its first visit) and the redraw
                moves = page.evaluate("""() => { const n = +document.getElementById('step-slider').max + 1, times = [];
                    for (let k = 0; k < 2 * n; k++) {
                        const t = performance.now(); minigpt.showSnapshot(k % n); times.push(performance.now() - t);
                    }
                    return times.sort((a, b) => a - b); }""")
                results["step_slider_ms"] = round(statistics.median(moves), 1)
                results["step_slider_p95_ms"] = round(moves[int(len(moves) * 0.95)], 1)
                page.evaluate("minigpt.showSnapshot(+document.getElementById('step-slider').max)")
            results.update(key_to_frame(page, "abcdefghijklmn"[: page.evaluate("minigpt.config.model.block_size") - 2]))
            if args.trace:
                results.update(trace_keys(chromium, page, first=20 + 100))
            results["errors"] = page.watched.errors
            if args.screenshots:
                screenshots(chromium, page_path, args.screenshots, run_about(args.checkpoint))
    for key, value in results.items():
        print(f"{key:>22}  {value}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


# Chromium's trace events of a key's work, by what the browser was doing (the main thread's
# script, style, layout, pre-paint and paint; the raster threads' raster)
TRACED = {
    "FunctionCall": "script",
    "UpdateLayoutTree": "style",
    "Layout": "layout",
    "PrePaint": "paint",
    "Paint": "paint",
    "RasterTask": "raster",
}


def trace_keys(chromium, page, first: int, keys: int = 30) -> dict:
    """Per key, the milliseconds Chromium's trace spends in each kind of work, over `keys` presses."""
    chromium.start_tracing(page=page, categories=["devtools.timeline", "disabled-by-default-devtools.timeline"])
    for n in range(first, first + keys):
        page.keyboard.press("o" if n % 2 == 0 else "Backspace")
        page.wait_for_function(f"window.__frames.length > {n}")
    data = json.loads(chromium.stop_tracing())
    events = data["traceEvents"] if isinstance(data, dict) else data
    spent = dict.fromkeys(TRACED.values(), 0.0)
    for event in events:
        if event.get("ph") == "X" and event["name"] in TRACED:
            spent[TRACED[event["name"]]] += event.get("dur", 0) / 1000 / keys
    return {f"per_key_{kind}_ms": round(ms, 1) for kind, ms in spent.items()}


def run_about(checkpoint) -> str:
    """The run a picture is of, as its loss curve says it: its name, best validation loss and step."""
    from minigpt import load_checkpoint

    ckpt = load_checkpoint(checkpoint)
    return f"{Path(checkpoint).resolve().name}, best validation {ckpt.best_val_loss:.4f} at step {ckpt.step:,}"


def screenshots(chromium, page_path: Path, folder: Path, about: str) -> None:
    """At desktop (1280×800) and phone (390×844) width: the first screen as it opens, the whole
    page, and each part; at desktop width also first-screen.png with a cell's details open, for the README."""
    folder.mkdir(parents=True, exist_ok=True)
    for width, height, tag in [(1280, 800, "desktop"), (390, 844, "phone")]:
        page = browser.open_page(chromium, page_path, width, height)
        page.fill("#name-input", "christopher")
        page.evaluate("minigpt.select(0, 2)")
        page.click("#big-matrix [role=row][data-i='5'] .cell[data-j='4']")  # "t" attending to "s": details open
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(folder / f"{tag}-first-screen.png"))
        describe_png(folder / f"{tag}-first-screen.png", f"the explorer page of {about}")
        page.screenshot(path=str(folder / f"{tag}-page.png"), full_page=True)
        for name, selector in PARTS.items():
            page.locator(selector).scroll_into_view_if_needed()
            page.locator(selector).screenshot(path=str(folder / f"{tag}-{name}.png"))
        page.close()


if __name__ == "__main__":
    main()
