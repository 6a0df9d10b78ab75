"""What a run keeps beside its checkpoints: config.toml, metrics.jsonl, samples.txt and loss.png.

`RunRecords` is the training loop's reporter that writes them, on rank 0; their line formats
are files/run_records.py's. A resumed run's records are read and checked before any file is
written, and lines logged after the checkpoint it resumes from are dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from minigpt.common.failures import cannot_write, warn
from minigpt.common.text import as_shown, as_text
from minigpt.errors import MiniGPTError, RunError, UsageError
from minigpt.files.atomic_file import write_text
from minigpt.files.run_records import (
    METRICS,
    SAMPLES,
    lines_up_to,
    metrics_line,
    metrics_step,
    read_metrics,
    samples_line,
    samples_step,
)
from minigpt.formats.recipes import Recipe, recipe_toml, shown_path
from minigpt.runs.code_version import code_text
from minigpt.runs.run_directory import open_own
from minigpt.runs.setup import why_complete
from minigpt.training import Reporter


def recipe_header(config: Recipe, ended: str | None = None, code: dict | None = None) -> str:
    """config.toml's first lines: which recipe file the run started from, why, what the command line changed,
    every change fitting made to the recipe as the run started, a time limit that ends it in place of its
    steps, once it has, what ended the run, and which code trained it."""
    t = config.train
    source = "the default recipe" if config.source is None else shown_path(config.source)
    lines = [
        f"The recipe as this run trained it (minigpt train --config takes it): {source}"
        + (f", chosen by train.auto_scale for {config.why}" if config.why else ""),
        *([f"with {', '.join(sorted(config.given))} given on the command line"] if config.given else []),
        *[f"changed as it started: {change}" for change in config.changes if not change.startswith(source)],
        *([f"train.time_limit {t.time_limit:g} s ends it, not train.steps"] if t.time_limit > 0 else []),
        *([f"ended {ended}"] if ended else []),
        *([f"trained by {code_text(code)}"] if code is not None else []),
        "auto_scale is stored off: a resumed run keeps the recipe as it is.",
    ]
    return "".join(f"# {line}\n" for line in lines) + "\n"


def keep_an_edited_recipe(run_dir: Path) -> None:
    """A config.toml changed after the run's last checkpoint was edited by hand: a resumed run trains the
    checkpoint's recipe and rewrites config.toml, so the user's file is kept beside it, and said so."""
    recipe, last = run_dir / "config.toml", run_dir / "last.pt"
    if not (recipe.is_file() and last.is_file()) or recipe.stat().st_mtime <= last.stat().st_mtime:
        return
    kept = run_dir / "config.toml.edited"
    write_text(kept, recipe.read_text(encoding="utf-8", errors="replace"), failed=cannot_write_record)
    warn(
        f"{as_text(recipe)} was edited after the run's last checkpoint: a resumed run trains the checkpoint's "
        f"recipe (--set changes its [train] keys), so your file is kept as {as_text(kept)}"
    )


def cannot_write_record(path, e: OSError) -> MiniGPTError:
    return cannot_write(path, e, RunError)


class RunRecords(Reporter):
    """config.toml, metrics.jsonl (one JSON object a line) and samples.txt, written as the run goes;
    loss.png at its end."""

    def __init__(self, run_dir: Path, config: Recipe, resumed_at: int | None, history: Path | None = None):
        """`history`: the directory whose records a resumed run goes on from, when it is not `run_dir` (a run
        continued into a new directory carries its history up to the checkpoint it resumed from)."""
        self.run_dir, self.config, self.resumed_at = run_dir, config, resumed_at
        self.history = history or run_dir
        self.files: dict[str, Any] = {}
        self.code: dict | None = None  # which code trains the run, from its start

    def start(self, trainer) -> None:
        """Open the records (a resumed run's cut back to its step) and log what makes this stretch's
        numbers what they are, beside the seed. The loop starts once a signal is caught, so whoever
        waits for metrics.jsonl can already stop the run cleanly: at once until the first step ends, with
        nothing to save; after it, at the end of a step, with a checkpoint."""
        self.code = trainer.code
        self.open()
        evaluation_step = trainer.step % trainer.recipe.eval_interval == 0  # else its val_loss is an earlier step's
        if (
            self.resumed_at is not None
            and evaluation_step
            and trainer.val_loss is not None
            and not self.evaluated_at(trainer.step)
        ):
            # the checkpoint was written, its evaluation's line was not (the disk filled between them): from the
            # checkpoint, so that the curve has every evaluation the run made
            self.write(METRICS, metrics_line(trainer.step, trainer.clock.elapsed, val_loss=trainer.val_loss))
        self.write(
            METRICS,
            metrics_line(
                trainer.step,
                trainer.clock.elapsed,
                torch=torch.__version__,
                threads=torch.get_num_threads(),
                device=str(trainer.dist.device),
                processes=trainer.dist.world,
                code=trainer.code,
            ),
        )

    def evaluated_at(self, step: int) -> bool:
        """Whether metrics.jsonl holds the validation loss of `step`."""
        return any(r["step"] == step and "val_loss" in r for r in read_metrics(self.run_dir))

    def open(self) -> None:
        kept: dict[str, Any] = {}
        if self.resumed_at is not None:
            kept = self.kept_history(self.resumed_at)
        if self.resumed_at is not None and self.history == self.run_dir:
            keep_an_edited_recipe(self.run_dir)
        self.write_recipe()
        for name, text in kept.items():
            if text is not None:
                write_text(self.run_dir / name, text, failed=cannot_write_record)
        mode = "a" if self.resumed_at is not None else "w"
        self.files = {name: open_own(self.run_dir / name, mode) for name in (METRICS, SAMPLES)}

    def kept_history(self, resumed_at: int) -> dict:
        """metrics.jsonl's and samples.txt's lines up to the step resumed from. From another directory (a run
        continued into a new one) only where they are minigpt's records: a checkpoint among other files
        carries none."""
        try:
            return {
                METRICS: lines_up_to(self.history / METRICS, resumed_at, metrics_step),
                SAMPLES: lines_up_to(self.history / SAMPLES, resumed_at, samples_step),
            }
        except UsageError:
            if self.history == self.run_dir:
                raise
            return {}

    def log(self, trainer, train_loss: float) -> None:
        self.write(
            METRICS,
            metrics_line(
                trainer.step,
                trainer.clock.elapsed,
                train_loss=train_loss,
                lr=trainer.lr,
                tokens_per_sec=round(trainer.tokens / trainer.seconds, 1),
                tokens=trainer.tokens,
            ),
        )  # trained on so far: compare weighs compute by it

    def evaluation(self, trainer, samples) -> None:
        if trainer.val_loss is not None:
            self.write(METRICS, metrics_line(trainer.step, trainer.clock.elapsed, val_loss=trainer.val_loss))
        block_size = trainer.config.model.block_size
        shown = [(as_shown(name, block_size), seen) for name, seen in samples]
        self.write(SAMPLES, samples_line(trainer.step, trainer.val_loss, shown))

    def end(self, trainer, result) -> None:
        for name, file in self.files.items():
            try:
                file.close()  # flushes what a full disk held back: after a failed run that says nothing new
            except OSError as e:
                if result is not None:
                    raise cannot_write_record(name, e) from None
        if result is not None:
            write_loss_png_if_possible(self.run_dir)

    def saving(self, trainer, run_dir) -> None:
        """As the run's last checkpoint is about to be written, config.toml says what ended the run (before the
        checkpoint: a config.toml newer than last.pt is one edited by hand)."""
        if trainer.done():
            self.write_recipe(ended=f"at step {trainer.step:,}: {why_complete(trainer)}")

    def write_recipe(self, ended: str | None = None) -> None:
        header = recipe_header(self.config, ended, self.code)
        write_text(self.run_dir / "config.toml", header + recipe_toml(self.config), failed=cannot_write_record)

    def write(self, name: str, line: str) -> None:
        """One whole line; when it cannot be written (a full disk), the run stops and says so.

        A line cut short by a full disk is dropped, with a note, when the run resumes.
        """
        try:
            self.files[name].write(line + "\n")
            self.files[name].flush()
        except OSError as e:
            raise cannot_write(
                name, e, RunError, then="; the checkpoints already written are intact, and the run resumes from last.pt"
            ) from None


def write_loss_png_if_possible(run_dir: Path) -> None:
    """loss.png beside the checkpoints, when matplotlib is installed."""
    from minigpt.views.loss_curve import write_loss_png

    try:
        write_loss_png(run_dir, run_dir / "loss.png")
    except UsageError:
        pass  # no matplotlib: `minigpt plot` says how to get it
