"""What the explorer page measures, kept between writes: writing the same run's page again is quick.

Measuring the heads and what each part costs, at the checkpoint and at every training snapshot,
is most of a page's writing time, and none of it depends on the name the page starts with or the
file it goes to. So it is kept, keyed by everything it was computed from: the model's weights and
recipe (as loaded, so a model changed in a notebook is measured again), its vocabulary, the run's
snapshots file, the names measured on, the code that measures, and the torch that ran it. A key
that differs in any of these finds nothing, so a stale measurement is never used.

The cache is a folder of JSON files, $MINIGPT_CACHE_DIR or ~/.cache/minigpt/pages (under
$XDG_CACHE_HOME when set), at most KEPT of them, the least recently used removed first; a file
that cannot be read or written is measured again, never an error.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path

import torch

from minigpt.common.failures import warn
from minigpt.common.text import one_line
from minigpt.files import bounded
from minigpt.files.atomic_file import write_text

KEPT = 8  # pages' measurements kept; each is about the size of its page's snapshots data
KEY_FILE = re.compile(r"[0-9a-f]{64}\.json")  # what the cache names its files: a sha256 key
FORMAT = 1  # the layout of a cached file
# the modules whose code computes what is cached
MEASURING = [
    "model.py",
    "measurements/ablation.py",
    "measurements/head_roles.py",
    "measurements/prefix_forest.py",
    "views/page_data.py",
    "measurements/logit_lens.py",
    "measurements/units.py",
    "formats/snapshots.py",
]


SAID: set[str] = set()  # the notes of a missing home folder already given


def cache_dir() -> Path | None:
    """Where the measurements are kept; None, with a note, where the home folder they would go under does not
    exist (a HOME that names nothing): a cache is no reason to make one."""
    if os.environ.get("MINIGPT_CACHE_DIR"):
        return Path(os.environ["MINIGPT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "minigpt" / "pages"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME, and no user entry to find one in
        home = None
    if home is None or not home.is_dir():
        said = f"the home folder {one_line(home)} does not exist" if home is not None else "there is no home folder"
        if said not in SAID:  # once a process: the cache is read, then written
            SAID.add(said)
            warn(
                f"{said}, so the page's measurements are not kept for next time (MINIGPT_CACHE_DIR names a "
                f"folder for them)"
            )
        return None
    return home / ".cache" / "minigpt" / "pages"


def cache_key(ckpt, names: list[str], what: str) -> str:
    """A digest of everything the page's measurements of `ckpt` on `names` are computed from."""
    digest = hashlib.sha256(f"{FORMAT}|{torch.__version__}|{what}".encode())
    package = Path(__file__).resolve().parent.parent
    for module in MEASURING:
        digest.update((package / module).read_bytes())
    weights = io.BytesIO()  # the weights as loaded, names and bytes (torch.save writes the same tensors the same way)
    torch.save({name: tensor.detach().cpu() for name, tensor in ckpt.model.state_dict().items()}, weights)
    digest.update(weights.getvalue())
    digest.update(json.dumps([ckpt.config.to_dict(), ckpt.tokenizer.chars, ckpt.step], sort_keys=True).encode())
    snapshots = ckpt.path.parent / "snapshots.pt"
    if (
        snapshots.is_file() and snapshots.stat().st_size <= bounded.LIMITS["snapshots file"]
    ):  # a larger one is refused when read
        with open(snapshots, "rb") as f:  # in pieces: the key costs no more memory than a piece
            for piece in iter(lambda: f.read(1 << 20), b""):
                digest.update(piece)
    else:
        digest.update(b"no snapshots")
    digest.update("\n".join(names).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def read_cached(key: str, shape: dict) -> dict | None:
    """What was kept under `key`, or None when nothing was, or what is there is not whole: not of `shape`
    ({name: type}; a file replaced, edited or damaged is measured again, never used as it is)."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{key}.json"
    if path.exists() and not path.is_file():  # a pipe in its place would wait for a writer: measured again
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        os.utime(path)  # recently used
    except (OSError, ValueError, RecursionError):
        return None
    whole = (
        isinstance(found, dict) and set(found) == set(shape) and all(isinstance(found[k], t) for k, t in shape.items())
    )
    return found if whole else None


def write_cached(key: str, measured: dict) -> None:
    """Keep `measured` under `key` (atomically: a reader never sees half a file), then drop the oldest past KEPT."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # an OSError stays one (failed=...), for the except below
        write_text(folder / f"{key}.json", json.dumps(measured, separators=(",", ":")), failed=lambda at, error: error)
    except OSError:
        return  # a cache that cannot be written only means measuring again next time
    evict(folder)


def evict(folder: Path) -> None:
    """Remove the least recently used of the cache's own files past KEPT: only files named as it names them
    (a key and .json), never a link, a folder or anyone else's file, and one that cannot be removed is skipped."""
    own = []
    for path in folder.iterdir():
        try:
            if KEY_FILE.fullmatch(path.name) and path.is_file() and not path.is_symlink():
                own.append((path.stat().st_mtime, path))
        except OSError:
            continue
    for _, old in sorted(own, reverse=True)[KEPT:]:
        try:
            old.unlink()
        except OSError:
            pass
