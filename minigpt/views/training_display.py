"""What a person sees while a run trains: its start and end panels, a progress bar (tqdm's, or its
notebook widget), and a few samples at each evaluation, on standard error. A reporter of the
training loop (training.py), so the loop itself prints nothing.

In a log file, a pipe or a notebook without widgets the bar would print a line per redraw: there
the display writes one line per evaluation instead.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from tqdm import tqdm

from minigpt.common.failures import warn
from minigpt.common.text import loss_text
from minigpt.training import Reporter
from minigpt.views.panels import Printer, note_cut_names, samples_table, start_panel, summary_panel


class TrainingDisplay(Reporter):
    """The training loop's reporter for a person: panels, a bar or lines, and samples."""

    def __init__(
        self,
        run_dir: Path,
        quiet: bool = False,
        threads: tuple[int, str] | None = None,
        notes: Sequence[str] = (),
        resumed_at: int | None = None,
        changes: Sequence[str] = (),
    ):
        self.run_dir, self.quiet, self.threads, self.notes, self.resumed_at = run_dir, quiet, threads, notes, resumed_at
        self.changes = changes  # what fitting changed in the recipe: said even when quiet
        self.console: Printer = (
            NotebookConsole(quiet) if in_notebook() else Console(stderr=True, quiet=quiet, highlight=False)
        )
        self.one_line_an_evaluation = not quiet and not sys.stderr.isatty() and not notebook_bar()
        self.bar: tqdm | None = None
        self.line = ""  # the progress line of the latest log, printed at the evaluation that follows it

    def start(self, trainer) -> None:
        if not self.quiet:  # rich lays out a panel even for a quiet console, which then drops it
            start_panel(self.console, trainer, self.run_dir, self.notes, self.threads, self.resumed_at)
        else:  # a change to the recipe is said even then, a line each
            for change in self.changes:
                warn(f"recipe: {change}")
        note_cut_names(trainer)
        self.bar = progress_bar(trainer, hidden=self.quiet or self.one_line_an_evaluation)

    def log(self, trainer, train_loss: float) -> None:
        if self.bar is None:  # not started
            return
        self.bar.set_postfix(
            loss=f"{train_loss:.4f}",
            val=loss_text(trainer.val_loss),
            tok_s=f"{trainer.tokens / trainer.seconds / 1000:.1f}k",
            refresh=False,
        )
        if self.one_line_an_evaluation:
            self.line = progress_line(trainer, train_loss)

    def step(self, trainer) -> None:
        """Move the bar to the trainer's step, or to its elapsed seconds with a time limit."""
        if self.bar is not None:
            self.bar.update(round(trainer.clock.elapsed) - self.bar.n if trainer.recipe.time_limit > 0 else 1)

    def evaluation(self, trainer, samples) -> None:
        if self.one_line_an_evaluation:
            self.console.print(self.line, soft_wrap=True)
        if not self.quiet:
            samples_table(self.console, trainer.step, trainer.val_loss, samples, trainer.config.model.block_size)

    def end(self, trainer, result) -> None:
        if self.bar is not None:
            self.bar.close()
        if result is not None and not self.quiet:
            summary_panel(self.console, result)


class NotebookConsole:
    """What the panels print, in a notebook: HTML with rich's colours, and a text/plain part that is plain
    text (rich's own notebook output puts terminal escape codes there, which a plain-text view shows raw)."""

    HTML = '<pre style="white-space: pre; font-family: Menlo, Consolas, monospace; line-height: 1.25">{code}</pre>'

    width = 100  # columns: what a notebook's output area shows without a sideways scroll

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def print(self, *renderables, **options) -> None:
        if self.quiet:
            return
        from IPython.display import display

        recorder = Console(
            record=True, file=io.StringIO(), width=self.width, highlight=False, force_jupyter=False, force_terminal=True
        )
        recorder.print(*renderables, **options)
        display(
            {
                "text/html": recorder.export_html(inline_styles=True, code_format=self.HTML, clear=False),
                "text/plain": recorder.export_text(),
            },
            raw=True,
        )


def progress_bar(trainer, hidden: bool) -> tqdm:
    """Steps (or seconds, with a time limit) done out of the run's whole, on stderr. Its time left is
    the run's average rate so far (tqdm's smoothing 0), not the last few steps': the evaluations,
    checkpoints and snapshots between steps are spread through a run, and an estimate from the
    steps alone left them out."""
    t, timed = trainer.recipe, trainer.recipe.time_limit > 0
    return (notebook_bar() or tqdm)(
        smoothing=0,
        total=round(t.time_limit) if timed else t.steps,
        initial=round(trainer.clock.elapsed) if timed else trainer.step,
        unit="s" if timed else "step",
        desc="train",
        disable=hidden,
        dynamic_ncols=True,
        leave=False,
    )


def progress_line(trainer, train_loss: float | None) -> str:
    """What the progress bar shows, as one line for a log: `step 250/800  loss 2.0312  41,210 tokens/s  6 s`."""
    t = trainer.recipe
    done = f"{trainer.clock.elapsed:.0f}/{t.time_limit:g} s" if t.time_limit > 0 else f"{trainer.clock.elapsed:.0f} s"
    total = "" if t.time_limit > 0 else f"/{t.steps:,}"
    rate = trainer.tokens / trainer.seconds if trainer.seconds else 0.0
    return f"step {trainer.step:,}{total}  loss {loss_text(train_loss)}  {rate:,.0f} tokens/s  {done}"


def notebook_bar():
    """tqdm's notebook bar (a widget that updates in place) inside a Jupyter kernel with ipywidgets, else None:
    there, a terminal's carriage-return bar would print a line per redraw."""
    if not in_notebook():
        return None
    try:
        import ipywidgets  # noqa: F401
        from tqdm.notebook import tqdm as widget_bar
    except ImportError:
        return None
    return widget_bar


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (JupyterLab, VS Code, Colab), where output is HTML and widgets."""
    shell = sys.modules.get("IPython") and getattr(sys.modules["IPython"], "get_ipython", lambda: None)()
    return type(shell).__name__ in ("ZMQInteractiveShell", "Shell")  # Shell: Colab's


def snapshots_bar(hidden: bool = False) -> tuple[tqdm, Callable[[int, int], None]]:
    """A bar for the explorer page's slow part, measuring each training snapshot, and the
    `progress(done, total)` that moves it (the bar appears with the first snapshot)."""
    bar = tqdm(
        total=0,
        unit="snapshot",
        desc="measuring the training snapshots",
        dynamic_ncols=True,
        leave=False,
        disable=hidden or not sys.stderr.isatty(),
    )

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, progress
