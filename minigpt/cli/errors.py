"""How a command ends early: bad input (exit 2), a run-time failure (exit 1), or a signal.

Each is one line for the user, never a traceback; `StopSignals` turns Ctrl-C or SIGTERM
during training into a clean stop after the current step.
"""

from __future__ import annotations

import os
import signal
import threading
import unicodedata
from pathlib import Path


class MiniGPTError(Exception):
    """A failure to report as one line, without a traceback."""

    exit_code = 1


class UsageError(MiniGPTError):
    """Bad usage or input: a file, an option or a config value the user can fix."""

    exit_code = 2


class RunError(MiniGPTError):
    """Something went wrong while running (a non-finite loss, a failed write)."""

    exit_code = 1


class Interrupted(MiniGPTError):
    """Training stopped by SIGINT or SIGTERM after saving; exits 128 + the signal number."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.exit_code = 128 + signum


CHECKPOINT_START = b"PK\x03\x04"  # torch.save writes a zip archive


def is_checkpoint_file(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == CHECKPOINT_START
    except OSError:
        return False


def refuse_existing(path, overwrite: bool, may_replace_checkpoint: bool = False) -> None:
    """An output file is never replaced unless the user says so, and a checkpoint only by a checkpoint."""
    if not may_replace_checkpoint and Path(path).is_file() and is_checkpoint_file(path):
        raise UsageError(f"{path} is a checkpoint: minigpt never writes anything else over one; choose another file")
    if Path(path).exists() and not overwrite:
        raise UsageError(f"{path} already exists; pass --overwrite to replace it")


def cannot_write(path, e: OSError) -> UsageError:
    """The one error for an output file that could not be written, whatever wrote it."""
    return UsageError(f"cannot write {path}: {e.strerror or e}")


def first_line(e: BaseException) -> str:
    """"TypeName: the first line of its message", for an error that is not one of ours."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def as_text(name) -> str:
    """A path or name as text: the bytes of a name that is not UTF-8 (a Linux path is bytes,
    which Python carries as lone surrogates) written as \\xNN, as `ls -b` does, so that it can be
    printed, drawn and written to a UTF-8 file."""
    text = os.fsdecode(name) if isinstance(name, os.PathLike) else str(name)
    try:
        text.encode("utf-8")  # the common case, at C speed: no surrogate to write out
        return text
    except UnicodeEncodeError:
        pass
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in text)


def one_line(message: str) -> str:
    """The message with control characters and line breaks written as escapes: user text it quotes stays on one line."""
    message = as_text(message)
    return "".join(
        c.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") else c
        for c in message
    )


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
