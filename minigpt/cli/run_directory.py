"""A run's directory and the records it keeps: config.toml, metrics.jsonl, samples.txt, loss.png,
and `TrainResult`, what a finished run sums up.

The checkpoints (best.pt, last.pt) live here too; checkpoint.py writes them.
A directory that already holds a run is never written into unless the user says so, and
one training at a time holds it (`RunLock`). Only a run directory is written into: a resumed
checkpoint in a folder of other files continues in a new --out. A symbolic link in a run
directory is never written through: files are replaced by a rename, and records and the lock
are opened without following links.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from minigpt.cli import display
from minigpt.cli.display import warn
from minigpt.cli.errors import RunError, UsageError, as_text, is_checkpoint_file
from minigpt.formats.atomic_file import PARTIAL, write_text
from minigpt.config import Config
from minigpt.formats.bounded import read_text
from minigpt.formats import strict_json


def new_run_dir() -> Path:
    """runs/<date>_<time>, with a suffix when two runs start in the same second."""
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = Path("runs") / stamp, 1
    while path.exists():
        n += 1
        path = Path("runs") / f"{stamp}_{n}"
    return path


LOCK = ".lock"
RUN_FILES = ("best.pt", "last.pt", "config.toml", "metrics.jsonl", "samples.txt", "loss.png", "snapshots.pt")  # what a run writes


class RunLock:
    """One training at a time in a run directory: an exclusive lock on RUN/.lock, which holds the
    process id of the training that has it. The operating system lets go of it when that process
    ends, however it ends."""

    def __init__(self, run_dir: Path):
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
            holder = self.file.read().strip() or "unknown"
            self.file.close()
            raise UsageError(f"run directory {run_dir} is in use by another training (process {holder}); "
                             f"wait for it to end, or train into another --out") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        if self.file is not None:
            self.file.close()  # closing lets go of the lock
            self.file = None


def open_own(path: Path, mode: str):
    """Open a run's record or lock for writing, never through a symbolic link: one line says so."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if path.is_symlink():
            raise linked(path, "train into another --out") from None
        raise UsageError(f"cannot write to run directory {path.parent}: {e.strerror or e}") from None
    return os.fdopen(fd, mode, encoding="utf-8")


def linked(path: Path, or_else: str) -> UsageError:
    return UsageError(f"{path} is a symbolic link: minigpt writes only the files a run makes; remove the link, or {or_else}")


def cannot_write_run(path: Path, e: OSError) -> RunError:
    return RunError(f"could not write {path}: {e.strerror or e}")


def is_run_dir(path: Path) -> bool:
    """What `minigpt train` made: a directory with a best.pt or last.pt checkpoint in it."""
    return any((path / name).is_file() and not (path / name).is_symlink() and is_checkpoint_file(path / name)
               for name in ("best.pt", "last.pt"))


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
    if run_dir.is_dir() and any(p.name != LOCK for p in run_dir.iterdir()) and not overwrite:
        resume = f"--resume {run_dir} to continue it, or " if is_run_dir(run_dir) else ""
        raise UsageError(f"run directory {run_dir} is not empty; pass {resume}--overwrite to replace its run")
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
            raise UsageError(f"cannot write to run directory {run_dir}: {e.strerror or e}") from None
        raise
    return run_dir, lock


def reopen_run_dir(run_dir: Path, checkpoint: Path) -> tuple[Path, RunLock]:
    """A resumed run's directory, locked, without the half-written files of a process killed while it
    saved. Only a run directory: a checkpoint among other files would have them replaced."""
    if not is_run_dir(run_dir):
        raise UsageError(f"{checkpoint} is not in a run directory (no best.pt or last.pt beside it), and resuming "
                         f"writes the run's records where it is; pass --out DIR to continue it in a new run directory")
    for name in (LOCK, *RUN_FILES):
        if (run_dir / name).is_symlink():
            raise linked(run_dir / name, "pass --out DIR to continue in a new run directory")
    lock = RunLock(run_dir)
    for leftover in run_dir.glob(PARTIAL):
        leftover.unlink(missing_ok=True)
    return run_dir, lock


def open_run_dir(resumed_from: Path | None, out_dir, overwrite: bool, held: list) -> Path:
    """The run directory, new or resumed, locked for this training; the lock goes into `held`.
    A resumed run continues in its own directory, or in a new one when `out_dir` names it."""
    if resumed_from is not None and out_dir is None:
        run_dir, lock = reopen_run_dir(resumed_from.parent, resumed_from)
    else:
        if resumed_from is not None and Path(out_dir).resolve() == resumed_from.parent.resolve():
            raise UsageError(f"--out {out_dir} is the directory the run is resumed from; drop --out to continue it there")
        run_dir, lock = prepare_run_dir(out_dir, overwrite)
    held.append(lock)
    return run_dir


def discard_if_no_checkpoint(run_dir: Path) -> None:
    """A new run that ends before its first checkpoint (a full disk, an error) holds nothing to
    use or resume: remove what it wrote, and its directory when that is left empty."""
    if is_run_dir(run_dir):
        return
    for name in (*RUN_FILES, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    for partial in run_dir.glob(PARTIAL):
        partial.unlink(missing_ok=True)
    try:
        run_dir.rmdir()
    except OSError:
        pass  # it holds something else, or was there before


def records_up_to(path: Path, step: int, step_of) -> str | None:
    """The lines logged up to `step`: those after it (a process killed after its last checkpoint
    wrote them) are dropped, and a last line cut short (a disk that filled while it was written),
    with a note. A file with a line that is not a record before its last is not minigpt's: refused,
    and left as it is. None when there is no such file."""
    if not path.exists():
        return None
    lines = read_text(path, "metrics file", errors="replace").splitlines()
    kept = []
    for number, line in enumerate(lines, 1):
        try:
            logged_at = step_of(line)
        except (ValueError, IndexError, KeyError, TypeError):
            if number < len(lines):
                raise UsageError(f"{path}: line {number} is not one of minigpt's records; the run's records are "
                                 f"left as they are: move the file, or pass --out DIR to continue in a new run directory") from None
            warn(f"{path}: line {number} was cut short when it was written, and is dropped")
            continue
        if logged_at <= step:
            kept.append(line + "\n")
    return "".join(kept)


class RunRecords:
    """config.toml, metrics.jsonl (one JSON object a line) and samples.txt; rank 0 keeps them.

    A resumed run's records are read and checked before any file is written."""

    def __init__(self, run_dir: Path, config: Config, resumed_at: int | None):
        kept = {}
        if resumed_at is not None:
            kept["metrics.jsonl"] = records_up_to(run_dir / "metrics.jsonl", resumed_at, lambda line: json.loads(line)["step"])
            kept["samples.txt"] = records_up_to(run_dir / "samples.txt", resumed_at, lambda line: int(line.split()[1]))
        write_text(run_dir / "config.toml", config.to_toml(), failed=cannot_write_run)
        for name, text in kept.items():
            if text is not None:
                write_text(run_dir / name, text, failed=cannot_write_run)
        mode = "a" if resumed_at is not None else "w"
        self.metrics = open_own(run_dir / "metrics.jsonl", mode)
        self.samples = open_own(run_dir / "samples.txt", mode)

    def log(self, step: int, elapsed: float, **values) -> None:
        record = {"step": step, **values, "elapsed": round(elapsed, 3)}
        self.write(self.metrics, strict_json.dumps(record))

    def log_samples(self, line: str) -> None:
        self.write(self.samples, line)

    def write(self, file, line: str) -> None:
        """One whole line; when it cannot be written (a full disk), the run stops and says so.

        A line cut short by a full disk is dropped, with a note, when the run resumes.
        """
        try:
            file.write(line + "\n")
            file.flush()
        except OSError as e:
            raise RunError(f"could not write {file.name}: {e.strerror or e}; the checkpoints already written "
                           f"are intact, and the run resumes from last.pt") from None


def record_evaluation(records: RunRecords, trainer, console, quiet: bool) -> None:
    """After an evaluation: its loss in metrics.jsonl, and the same few samples in samples.txt and on screen."""
    if trainer.val_loss is not None:
        records.log(trainer.step, trainer.elapsed, val_loss=trainer.val_loss)
    names = trainer.samples()
    records.log_samples(display.samples_line(trainer.step, trainer.val_loss, names))
    if not quiet:
        display.samples_table(console, trainer.step, trainer.val_loss, names)


def prepare_loss_png() -> None:
    """At a run's start: what drawing loss.png needs is loaded meanwhile (views/loss_curve.py)."""
    from minigpt.views.loss_curve import import_pyplot_meanwhile

    import_pyplot_meanwhile()


def write_loss_png_if_possible(run_dir: Path) -> None:
    """loss.png beside the checkpoints, when matplotlib is installed."""
    from minigpt.views.loss_curve import write_loss_png

    try:
        write_loss_png(run_dir, run_dir / "loss.png")
    except UsageError:
        pass  # no matplotlib: `minigpt plot` says how to get it


@dataclass
class TrainResult:
    run_dir: Path
    steps: int
    seconds: float  # time spent in training steps (evaluation and saving excluded)
    tokens: int  # predicted tokens trained on (padding excluded)
    train_loss: float | None
    val_loss: float | None
    best_val_loss: float | None
    samples: list[tuple[str, bool]] = field(default_factory=list)  # (name, seen in training)
    best_step: int | None = None  # the step of the best validation loss
    ended_on_best: bool = False  # the model was set back to its best weights at the end
    stopped_early: bool = False  # train.patience evaluations passed without a better validation loss

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        """What `minigpt train --json` prints."""
        return {
            "run_dir": as_text(self.run_dir),
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "tokens": self.tokens,
            "tokens_per_sec": round(self.tokens_per_sec, 1),
            "train_loss": self.train_loss,
            "val_loss": self.val_loss,
            "best_val_loss": self.best_val_loss,
            "best_step": self.best_step,
            "stopped_early": self.stopped_early,
            "ended_on_best": self.ended_on_best,
            "samples": [name for name, _ in self.samples],
            "new_samples": sum(not seen for _, seen in self.samples),
        }
