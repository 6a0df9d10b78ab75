"""`minigpt export`: a checkpoint's weights, under microgpt's names, as microgpt's JSON or as
safetensors, and which of the two a plain export writes."""

from __future__ import annotations

from pathlib import Path

from minigpt.common.text import one_line
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import load_checkpoint
from minigpt.formats.microgpt_json import export_microgpt, microgpt_misfits
from minigpt.formats.safetensors_files import export_safetensors

EXPORTERS = {"microgpt": export_microgpt, "safetensors": export_safetensors}


def export_checkpoint(
    checkpoint: str | Path, out: str | Path, format: str | None = None, overwrite: bool = False
) -> Path:
    """Export in `format` ("microgpt" or "safetensors"; None: `export_format` chooses). Returns
    the path written."""
    if format is not None and format not in EXPORTERS:
        raise UsageError(f"unknown export format '{format}' (microgpt or safetensors)")
    out = Path(out)
    if format is None:
        format, out = export_format(checkpoint, out)
    EXPORTERS[format](checkpoint, out, overwrite)
    return out


def export_format(checkpoint: str | Path, out: Path) -> tuple[str, Path]:
    """The format a plain export writes: microgpt's JSON for OUT.json, safetensors into a folder for any
    other name. A model microgpt cannot run is refused for OUT.json, with the folder that holds it: what is
    written is always the name asked for."""
    if out.suffix.lower() != ".json":
        return "safetensors", out
    misfits = microgpt_misfits(load_checkpoint(checkpoint).config.model)
    if misfits:
        raise UsageError(
            f"microgpt cannot run this model ({', '.join(misfits)}), so {one_line(out)} cannot hold "
            f"it: export it as safetensors into a folder, minigpt export {one_line(checkpoint)} "
            f"{one_line(out.with_suffix(''))}"
        )
    return "microgpt", out
