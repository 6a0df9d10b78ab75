"""matplotlib for every picture minigpt draws (loss.png, overlays, attention maps): imported only
when a picture is drawn (an optional extra: one line says how to install it), and each figure
written atomically.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from minigpt.errors import UsageError
from minigpt.files.atomic_file import write_atomically


def import_pyplot_meanwhile() -> threading.Thread:
    """Start importing pyplot in the background (most of drawing loss.png at a run's end is the
    import), beside a run's setting up, and return the thread: join it before the training clock
    starts, since an import holds Python's lock and beside the first steps it slows them by its
    whole length. Nothing happens without matplotlib."""

    def quietly():
        try:
            import_pyplot()
        except Exception:
            pass  # drawing says so, if it is asked for

    thread = threading.Thread(target=quietly, name="import pyplot", daemon=True)
    thread.start()
    return thread


def import_pyplot():
    """matplotlib's pyplot, drawing to files only; a one-line error when it is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "PNG output needs matplotlib, in minigpt's plot extra: pip install 'minigpt-names[plot]' "
            "(or pip install -e '.[plot]' in a clone)"
        ) from None
    return plt


def save_figure(plt, fig, target, about: str | None = None) -> None:
    """The figure as a PNG into `target`: a path (written atomically) or a file object. `about` is kept in the
    file as its Description (a PNG text chunk): what the picture was drawn from, for a reader and for the docs test."""

    def draw(f):
        fig.savefig(f, format="png", dpi=120, bbox_inches="tight", metadata={"Description": about} if about else None)

    try:
        write_atomically(Path(target), draw) if isinstance(target, (str, os.PathLike)) else draw(target)
    finally:
        plt.close(fig)
