"""Signals before a command's own handlers and after its work: one line and the signal's exit code, whenever
SIGINT or SIGTERM comes. A run's training has handlers of its own (runs/setup.py's StopSignals) that save a step
first; these cover the rest: start-up, while torch and numpy load, reading a large file, writing a page, and the
interpreter's exit after the done panel."""

from __future__ import annotations

import os
import signal
import sys
import threading

from minigpt.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SAID: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "stopped by SIGTERM"}


def inside_an_import(frame) -> bool:
    """Whether Python is importing a module where the signal came: an exception raised there is taken for the
    module's own failure (torch then carries on without numpy, or numpy's import is left half done)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def heard_early(signum: int, frame) -> None:
    """A signal before a command's handlers: the command stops at once, with one line; inside an import it is
    sent again a moment later, once the import is done, rather than break the import."""
    if inside_an_import(frame):
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise Interrupted(SAID.get(signum, f"stopped by signal {signum}"), signum)


def heard_from_the_start() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, heard_early)


def heard_late(signum: int, frame) -> None:
    """A signal while the interpreter exits after the work (every file written and closed): one line, the
    signal's exit code, and no traceback from the threads' shutdown."""
    try:
        print(f"minigpt: {SAID.get(signum, 'stopped')} as it exited; everything was written", file=sys.stderr)
    finally:
        os._exit(128 + signum)


def heard_at_the_end() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, heard_late)
