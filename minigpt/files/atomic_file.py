"""Writing a file so that a reader finds the old one or the new one, never half of one.

Every file minigpt writes (checkpoints, snapshots, pages, pictures, exports, a run's recipe)
goes to a private temporary file beside its place, is flushed to the disk, and is renamed over
its place in one step: Ctrl-C, SIGTERM or a full disk while it is written leave what was there
before. A rename replaces a symbolic link at that place rather than writing through it, so the
target of a link someone put there is never overwritten. And nothing is written over a file that
is there unless the user says so, nor anything but a checkpoint over a checkpoint (`refuse_existing`).
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from minigpt.common.failures import cannot_write
from minigpt.errors import UsageError
from minigpt.files.sniffing import is_checkpoint_file

# what each kind of output is, and the endings its file may have: a file named for one format never gets
# another's bytes (--html e.png, explore(...).save("x.txt"))
ENDINGS = {
    "html": ("an HTML page", (".html", ".htm")),
    "png": ("a PNG picture", (".png",)),
    "json": ("JSON", (".json",)),
}


def other_ending(path: Path, kind: str) -> tuple[str, tuple[str, ...]] | None:
    """(what `kind` is, the endings it takes) when `path` ends in another's; None when its name fits (or has no
    ending)."""
    what, endings = ENDINGS[kind]
    return (what, endings) if path.suffix and path.suffix.lower() not in endings else None


def refuse_existing(
    path, overwrite: bool, may_replace_checkpoint: bool = False, only_over_checkpoints: bool = False
) -> None:
    """The one guard of every output: what is at `path` (the entry itself, a link not followed) is replaced
    only when it is a file or a link, only with --overwrite, a checkpoint only by a checkpoint, and, for a
    checkpoint written (`only_over_checkpoints`), nothing but a checkpoint (a names file stays one)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise cannot_write(path, e) from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        what = "a folder" if stat.S_ISDIR(mode) else "not a file (a pipe, a device or a socket)"
        raise UsageError(f"{path} is {what}: minigpt writes over nothing but a file; choose another name")
    checkpoint = stat.S_ISREG(mode) and is_checkpoint_file(path)
    if checkpoint and not may_replace_checkpoint:
        raise UsageError(f"{path} is a checkpoint: minigpt never writes anything else over one; choose another file")
    if not overwrite:
        link = " (a symbolic link, which would be replaced, not followed)" if stat.S_ISLNK(mode) else ""
        raise UsageError(f"{path} already exists{link}; pass --overwrite to replace it")
    if only_over_checkpoints and stat.S_ISREG(mode) and not checkpoint:
        raise UsageError(f"{path} is not a checkpoint: a checkpoint replaces only a checkpoint; choose another file")


PARTIAL = ".*.tmp"  # a write in progress beside its place (mkstemp below), as a glob: what a killed process leaves


def write_atomically(path: str | Path, write: Callable[[io.BufferedWriter], object], failed=cannot_write) -> Path:
    """Call `write` on a temporary file beside `path`, then rename it to `path`. An OSError becomes
    `failed(path, error)` (by default the one-line error for an output that cannot be written)."""
    path = Path(path)
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise failed(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        ordinary_file(partial)
        os.replace(partial, path)
    except BaseException as e:
        Path(partial).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise failed(path, e) from None
        raise
    fsync_directory(path.parent)
    return path


def write_files_together(directory: Path, files: dict[str, bytes], failed=cannot_write) -> None:
    """Several files of one directory (an export's weights and config), each written whole to a temporary file
    beside its place before any is renamed over what was there: a full disk or Ctrl-C while writing leaves the
    old files as they were, and only the renames themselves stand between the old set and the new."""
    partials = []
    try:
        for name, data in files.items():
            fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            partials.append((partial, directory / name))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            ordinary_file(partial)
        for partial, path in partials:
            os.replace(partial, path)
    except BaseException as e:
        for partial, _ in partials:
            Path(partial).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise failed(directory, e) from None
        raise
    fsync_directory(directory)


def write_bytes(path: str | Path, data: bytes | memoryview, failed=cannot_write) -> Path:
    return write_atomically(path, lambda f: f.write(data), failed)


def write_text(path: str | Path, text: str, failed=cannot_write) -> Path:
    return write_bytes(path, text.encode("utf-8"), failed)


def ordinary_file(path) -> None:
    """Give a written file the permissions of any other the user makes (mkstemp leaves it 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; a directory that cannot be opened is left to the system."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
