"""The tutorial in a real JupyterLab, run as a person runs it, and its inline explorer typed into.

    pip install jupyterlab && python benchmarks/jupyterlab.py [--screenshot docs/notebook-jupyterlab.png]

Starts JupyterLab headless on a free port of this machine (127.0.0.1, a token of its own), with
a copy of examples/tutorial.ipynb in a temporary folder; opens it in headless Chromium (the tests'
browser, tests/browser.py); runs every cell from the Run menu; waits for the explorer's frame in
the output; types a name into it and reads what the page computed; and checks that no request
left this machine and that neither JupyterLab's page nor the explorer's logged an error. Exits 1,
saying why, when any of that fails. Not in the test suite: starting JupyterLab and a kernel, and
training, take about a minute.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import browser  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(folder: Path, port: int, token: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}", "--ServerApp.port_retries=0",
               "--allow-root"]  # CI and these machines run as root
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit("JupyterLab exited before it answered")
            time.sleep(0.5)
    server.kill()
    raise SystemExit("JupyterLab did not answer within 90 s")


def run_tutorial(chromium, port: int, token: str, screenshot: Path | None) -> dict:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    browser.add_readers(page)  # minigpt.shown(), read below
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"http://127.0.0.1:{port}/lab/tree/tutorial.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # the kernel started and idle (the status bar says so), or Run All finds nothing to run on
    page.wait_for_function("document.querySelector('.jp-StatusBar-Widget') && document.body.innerText.includes('| Idle')", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    started = time.time()
    # attached, not visible: JupyterLab lays out only the cells near the view
    page.wait_for_selector("iframe.minigpt-explorer", state="attached", timeout=240_000)
    page.locator("iframe.minigpt-explorer").scroll_into_view_if_needed()
    frame = page.locator("iframe.minigpt-explorer").element_handle().content_frame()
    frame.wait_for_function("window.minigpt !== undefined", timeout=60_000)
    frame.locator("#name-input").fill("zoe")
    tokens = frame.evaluate("minigpt.shown().tokens.length")
    title = frame.inner_text("#math-title")
    height = page.evaluate("document.querySelector('iframe.minigpt-explorer').clientHeight")
    inner = frame.evaluate("document.documentElement.scrollHeight")
    page.wait_for_selector(".jp-OutputArea-output img", state="attached", timeout=240_000)  # the attention grid
    if screenshot:
        news = page.locator(".jp-toast-button", has_text="No")  # JupyterLab's question about its news feed
        if news.count():
            news.first.click()
        page.locator("iframe.minigpt-explorer").scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot))
    elsewhere = [url for url in requests if not url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:"))]
    return {"explorer after": f"{time.time() - started:.1f} s", "tokens for 'zoe'": tokens, "worked row": title,
            "frame height": height, "page height": inner, "requests elsewhere": elsewhere, "errors": errors}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--screenshot", type=Path, default=None, help="a PNG of JupyterLab with the explorer inline")
    args = p.parse_args()
    reason = browser.missing()
    if reason:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(ROOT / "examples" / "tutorial.ipynb", folder / "tutorial.ipynb")
        port, token = free_port(), secrets.token_hex(16)
        os.environ.setdefault("OMP_NUM_THREADS", "2")
        server = start_lab(folder, port, token)
        try:
            with browser.chromium() as chromium:
                found = run_tutorial(chromium, port, token, args.screenshot)
        finally:
            server.terminate()
            server.wait(timeout=30)
    for key, value in found.items():
        print(f"{key:>20}  {value}")
    failed = [why for why, bad in [("the explorer did not read 'zoe'", found["tokens for 'zoe'"] != 4),
                                   ("the frame scrolls inside", found["page height"] > found["frame height"] + 2),
                                   ("a request left this machine", found["requests elsewhere"]),
                                   ("a page logged an error", found["errors"])] if bad]
    if failed:
        raise SystemExit("; ".join(failed))
    print("the tutorial ran in JupyterLab and its explorer answered")


if __name__ == "__main__":
    main()
