"""What a file is, by its content rather than its name: a checkpoint, a snapshots file, an export,
a run's records, a recipe, a names file. A command handed the wrong kind says what it was handed
and which command takes it, in one line.

Only the file's start is read (SNIFF bytes; for a zip, the small pickle that names its format), so
identifying a file costs the same whatever its size.
"""

from __future__ import annotations

import json
import re
import tomllib
import zipfile
from pathlib import Path

from minigpt.files import bounded

CHECKPOINT_START = b"PK\x03\x04"  # torch.save writes a zip archive
SNIFF = 64 * 1024  # what is read of a file to tell what it is
CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # what no names file holds (\t, \n, \f, \r it may)
PICKLE = 1024 * 1024  # the most read of a zip's data.pkl: a checkpoint's is a few kilobytes (tensors are apart)


def first_bytes(path, count: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(count)
    except OSError:
        return None


def is_checkpoint_file(path) -> bool:
    return first_bytes(path, 4) == CHECKPOINT_START


def identify(path, reading: str | None = None) -> str | None:
    """What the file at `path` is, as a phrase ("a names file", "a checkpoint", ...), or None when it
    cannot be read or is none of the kinds minigpt knows. `reading`: the kind the caller reads it as
    (files/bounded.py's LIMITS); a file past that kind's bound is None, so the bound is what is said."""
    if not Path(path).is_file():  # a pipe or a device is read once, by the command it was handed to
        return None
    if reading is not None and Path(path).stat().st_size > bounded.LIMITS[reading]:
        return None
    start = first_bytes(path, SNIFF)
    if start is None:
        return None
    if start.startswith(CHECKPOINT_START):
        return zip_kind(path)
    if len(start) >= 9 and start[8:9] == b"{" and not start.lstrip().startswith(b"{"):
        return "a safetensors file"  # an 8-byte header length, then its JSON header
    try:
        text = start.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if e.start < len(start) - 4:  # not a character cut at the end of what was read
            # NUL bytes inside: a binary file; else text in another encoding, which reading says of itself
            return "a binary file" if b"\0" in start.rstrip(b"\0") else None
        text = start[: e.start].decode("utf-8-sig", errors="ignore")
    return text_kind(text, whole=len(start) < SNIFF)


def zip_kind(path) -> str:
    """A checkpoint, a snapshots file, or another zip, by the format its pickle names."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [info for info in archive.infolist() if info.filename.endswith("data.pkl")]
            if not pickles or pickles[0].file_size > PICKLE:
                return "a zip archive"
            pickle = archive.read(pickles[0])
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError):
        return "a damaged zip archive"
    if b"minigpt-snapshots" in pickle:
        return "a snapshots file"
    return "a checkpoint" if b"minigpt" in pickle else "a zip archive"


def text_kind(text: str, whole: bool) -> str | None:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return json_kind(stripped, whole)
    first = stripped.splitlines()[0] if stripped else ""
    if re.match(r"step \d+  val ", first):
        return "a run's samples (samples.txt)"
    if whole and is_recipe(text):
        return "a recipe"
    if stripped.startswith("["):  # a JSON list (a TOML file starts with a [section] too: tried first)
        try:
            json.loads(stripped)
            return "a JSON file"
        except (ValueError, RecursionError):
            pass
    if not stripped:
        return "an empty file"
    # names are text: control characters other than line ends and tabs say it is something else
    if CONTROL.search(text.rstrip("\0")):
        return None
    return "a text file" if is_prose(stripped) else "a names file"


def is_prose(text: str) -> bool:
    """Lines of sentences rather than names: a quarter of them or more four words long or longer (a README, a
    book). A name of three words is still a name."""
    lines = [line for line in text.splitlines()[:1000] if line.strip()]
    return sum(len(line.split()) >= 4 for line in lines) * 4 >= len(lines) > 0


def json_kind(text: str, whole: bool) -> str:
    lines = text.splitlines()
    try:
        first = json.loads(lines[0])
        if (
            isinstance(first, dict)
            and "step" in first
            and len(lines) > 1
            or isinstance(first, dict)
            and "elapsed" in first
        ):
            return "a run's metrics (metrics.jsonl)"
    except (ValueError, IndexError, RecursionError):
        pass
    if not whole:  # a large JSON document: microgpt's weights, by the keys near its start
        return "microgpt's JSON" if '"state_dict"' in text or '"uchars"' in text else "a JSON file"
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return "a JSON file"
    if isinstance(document, dict) and {"hyperparameters", "uchars", "state_dict"} <= document.keys():
        return "microgpt's JSON"
    if isinstance(document, dict) and ("minigpt_config" in document or {"vocab", "n_embd"} <= document.keys()):
        return "a safetensors export's config.json"
    return "a JSON file"


def is_recipe(text: str) -> bool:
    try:
        table = tomllib.loads(text.rstrip("\0"))
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    return (
        bool(table) and set(table) <= {"model", "train", "sample"} and all(isinstance(v, dict) for v in table.values())
    )


def what_takes(kind: str, path) -> str:
    """Which command takes a file of this kind, as a sentence's end: "minigpt train --data X trains on it"."""
    path, where = Path(path), Path(path).parent
    return {
        "a names file": f"minigpt train --data {path} trains on it, and eval and ablate score it with --data",
        "a recipe": f"minigpt train --config {path} trains with it",
        "a run's metrics (metrics.jsonl)": f"minigpt plot {where} draws it",
        "a run's samples (samples.txt)": f"the run's checkpoints are beside it: minigpt sample {where}",
        "a snapshots file": f"minigpt inspect-attention {where} NAME --step N reads it",
        "microgpt's JSON": f"minigpt import {path} OUT.pt makes a checkpoint of it",
        "a safetensors file": f"minigpt import {where} OUT.pt makes a checkpoint of it",
        "a safetensors export's config.json": f"minigpt import {where} OUT.pt makes a checkpoint of it",
        "a checkpoint": f"minigpt sample {path} reads it",
        "a text file": "a names file has one name a line; minigpt train --data FILE trains on one",
    }.get(kind, "minigpt reads no file of this kind")


# the kinds named when handed where another belongs; an empty file or one of no known kind is left to
# the reader, which says what is wrong with it as that kind
KNOWN = (
    "a checkpoint",
    "a snapshots file",
    "a safetensors file",
    "microgpt's JSON",
    "a run's metrics (metrics.jsonl)",
    "a safetensors export's config.json",
    "a recipe",
    "a run's samples (samples.txt)",
    "a names file",
    "a text file",
)
# what is never read as names: every known kind but names and text (its lines are the user's to train on), and
# files no names file is
NOT_NAMES = tuple(kind for kind in KNOWN if kind not in ("a names file", "a text file")) + (
    "a binary file",
    "a zip archive",
    "a JSON file",
)


def wrong_kind(path, kind: str, wanted: str) -> str:
    """One line for a file handed where another kind belongs: what it is, and the command that takes it."""
    return f"{path} is {kind}, not {wanted}: {what_takes(kind, path)}"
