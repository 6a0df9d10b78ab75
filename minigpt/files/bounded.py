"""Reading a file no larger than its kind ever is: a names file, a recipe, a checkpoint, a JSON file.

A path can name a device that never ends (/dev/zero), a pipe, or a file far larger than any of
its kind; read whole, it fills memory until the kernel kills the process. Every file minigpt
reads goes through here with the most its kind can hold (LIMITS, stated in docs/commands.md):
a regular file is measured before it is read; anything else is read up to the limit and no
further. A checkpoint or snapshots file is a zip archive: its directory says how large each
member is once unpacked, and that is checked too, before torch unpacks a byte of it (a small
file can hold a deflated tensor of gigabytes).
"""

from __future__ import annotations

import threading
import zipfile
from pathlib import Path

from minigpt.common.failures import warn
from minigpt.common.text import one_line
from minigpt.errors import UsageError

WAIT_BEFORE_SAYING = 3.0  # seconds a pipe may keep what it holds to itself before minigpt says it is waiting
MB = 1024**2
LIMITS = {  # the most each kind of file holds, in bytes
    "names file": 2048 * MB,  # far past ten million names (docs/large-corpora.md measures them)
    "recipe": 1 * MB,
    "JSON file": 2048 * MB,  # microgpt's JSON of the largest model minigpt builds
    "checkpoint": 2048 * MB,  # weights, optimizer state and names of the largest model minigpt builds
    "snapshots file": 2048 * MB,
    "metrics file": 512 * MB,
}


def read_bytes(path: str | Path, kind: str, most: int | None = None, why: str = "") -> bytes:
    """The whole file, or a one-line UsageError when it holds more than a `kind` ever does (or than `most`
    bytes, which `why` explains: what the machine's memory allows)."""
    path = Path(path)
    limit = LIMITS[kind] if most is None else min(most, LIMITS[kind])
    refuse_larger(path, kind, path.stat().st_size if path.is_file() else 0, limit, why)
    # a pipe waits for its writer (opening it, too): if none has written for a while, say what minigpt waits on
    waiting = (
        None
        if path.is_file()
        else threading.Timer(
            WAIT_BEFORE_SAYING,
            warn,
            [
                f"{one_line(path)} is a pipe, and nothing has written to it yet: minigpt waits for its writer to send "
                f"the {kind.removesuffix(' file')} and close it (Ctrl-C stops)"
            ],
        )
    )
    if waiting is not None:
        waiting.daemon = True
        waiting.start()
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # a device or a pipe: read to the limit, no further
    finally:
        if waiting is not None:
            waiting.cancel()
    refuse_larger(path, kind, len(data), limit, why)
    return data


def read_text(path: str | Path, kind: str, errors: str = "strict") -> str:
    return read_bytes(path, kind).decode("utf-8", errors)


def check_archive(path: str | Path, kind: str) -> None:
    """A checkpoint or snapshots file: a regular file within its kind's limit, whose members unpack within it too."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path} is not a regular file, so it cannot be a {kind}")
    refuse_larger(path, kind, path.stat().st_size)
    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a zip: torch.load says what it is (a legacy file, or not a checkpoint at all)
    if unpacked > LIMITS[kind]:
        raise UsageError(
            f"{path}: refused: its archive unpacks to {unpacked / MB:,.0f} MB, more than a {kind} "
            f"ever holds ({LIMITS[kind] / MB:,.0f} MB)"
        )


def refuse_larger(path: Path, kind: str, size: int, limit: int | None = None, why: str = "") -> None:
    limit = LIMITS[kind] if limit is None else limit
    if size > limit:
        reason = why if limit < LIMITS[kind] and why else f"more than a {kind} ever holds (is it the right file?)"
        raise UsageError(f"{path}: refused: more than {limit / MB:,.0f} MB, {reason}")
