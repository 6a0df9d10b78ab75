"""A run's records, line by line: metrics.jsonl and samples.txt, written and read here alone.

    metrics.jsonl   one JSON object a line: {"step": 250, "train_loss": 2.03, ..., "elapsed": 6.1}
    samples.txt     one evaluation a line: `step 250  val 2.1095`, then each name after a tab (* = a training name,
                    … = cut at the block size)

The run writes them (runs/recorder.py); `plot`, the training summary, the explorer page and a
resumed run read them.
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

from minigpt.common.failures import warn
from minigpt.common.text import loss_text, one_line
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.bounded import read_bytes, read_text
from minigpt.files.fields import expect, whole_number
from minigpt.files.sniffing import identify

METRICS, SAMPLES = "metrics.jsonl", "samples.txt"
LARGEST_LOSS = 3.4028234663852886e38  # the largest float32: no loss a model computes is larger


def metrics_line(step: int, elapsed: float, **values) -> str:
    return strict_json.dumps({"step": step, **values, "elapsed": round(elapsed, 3)})


def metrics_step(line: str) -> int:
    """The step a line of metrics.jsonl was logged at; a ValueError when the line is no record."""
    step = json.loads(line)["step"]
    if not isinstance(step, int) or isinstance(step, bool):
        raise ValueError(f"step {step!r} is not a whole number")
    return step


def samples_line(step: int, val_loss: float | None, names: list[tuple[str, bool]]) -> str:
    """`step 250  val 2.1095` and the names after a tab each (`pernell⇥valena*`, * = a training name): a tab,
    which one_line writes as \\t inside a name, keeps names with spaces apart ("bishop's farngat")."""
    listed = "\t".join(
        f"{one_line(name)}*" if seen else one_line(name) for name, seen in names
    )  # no raw escapes in a file
    return f"step {step}  val {loss_text(val_loss)}\t{listed}"


def samples_step(line: str) -> int:
    return int(line.split()[1])


def read_metrics(run_dir: str | Path) -> list[dict]:
    """Every record of a run's metrics.jsonl; a last line cut short as it was written is left out, with a note."""
    path = Path(run_dir) / METRICS
    if Path(run_dir).is_file():
        kind = identify(run_dir) or "a file"
        raise UsageError(f"{run_dir} is {kind}, not a run directory: give the folder that holds a run's metrics.jsonl")
    if not Path(run_dir).is_dir():
        raise UsageError(f"run directory not found: {run_dir}")
    if not path.is_file():
        raise UsageError(f"no metrics.jsonl in {run_dir}: not a minigpt run directory")
    records = []
    raw = read_bytes(path, "metrics file")
    last = raw.count(b"\n") + (not raw.endswith(b"\n"))
    # a line at a time, never the whole file as text and a list of lines besides its records: a long run's
    # metrics (100 MB) took 1 GB to compare
    for number, line in enumerate(io.BytesIO(raw), 1):
        try:
            record = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            if number == last:  # cut short as it was written (a full disk, a killed process)
                warn(f"{path}: the last line was cut short when it was written; it is left out")
                break
            raise UsageError(f"{path}: line {number} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int) or isinstance(record["step"], bool):
            raise UsageError(
                f"{path}: line {number} is not one of minigpt's records (an object with a whole-number step)"
            )
        check_record(record, f"{path}, line {number}")
        # each record's keys are the same few words: one copy of each, not one a line (half a record's memory)
        records.append({sys.intern(key): value for key, value in record.items()})
    return records


def check_record(record: dict, where: str) -> None:
    """Every field minigpt writes, of its type and in its range (a key of another version is left alone):
    an edited or damaged file is refused in one line, before any arithmetic is done with it."""
    whole_number(record["step"], where, "'step'")
    for key, value in record.items():
        if key in ("train_loss", "val_loss", "lr", "tokens_per_sec") and value is not None:
            record_number(value, where, key)  # null (or an older version's NaN): a loss that was not a number
        elif key == "elapsed":
            record_number(value, where, key)
        elif key in ("threads", "processes"):
            whole_number(value, where, f"'{key}'", least=1)
        elif key == "tokens":
            whole_number(value, where, f"'{key}'", least=0)
        elif key in ("torch", "device"):
            expect(value, str, where, f"'{key}'")


def record_number(value, where: str, key: str) -> float:
    """A loss, rate or time: a number from 0 to the largest float32; a loss may be NaN or infinite (a diverged
    run, an older version's record), which no reader counts."""
    expect(value, float, where, f"'{key}'")
    if not 0 <= value <= LARGEST_LOSS and not (not math.isfinite(value) and key.endswith("loss")):
        raise UsageError(f"{where}: '{key}' should be a number from 0 to {LARGEST_LOSS:.3g}, and it is {value!r}")
    return value


def series(records: list[dict], key: str) -> list[tuple[int, float]]:
    """(step, value) of every record that logged `key`."""
    return [
        (r["step"], r[key])
        for r in records  # a nan or inf logged (a diverged run, an edited file) is not drawn
        if isinstance(r.get(key), (int, float)) and math.isfinite(r[key]) and isinstance(r.get("step"), int)
    ]


def lines_up_to(path: Path, step: int, step_of) -> str | None:
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
        except (ValueError, IndexError, KeyError, TypeError, RecursionError):
            if number < len(lines):
                raise UsageError(
                    f"{path}: line {number} is not one of minigpt's records; the run's records are "
                    f"left as they are: move the file, or pass --out DIR to continue in a new run directory"
                ) from None
            if "\0" in line or "\ufffd" in line:  # bytes no record holds: the file is damaged, not cut short
                aside = kept_aside(path)
                warn(
                    f"{path}: line {number} is damaged (bytes no record holds); the file is kept as {aside}, and the "
                    f"run goes on with the records before it"
                )
            else:
                warn(f"{path}: line {number} was cut short when it was written, and is dropped")
            continue
        if logged_at <= step:
            kept.append(line + "\n")
    return "".join(kept)


def kept_aside(path: Path) -> Path:
    """A copy of a damaged record beside it (NAME.damaged, or NAME.damaged-2, ...), before it is written again."""
    import shutil

    aside, n = path.with_name(f"{path.name}.damaged"), 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{n}")
    shutil.copyfile(path, aside)
    return aside
