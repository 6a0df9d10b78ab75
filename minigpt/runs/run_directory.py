"""A run's directory: where a run keeps its checkpoints (best.pt, last.pt) and its records
(runs/recorder.py), and the lock that lets one training at a time write there.

A directory that already holds a run is never written into unless the user says so, and
one training at a time holds it (`RunLock`). Only a run directory is written into: a resumed
checkpoint in a folder of other files continues in a new --out. A symbolic link in a run
directory is never written through: files are replaced by a rename, and records and the lock
are opened without following links.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from minigpt.common.failures import cannot_write
from minigpt.errors import RunError, UsageError
from minigpt.files.atomic_file import PARTIAL, write_atomically
from minigpt.files.sniffing import is_checkpoint_file


def new_run_dir() -> Path:
    """runs/<date>_<time>, with a suffix when two runs start in the same second."""
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = Path("runs") / stamp, 1
    while path.exists():
        n += 1
        path = Path("runs") / f"{stamp}_{n}"
    return path


LOCK = ".lock"
RUN_FILES = (
    "best.pt",
    "last.pt",
    "config.toml",
    "metrics.jsonl",
    "samples.txt",
    "loss.png",
    "snapshots.pt",
    "page.html",
)  # what a run writes (the page: minigpt train's, at its end)


class RunLock:
    """One training at a time in a run directory: an exclusive lock on RUN/.lock, which holds the
    process id of the training that has it. The operating system lets go of it when that process
    ends, however it ends."""

    def __init__(
        self,
        run_dir: Path,
        holder: str = "another training",
        advice: str = "wait for it to end, or train into another --out",
        what: str = "run directory",
    ):
        try:
            import fcntl
        except ImportError:  # not a POSIX system: no lock
            self.file = None
            return
        self.file = open_own(run_dir / LOCK, "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.seek(0)
            pid = self.file.read().strip() or "unknown"
            self.file.close()
            raise UsageError(f"{what} {run_dir} is in use by {holder} (process {pid}); {advice}") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        if self.file is not None:
            self.file.close()  # closing lets go of the lock
            self.file = None


def training_now(run_dir: Path) -> str | None:
    """The process id of the training that holds the run directory's lock now, or None when none does (read
    without writing: a folder compared is not touched)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        with open(run_dir / LOCK, encoding="utf-8", errors="replace") as held:
            try:
                fcntl.flock(held, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return held.read().strip() or "unknown"
            fcntl.flock(held, fcntl.LOCK_UN)
    except OSError:
        return None
    return None


def open_own(path: Path, mode: str):
    """Open a run's record or lock for writing, never through a symbolic link: one line says so."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if path.is_symlink():
            raise linked(path, "train into another --out") from None
        raise cannot_write(f"to run directory {path.parent}", e) from None
    return os.fdopen(fd, mode, encoding="utf-8")


def linked(path: Path, or_else: str) -> UsageError:
    return UsageError(
        f"{path} is a symbolic link: minigpt writes only the files a run makes; remove the link, or {or_else}"
    )


def is_run_dir(path: Path) -> bool:
    """What `minigpt train` made: a directory with a best.pt or last.pt checkpoint in it."""
    return any(
        (path / name).is_file() and not (path / name).is_symlink() and is_checkpoint_file(path / name)
        for name in ("best.pt", "last.pt")
    )


def prepare_run_dir(out_dir: str | Path | None, overwrite: bool) -> tuple[Path, RunLock]:
    """Create and lock the run directory; refuse to mix a new run into an old one unless told to,
    and then clear the old run's files first (links as links), so nothing of it outlives the new one's start."""
    run_dir = Path(out_dir) if out_dir is not None else new_run_dir()
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} exists and is not a directory")
    if (run_dir / LOCK).is_symlink() and overwrite:
        (run_dir / LOCK).unlink()
    if (run_dir / LOCK).exists() or (run_dir / LOCK).is_symlink():
        RunLock(run_dir).release()  # says so when a training holds it, or when it is a link
    held = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK) if run_dir.is_dir() else []
    if held and overwrite and not is_run_dir(run_dir):
        shown = ", ".join(held[:5]) + (f" and {len(held) - 5:,} more" if len(held) > 5 else "")
        raise UsageError(
            f"--overwrite replaces a run, and {run_dir} holds no run (no best.pt or last.pt "
            f"checkpoint of minigpt's) but {shown}: nothing of it is touched; train into another --out"
        )
    if held and not overwrite:
        resume = (
            f"--resume {run_dir} (alone: a run goes on with its own recipe) to continue it, "
            if is_run_dir(run_dir)
            else ""
        )
        raise UsageError(
            f"run directory {run_dir} is not empty; pass {resume}another --out, or --overwrite to replace its run"
        )
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        lock = RunLock(run_dir)
        for name in RUN_FILES:
            (run_dir / name).unlink(missing_ok=True)
    except BaseException as e:
        if created:  # no half-made run left behind
            shutil.rmtree(run_dir, ignore_errors=True)
        if isinstance(e, OSError):
            raise cannot_write(f"to run directory {run_dir}", e) from None
        raise
    return run_dir, lock


def reopen_run_dir(run_dir: Path, checkpoint: Path) -> tuple[Path, RunLock]:
    """A resumed run's directory, locked, without the half-written files of a process killed while it
    saved. Only a run directory: a checkpoint among other files would have them replaced."""
    if not is_run_dir(run_dir):
        raise UsageError(
            f"{checkpoint} is not in a run directory (no best.pt or last.pt beside it), and resuming "
            f"writes the run's records where it is; pass --out DIR to continue it in a new run directory"
        )
    for name in (LOCK, *RUN_FILES):
        if (run_dir / name).is_symlink():
            raise linked(run_dir / name, "pass --out DIR to continue in a new run directory")
    lock = RunLock(run_dir)
    for leftover in run_dir.glob(PARTIAL):
        leftover.unlink(missing_ok=True)
    return run_dir, lock


def open_run_dir(resumed_from: Path | None, out_dir, overwrite: bool) -> tuple[Path, RunLock]:
    """The run directory, new or resumed, and this training's lock on it. A resumed run continues
    in its own directory, or in a new one when `out_dir` names it."""
    if resumed_from is not None and out_dir is None:
        return reopen_run_dir(resumed_from.parent, resumed_from)
    if resumed_from is not None and Path(out_dir).resolve() == resumed_from.parent.resolve():
        raise UsageError(f"--out {out_dir} is the directory the run is resumed from; drop --out to continue it there")
    return prepare_run_dir(out_dir, overwrite)


def carry_best_checkpoint(resumed_from: Path, run_dir: Path) -> None:
    """A run continued in a new directory that found no better weights there ends on the best ones of
    the run it continued: their checkpoint is copied in, so that the new directory is a whole run."""
    source, kept = resumed_from.parent / "best.pt", run_dir / "best.pt"
    if kept.exists() or not source.is_file() or source.resolve() == kept.resolve():
        return
    with open(source, "rb") as best:
        write_atomically(
            kept, lambda out: shutil.copyfileobj(best, out), failed=lambda path, e: cannot_write(path, e, RunError)
        )


def discard_if_no_checkpoint(run_dir: Path, keep_folder: bool = False) -> None:
    """A new run that ends before its first checkpoint (a full disk, an error) holds nothing to
    use or resume: remove what it wrote, and its directory when it made it and that is left
    empty (`keep_folder`: the folder was the user's before the run)."""
    if is_run_dir(run_dir):
        return
    for name in (*RUN_FILES, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    for partial in run_dir.glob(PARTIAL):
        partial.unlink(missing_ok=True)
    if keep_folder:
        return
    try:
        run_dir.rmdir()
    except OSError:
        pass  # it holds something else, or was there before
