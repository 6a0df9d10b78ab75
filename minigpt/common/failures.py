"""What fails around the core, said in one line: a write the machine failed, a process of the run lost,
another library's error reduced to its first line, and a note the user should see. The core's own errors
(UsageError, RunError, Interrupted) are minigpt/errors.py's."""

from __future__ import annotations

import errno
import sys

from minigpt.errors import MiniGPTError, RunError, UsageError


class WriteFailed(RunError):
    """The machine failed a write (a full disk, a quota, an I/O error, a read-only file
    system): nothing the user gave was wrong, and the same work may succeed once the machine
    has room."""


class LostProcess(RunError):
    """Under DDP, this process stopped because another one of the run did (the backend lost it)."""


# what the machine ran out of or failed at while writing, rather than a place the user named wrongly
FAILED_WRITES = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS}


def cannot_write(what, error: OSError | str, kind: type[MiniGPTError] = UsageError, then: str = "") -> MiniGPTError:
    """The one error for something that could not be written, whatever wrote it: "cannot write
    WHAT: why".

    One failure, one exit code in every command: a full disk (or a quota, an I/O error, a
    read-only file system) is a WriteFailed, a RunError, exit 1; a place that cannot be written
    (no such directory, no permission) is a UsageError, exit 2. `kind` says which a reason given
    in words is."""
    if isinstance(error, OSError):
        kind = WriteFailed if error.errno in FAILED_WRITES else UsageError
    reason = error if isinstance(error, str) else (error.strerror or str(error))
    return kind(f"cannot write {what}: {reason}{then}")


def first_line(e: BaseException) -> str:
    """ "TypeName: the first line of its message", for an error that is not one of ours."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def warn(message: str) -> None:
    """A note the user should see even with --quiet or --json (on stderr, like every log)."""
    print(f"minigpt: note: {message}", file=sys.stderr)
