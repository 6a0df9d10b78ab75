"""Headless Chromium for the explorer page, as the tests and benchmarks/explorer.py drive it.

Debian's `chromium` package (/usr/bin/chromium) driven by Playwright for Python; nothing is
downloaded (`playwright install` cannot fetch a browser here). Without the two, the browser
tests skip with one line saying why, except under CI (the CI variable set), where they fail.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    """Why no browser can run here, or None."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright)"
    return None


@dataclass
class Watched:
    """What a page did besides drawing: its requests and its JavaScript errors."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        browser.spare_tabs = []  # blanked tabs for open_page to load the next page in (spare_tabs_after_a_test)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, path: Path, width: int = 1280, height: int = 900, hash: str = "", before: str = ""):
    """A tab showing the file at `path` (at the view `hash` names), with its requests and errors
    recorded in `page.watched`; `before` is a script run ahead of the page's own (to stand in for a browser API).
    The tab is one an earlier test left in `browser.spare_tabs` where there is one (tests/conftest.py's
    `chromium` puts them there): loading the page again in it is about half the cost of a new tab."""
    if browser.spare_tabs and not before:
        page = browser.spare_tabs.pop()
        page.set_viewport_size({"width": width, "height": height})
    else:
        page = browser.new_page(viewport={"width": width, "height": height})
        if before:
            page.add_init_script(before)
        page.reusable = not before
        page.on("request", lambda request: page.watched.requests.append(request.url))
        page.on("pageerror", lambda error: page.watched.errors.append(str(error)))
        page.on(
            "console", lambda message: page.watched.errors.append(message.text) if message.type == "error" else None
        )
        add_readers(page)
    page.watched = Watched()
    page.goto(Path(path).resolve().as_uri() + hash)
    return page


def spare_tabs_after_a_test(browser, keep: int = 2) -> None:
    """After a test: up to `keep` of the tabs open_page made are blanked (about:blank: the next test's page is a
    new document, with nothing of this test's left in it) and kept in `browser.spare_tabs`; every other tab the
    test opened is closed."""
    spare = browser.spare_tabs
    for context in browser.contexts:
        pages = context.pages
        if len(spare) < keep and len(pages) == 1 and getattr(pages[0], "reusable", False) and pages[0] not in spare:
            pages[0].goto("about:blank")
            spare.append(pages[0])
        elif not (len(pages) == 1 and pages[0] in spare):
            context.close()


READERS = Path(__file__).with_name("page_readers.js")


def add_readers(page) -> None:
    """Give the explorer pages this page opens from now on (frames included) the tests' readers
    (tests/page_readers.js): the numbers behind what a page shows, which the page itself does not carry."""
    page.add_init_script(path=str(READERS))


POLL_MS = 50


def wait_until(page, predicate: str, arg=None, **options) -> None:
    """Wait until the page's `predicate` (JavaScript) holds, asking it every POLL_MS. Playwright's own
    default asks at every animation frame, and a page asked for frames without end is never idle: its
    parts out of sight then wait for their idle callback's timeout, one part every two seconds."""
    page.wait_for_function(predicate, arg=arg, polling=POLL_MS, **options)


def show(page, selector: str) -> None:
    """Scroll a part of the page into view and wait until it is drawn: parts below the first screen draw when
    they are seen (an IntersectionObserver tells them), and a part not yet redrawn is aria-busy, the page's
    own mark of it."""
    page.locator(selector).scroll_into_view_if_needed()
    wait_until(page, "(selector) => !document.querySelector(selector).closest('[aria-busy=true]')", arg=selector)


def redraw_weights(checkpoint: Path, seed: int) -> None:
    """Redraw a checkpoint's weights at a scale where logits differ by whole nats (norm gains
    around 1), so that a page agreeing with torch to 1e-4 says something about its arithmetic."""
    import torch

    raw = torch.load(checkpoint, weights_only=True)
    generator = torch.Generator().manual_seed(seed)
    for tensor in raw["model"].values():
        noise = torch.randn(tensor.shape, generator=generator)
        tensor.copy_(1 + 0.3 * noise if tensor.dim() == 1 else 0.3 * noise)
    torch.save(raw, checkpoint)


def skip_or_fail(reason: str) -> None:
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"the browser tests must run in CI: {reason}")
    pytest.skip(reason)
