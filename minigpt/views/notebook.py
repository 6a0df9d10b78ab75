"""minigpt in a notebook: the explorer page inline, and the attention grid as a picture.

    from minigpt import explore, attention_grid
    explore("runs/names", text="emma")        # the explorer page in the output cell
    attention_grid(ckpt, "emma")               # every head's weights, one PNG (--png's grid)

The page is the file `inspect-attention --html` writes, carried whole in an <iframe srcdoc>:
it needs no server, no CDN and no network, so it shows wherever a notebook shows HTML
(JupyterLab and VS Code once the notebook is trusted, since the page runs scripts; Colab).
Each explorer is its own document, so two in one notebook do not meet; the page sizes its
frame to its content when it finds itself in one.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from pathlib import Path

from minigpt.common.arguments import as_path
from minigpt.common.text import as_text
from minigpt.errors import UsageError
from minigpt.files.atomic_file import other_ending, refuse_existing, write_bytes
from minigpt.files.names_file import refuse_unseen
from minigpt.formats.checkpoint import Checkpoint, as_checkpoint


class Explorer:
    """The explorer page of one checkpoint: shown inline by a notebook, or saved with `.save(path)`."""

    def __init__(self, page: str, source: str):
        self.page, self.source = page, source

    def _repr_html_(self) -> str:
        # srcdoc holds the whole page as an attribute: &, " and < escaped, the browser undoes it
        return (
            f'<iframe class="minigpt-explorer" srcdoc="{html.escape(self.page, quote=True)}" '
            f'style="width: 100%; height: 900px; border: 1px solid #e2e2ea; border-radius: 6px;" '
            f'title="minigpt explorer: {html.escape(self.source)}"></iframe>'
        )

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the page to `path` (an HTML file that opens in any browser, offline)."""
        from minigpt.views.explorer_page import page_destination, save_page

        path = as_path(path, "the page's file")
        refuse_other_ending(path, "html")
        return save_page(self.page, page_destination(path, overwrite), overwrite)

    def __repr__(self) -> str:
        size = len(self.page.encode("utf-8")) / 1e6
        return (
            f"<minigpt explorer of {self.source}, {size:.2f} MB: a notebook shows it inline; "
            f"outside one, .save('page.html') writes it to open in a browser>"
        )


def refuse_other_ending(path: Path, kind: str) -> None:
    """A file named for one format never gets another's bytes (files/atomic_file.py's ENDINGS, as the command
    line's --html and --png)."""
    wrong = other_ending(path, kind)
    if wrong:
        what, endings = wrong
        raise UsageError(
            f"{as_text(path)} would hold {what} in a {path.suffix} file; give a name that ends in "
            f"{' or '.join(endings)}"
        )


def explore(
    run_or_checkpoint: str | Path | Checkpoint,
    text: str | None = "emma",
    snapshots: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Explorer:
    """The explorer page of a run directory, a checkpoint file or a loaded Checkpoint, to show inline.
    `text`: the name it starts with (None: a name the model can read); `snapshots=False` leaves the
    training snapshots (the step slider) out, for a smaller notebook."""
    from minigpt.machine.threads import QUICK_LOOK, use_free_cores
    from minigpt.views.explorer_page import render_page
    from minigpt.views.page_data import page_data

    if text is not None and not isinstance(text, str):
        raise UsageError(
            f"explore's text is the name the page starts with (a string, or None), got {type(text).__name__}"
        )
    if type(snapshots) is not bool:
        raise UsageError(f"explore's snapshots is True or False, got {snapshots!r}")
    ckpt = as_checkpoint(run_or_checkpoint)
    if ckpt.model.lm_head.weight.device.type == "cpu":
        use_free_cores(QUICK_LOOK)  # as the commands do: one thread per free core, not one per core on a busy machine
    if text is not None and ckpt.tokenizer.unseen(text):
        text = None  # the page says what it skipped; start it on a name it reads whole
    data = page_data(ckpt, text, progress, snapshots=snapshots)
    return Explorer(render_page(data), as_text(ckpt.path))


class AttentionGrid:
    """Every head's attention weights while reading one name: `--png`'s grid, shown by a notebook as a picture."""

    def __init__(self, png: bytes):
        self.png = png

    def _repr_png_(self) -> bytes:
        return self.png

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the PNG to `path`; a file there stays unless `overwrite`, and a checkpoint always does."""
        path = as_path(path, "the picture's file")
        refuse_other_ending(path, "png")
        refuse_existing(path, overwrite)
        return write_bytes(path, self.png)


def attention_grid(run_or_checkpoint: str | Path | Checkpoint, name: str) -> AttentionGrid:
    """Every layer's and head's weights while the model reads `name`, as one PNG (matplotlib needed)."""
    from minigpt.views.attention_maps import attention_report, draw_grid

    ckpt = as_checkpoint(run_or_checkpoint)
    refuse_unseen(name, ckpt.tokenizer.unseen, "the name")
    report = attention_report(ckpt.model, ckpt.tokenizer, name)
    pairs = [(l, h) for l in range(report.n_layer) for h in range(report.n_head)]
    buffer = io.BytesIO()
    draw_grid(report, buffer, pairs)
    return AttentionGrid(buffer.getvalue())
