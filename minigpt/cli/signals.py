"""Signals before a command's own handlers and after its work: one line and the signal's exit code, whenever
SIGINT or SIGTERM comes. A run's training has handlers of its own (runs/setup.py's StopSignals) that save a step
first; these cover the rest: start-up, while torch and numpy load, reading a large file, writing a page, and the
interpreter's exit after the done panel."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import NoReturn

from minigpt.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SAID: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "stopped by SIGTERM"}
# the signals these handlers stopped the command for, in order: a library that catches every Exception (tqdm
# starting its monitor thread, a reader that takes any failure for a damaged file) may swallow the Interrupted
# raised inside it, and the command's end reads this to say the signal's stop all the same
HEARD: list[int] = []


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
    HEARD.append(signum)
    raise Interrupted(said(signum), signum)


def said(signum: int) -> str:
    return SAID.get(signum, f"stopped by signal {signum}")


def heard_from_the_start() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, heard_early)


def heard_late(signum: int, frame) -> None:
    """A signal while the interpreter exits after the work (every file written and closed): one line, the
    signal's exit code, and no traceback from the threads' shutdown."""
    try:
        print(f"minigpt: {said(signum)} as it exited; everything was written", file=sys.stderr)
    finally:
        os._exit(128 + signum)


def heard_at_the_end() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, heard_late)


def end_process(code: int) -> NoReturn:
    """Python's own exit, in its order (the threads that are not daemons joined, the atexit functions run, the
    output flushed), then the process's end, with no moment a signal is not heard. Python's finalization puts
    SIGINT and SIGTERM back to their defaults before it tears the modules down, so a signal then killed the
    command with no line; here they are held from the last flush, and one that came is the exit's line and
    code. Everything is written and closed by then."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # CPython's own call at exit: tqdm's monitor, multiprocessing's cleanup
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone, or a stream closed: nothing more can reach it
            pass
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    pending = sorted(signal.sigpending() & set(SIGNALS))
    if pending:
        os.write(2, f"minigpt: {said(pending[0])} as it exited; everything was written\n".encode())
        os._exit(128 + pending[0])
    os._exit(code)
