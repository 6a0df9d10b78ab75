"""What a file is, by its first bytes rather than its name: a checkpoint or an export."""

from __future__ import annotations

from pathlib import Path

CHECKPOINT_START = b"PK\x03\x04"  # torch.save writes a zip archive


def first_bytes(path, count: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(count)
    except OSError:
        return None


def is_checkpoint_file(path) -> bool:
    return first_bytes(path, 4) == CHECKPOINT_START


def exported_as(path: Path) -> str | None:
    """What an exported file is, by its first bytes (a checkpoint is a zip: "PK"): microgpt's JSON or safetensors."""
    start = first_bytes(path, 16)
    if start is None:
        return None
    if start.lstrip()[:1] == b"{":
        return "microgpt's JSON"
    if len(start) >= 9 and start[8:9] == b"{":  # safetensors: an 8-byte header length, then its JSON header
        return "a safetensors file"
    return None
