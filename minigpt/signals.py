"""Stopping a run cleanly: Ctrl-C or SIGTERM ends it after the current step, with a checkpoint."""

from __future__ import annotations

import signal
import threading

from minigpt.errors import Interrupted


class StopSignals:
    """The first SIGINT or SIGTERM asks training to stop after this step; a second stops it at once."""

    def __init__(self):
        self.requested: int | None = None
        self._previous = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested is not None:
            raise Interrupted("stopped at once by a second signal; the checkpoints already written are intact", signum)
        self.requested = signum

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
