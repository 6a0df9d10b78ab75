"""A run's directory and the records it keeps: config.toml, metrics.jsonl, samples.txt, loss.png.

The checkpoints (best.pt, last.pt) live here too; checkpoint.py writes them.
A directory that already holds a run is never written into unless the user says so.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from minigpt.config import Config
from minigpt.errors import UsageError


def new_run_dir() -> Path:
    """runs/<date>_<time>, with a suffix when two runs start in the same second."""
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = Path("runs") / stamp, 1
    while path.exists():
        n += 1
        path = Path("runs") / f"{stamp}_{n}"
    return path


def prepare_run_dir(out_dir: str | Path | None, overwrite: bool) -> Path:
    """Create the run directory; refuse to mix a new run into an old one unless told to."""
    run_dir = Path(out_dir) if out_dir is not None else new_run_dir()
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()) and not overwrite:
        raise UsageError(f"run directory {run_dir} is not empty; pass --overwrite to replace its run")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write to run directory {run_dir}: {e.strerror or e}") from None
    return run_dir


def reopen_run_dir(run_dir: Path) -> Path:
    """A resumed run's directory, without the half-written files of a process killed while it saved."""
    for leftover in run_dir.glob(".*.pt.*.tmp"):
        leftover.unlink(missing_ok=True)
    return run_dir


def keep_records_up_to(path: Path, step: int, step_of) -> None:
    """Drop lines logged after `step` (a process killed after its last checkpoint wrote them)."""
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(line for line in lines if step_of(line) <= step), encoding="utf-8")


class RunRecords:
    """config.toml, metrics.jsonl (one JSON object a line) and samples.txt; rank 0 keeps them."""

    def __init__(self, run_dir: Path, config: Config, resumed_at: int | None):
        (run_dir / "config.toml").write_text(config.to_toml(), encoding="utf-8")
        if resumed_at is not None:
            keep_records_up_to(run_dir / "metrics.jsonl", resumed_at, lambda line: json.loads(line)["step"])
            keep_records_up_to(run_dir / "samples.txt", resumed_at, lambda line: int(line.split()[1]))
        mode = "a" if resumed_at is not None else "w"
        self.metrics = (run_dir / "metrics.jsonl").open(mode, encoding="utf-8")
        self.samples = (run_dir / "samples.txt").open(mode, encoding="utf-8")

    def log(self, step: int, elapsed: float, **values) -> None:
        record = {"step": step, **values, "elapsed": round(elapsed, 3)}
        self.metrics.write(json.dumps(record) + "\n")
        self.metrics.flush()

    def log_samples(self, line: str) -> None:
        self.samples.write(line + "\n")
        self.samples.flush()


def write_loss_png_if_possible(run_dir: Path) -> None:
    """loss.png beside the checkpoints, when matplotlib is installed."""
    from minigpt.plot import write_loss_png

    try:
        write_loss_png(run_dir, run_dir / "loss.png")
    except UsageError:
        pass  # no matplotlib: `minigpt plot` says how to get it
