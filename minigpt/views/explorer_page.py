"""The explorer page: one self-contained HTML file that runs a trained model in the browser.

The page carries what views/page_data.py gathers (the model's weights as one base64 float32
buffer, its recipe and vocabulary, the run's loss curve, the training names to mark generated
names that are not new, and the page's measurements), and the JavaScript in
`minigpt/views/web/`: `model.js`, the forward pass written to be read beside model.py, and the
page around it, in parts (`explorer/`, each a namespace; `explorer_parts` orders them). Nothing is fetched: the file
opens from disk with no server and no network.

    write_page("runs/names", "emma.html", text="emma")     # what `inspect-attention --html` does
"""

from __future__ import annotations

import re
from pathlib import Path

from minigpt.common.failures import cannot_write
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.atomic_file import refuse_existing, write_text
from minigpt.formats.checkpoint import Checkpoint, as_checkpoint
from minigpt.views.page_data import page_data
from minigpt.views.web_files import lesson_count, web_file, web_folder


def script_json(data: dict) -> str:
    """JSON that is safe inside <script>: no "<", ">" or "&" that could end the element early."""
    text = strict_json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # a nan is null: the page still parses
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# The page's parts, each a namespace of its own: state.js, drawing.js and measures.js first (every part reads
# them when it is defined), wiring.js last (it builds the panels and starts the page). The others never call
# each other, so they come in any order: by name.
FIRST_PARTS, LAST_PARTS = ["state.js", "drawing.js", "measures.js"], ["wiring.js"]


def explorer_parts() -> list[str]:
    """The part files of web/explorer/, in the order the page's script puts them."""
    middle = sorted(set(web_folder("explorer")) - set(FIRST_PARTS + LAST_PARTS))
    return FIRST_PARTS + [name for name in middle if name.endswith(".js")] + LAST_PARTS


def explorer_script() -> str:
    """The page's own script: paint.js (which the two-run page shares), then its parts one after another."""
    return "\n".join([web_file("paint.js")] + [web_file(f"explorer/{part}") for part in explorer_parts()])


def render_page(data: dict) -> str:
    """The template with its stylesheet, data and scripts put in place (in one pass, so no part is read twice)."""
    parts = {
        "CSS": web_file("base.css") + web_file("explorer.css"),
        "DATA": script_json(data),
        "MODEL_JS": web_file("model.js"),
        "EXPLORER_JS": explorer_script(),
    }
    return re.sub(r"/\*(CSS|DATA|MODEL_JS|EXPLORER_JS)\*/", lambda m: parts[m.group(1)], web_file("explorer.html"))


def write_page(
    checkpoint: str | Path | Checkpoint,
    out: str | Path,
    text: str | None = None,
    overwrite: bool = False,
    progress=None,
    lesson: int | None = None,
) -> Path:
    """Write the explorer page for a checkpoint (a file, a run directory, or a loaded Checkpoint) to `out`.
    `progress(done, total)` is told as each training snapshot is measured; `lesson` (1 to lesson_count()): the page
    opens at that lesson when its address names no view."""
    lessons = lesson_count()
    if lesson is not None and not (type(lesson) is int and 1 <= lesson <= lessons):
        raise UsageError(f"the explorer page's course has lessons 1 to {lessons}, got lesson {lesson!r}")
    out = page_destination(out, overwrite)
    ckpt = as_checkpoint(checkpoint)
    if not ckpt.config.model.causal:  # its head roles, costs and lessons are all measured under the mask
        raise UsageError(
            f"{ckpt.path} was trained without the causal mask (model.causal = false), and the explorer "
            f"page reads a model under it; put it beside a masked run on the page of two models: "
            f"minigpt inspect-attention MASKED_RUN {ckpt.path.parent} --html PAGE"
        )
    data = page_data(ckpt, text, progress)
    data["start_view"] = f"lesson={lesson}" if lesson else ""
    return save_page(render_page(data), out, overwrite)


def page_destination(out: str | Path, overwrite: bool) -> Path:
    """Where a page is to be written, checked before any work: its folder exists, it is no folder, and a file
    there stays unless `overwrite`."""
    out = Path(out)
    if not out.parent.is_dir():
        raise cannot_write(out, f"the directory {out.parent} does not exist")
    if out.is_dir():
        raise cannot_write(out, "it is a directory")
    refuse_existing(out, overwrite)
    return out


def save_page(page: str, out: Path, overwrite: bool = False) -> Path:
    """Write a page to `out` as checkpoints are written: a temporary file beside it, then one rename, so
    an interrupted write never leaves half a page (or an empty file) where an older one was."""
    refuse_existing(out, overwrite)
    return write_text(out, page)
