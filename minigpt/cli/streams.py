"""Standard output and standard error as a command finds them: closed, full, or a pipe.

What a command prints on standard output is what it is for: when that stream is closed
(`>&-`) or cannot be written (`> /dev/full`), the command ends with one line and exit 1, never
a traceback and never a silent success. Standard error carries progress, notes and errors:
when it is closed or cannot be written they are dropped, and the exit code still tells. A
reader that goes away (`| head -1`) ends the command quietly (cli/app.py).
"""

from __future__ import annotations

import contextlib
import os
import sys

from minigpt.common.failures import cannot_write
from minigpt.errors import RunError


class Stream:
    """A command's view of a standard stream; a closed one (None) reads as an empty sink."""

    def __init__(self, stream):
        self.closed_at_start = stream is None
        self.stream = open(os.devnull, "w", encoding="utf-8") if stream is None else stream

    def __getattr__(self, name):  # isatty, encoding, fileno...: the stream's own
        return getattr(self.stream, name)


class CheckedOutput(Stream):
    """sys.stdout for a command: a write that fails is one RunError naming the stream."""

    def write(self, text: str) -> int:
        return self._checked(self.stream.write, text)

    def flush(self) -> None:
        if not self.closed_at_start:  # nothing was written to a closed one: a write said so
            self._checked(self.stream.flush)

    def _checked(self, operation, *args):
        if self.closed_at_start:
            raise RunError("standard output is closed, so nothing could be printed")
        try:
            return operation(*args)
        except BrokenPipeError:
            raise  # the reader went away: cli/app.py ends quietly
        except OSError as e:
            raise cannot_write("to standard output", e, RunError) from None


class DroppedOnFailure(Stream):
    """sys.stderr for a command: progress and notes that cannot be written are dropped."""

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError:
            pass


@contextlib.contextmanager
def checked_streams():
    """Within: sys.stdout checked and sys.stderr forgiving; both as they were after. Flush
    sys.stdout inside, where a failure can be reported, rather than leave it to the exit."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CheckedOutput(sys.stdout), DroppedOnFailure(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
