"""Where a checkpoint is: a file, or a run directory's best.pt (or last.pt), found and checked for its
kind without torch, so that a command given a wrong path says so before it loads torch's seconds."""

from __future__ import annotations

from pathlib import Path

from minigpt.common.arguments import as_path
from minigpt.errors import UsageError
from minigpt.files.sniffing import KNOWN, identify, wrong_kind

NAMES_IN_DIR = ("best.pt", "last.pt")  # what sample, eval and inspect read from a run directory
RESUME_ORDER = ("last.pt", "best.pt")  # what a resumed run continues from


def resolve_checkpoint_path(path: str | Path, prefer: tuple[str, ...] = NAMES_IN_DIR) -> Path:
    """A checkpoint file, or a run directory (its best.pt, else its last.pt; or as `prefer` says)."""
    path = as_path(path, "a checkpoint")
    if not path.exists():
        hint = "" if path.suffix else f" (a run's directory: train one there with minigpt train --out {path})"
        raise UsageError(f"checkpoint not found: {path}{hint}")
    if path.is_dir():
        for name in prefer:
            if (path / name).is_file():
                return path / name
        if (path / "model.safetensors").is_file():
            raise UsageError(
                f"{path} is a safetensors export, not a run: minigpt import {path} OUT.pt makes a checkpoint of it"
            )
        raise UsageError(f"no checkpoint in directory {path} (expected best.pt or last.pt)")
    kind = identify(path, "checkpoint")
    if kind == "an empty file":
        raise UsageError(f"{path} is empty, not a checkpoint")
    if kind in KNOWN and kind != "a checkpoint":
        raise UsageError(wrong_kind(path, kind, "a checkpoint"))
    return path
