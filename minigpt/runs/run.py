"""A training run from start to end, `minigpt.train`: set it up, lock its directory, run the loop
with its reporters, end on the best weights, and sum it up.

    result = train(load_config("tiny"), out_dir="runs/try")   # best.pt, last.pt and the records in runs/try
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from minigpt.common.arguments import as_path
from minigpt.common.failures import warn
from minigpt.common.text import as_text, is_cut
from minigpt.config import Config, check_recipe
from minigpt.errors import Interrupted, UsageError
from minigpt.formats.checkpoint import write_checkpoint
from minigpt.formats.recipes import as_recipe, fitting_recipe
from minigpt.machine.processes import compile_failed, lost_a_process
from minigpt.runs.keepers import KeepBest, KeepSnapshots, end_on_best
from minigpt.runs.recorder import RunRecords
from minigpt.runs.run_directory import carry_best_checkpoint, discard_if_no_checkpoint, open_run_dir
from minigpt.runs.setup import StopSignals, start_processes, start_run
from minigpt.runs.tensorboard_log import TensorBoard
from minigpt.training import Reporter, Trainer, save_checkpoint, train_loop
from minigpt.views import plotting
from minigpt.views.training_display import TrainingDisplay


def train(
    config: Config,
    data_path: str | Path | None = None,
    val_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    resume_from: str | Path | None = None,
    overwrite_later: bool = False,
    report: Reporter | None = None,
) -> TrainResult:
    """Train a GPT on a names file; write best.pt, last.pt, config.toml and metrics.jsonl to the run directory.

    With `resume_from` (a run directory or checkpoint), continue that run where it stopped,
    in its own directory (or in `out_dir`, a new one), on the data it was trained on; from a checkpoint older than the
    run's last.pt only with `overwrite_later`, since the steps after it are then replaced.
    `report`: a training.Reporter told of every step, log, evaluation and the end, beside the run's
    records and its progress display (`quiet` hides the display).
    Under torchrun, every process calls this; rank 0 alone prints and writes.
    """
    if not isinstance(config, Config):
        raise UsageError(f"train takes a Config (minigpt.load_config(...)), got {type(config).__name__}")
    check_recipe(config)  # a Config built in Python is checked as a recipe is: batch size, steps, every range
    config = as_recipe(config)  # with where it came from, for fitting and the records
    data_path, val_path, out_dir, resume_from = (
        as_path(value, what) if value is not None else None
        for value, what in (
            (data_path, "data_path"),
            (val_path, "val_path"),
            (out_dir, "out_dir"),
            (resume_from, "resume_from"),
        )
    )
    if report is not None and not isinstance(report, Reporter):  # before any work, not at the first step
        what = f"the class {report.__name__}" if isinstance(report, type) else type(report).__name__
        raise UsageError(f"report takes a Reporter (an instance of a subclass of minigpt.Reporter), got {what}")
    dist, threads = start_processes(config.train.device)
    pyplot_import = plotting.import_pyplot_meanwhile() if dist.main else None  # for loss.png, beside the setting up
    lock = run_dir = None
    reporter, result = Reporters(), None
    folder_was_there = out_dir is not None and out_dir.is_dir()  # the user's own folder stays, however the run ends
    try:
        # continuing in a new directory replaces no later steps
        trainer, resumed_from, scaled = start_run(
            config, dist, data_path, val_path, resume_from, overwrite_later or out_dir is not None
        )
        run_dir, lock = dist.on_main(
            lambda: open_run_dir(resumed_from, out_dir, overwrite), share=lambda opened: (opened[0], None)
        )  # the lock stays with rank 0
        if isinstance(report, TensorBoard) and report.name is None:
            report.name = run_dir.name  # what TensorBoard shows the run as
        # every rank keeps the weights it may end on; rank 0 alone records and shows the run
        best = KeepBest() if config.train.keep_best else None
        snapshots = KeepSnapshots(trainer, resumed_from) if config.train.snapshots else None
        reporter = Reporters(*[keeper for keeper in (best, snapshots) if keeper is not None])
        if dist.main:
            resumed_at = trainer.step if resumed_from is not None else None
            display = TrainingDisplay(
                run_dir,
                quiet,
                threads=threads,
                notes=config.notes + scaled,
                resumed_at=resumed_at,
                changes=config.changes,
            )
            reporter = Reporters(
                *reporter.reporters,
                RunRecords(run_dir, config, resumed_at, resumed_from.parent if resumed_from is not None else None),
                display,
                *([report] if report is not None else []),
            )
        if pyplot_import is not None:
            pyplot_import.join()  # before the clock starts: beside the first steps it would slow them
        try:
            with StopSignals(trainer, stopped_before_first_step(resumed_from)) as signals:
                try:
                    train_loss = train_loop(trainer, run_dir, reporter, signals, save=atomically)
                except Interrupted as stopped:  # the loop saved last.pt: say how to go on from it
                    said = str(stopped)
                    if said.startswith("interrupted at step"):
                        said += f". Resume with: minigpt train --resume {run_dir}"
                    raise Interrupted(said, stopped.exit_code - 128) from None
            if resumed_from is not None and out_dir is not None and dist.main:
                carry_best_checkpoint(resumed_from, run_dir)
            went_back = end_on_best(trainer, run_dir, best, snapshots)  # the samples come from them
            result = finish_run(trainer, run_dir, train_loss, went_back)
            result.signal_at_the_end = signals.requested
            worse = worse_than_guessing(trainer)
            if worse and dist.main:
                warn(worse)
        except BaseException:
            hear_the_end(reporter, trainer)
            raise
        reporter.end(trainer, result)
        dist.barrier()  # no rank tears the group down while rank 0 still writes: gloo may abort the early leaver
        return result
    except BaseException as error:
        if run_dir is not None and dist.main and (resume_from is None or out_dir is not None):
            # a new run that failed before its first checkpoint leaves nothing
            discard_if_no_checkpoint(run_dir, keep_folder=folder_was_there)
        instead = lost_a_process(error, dist) or compile_failed(error)
        if instead is not None:
            raise instead from None
        raise
    finally:
        if lock is not None:
            lock.release()
        dist.close()


def atomically(trainer: Trainer, path: Path) -> None:
    """The core's checkpoint, written so that a reader never sees half of it."""
    save_checkpoint(trainer, path, write=write_checkpoint)


JUDGED_FROM = 100  # steps: a run of fewer has not had the time to beat guessing by the characters' frequencies


def worse_than_guessing(trainer: Trainer) -> str | None:
    """A run whose best validation loss is worse than guessing (each character alike, or by how often the training
    names use it) learned nothing that carries to the held-out names: said, with the recipe that fits the file.
    None for a run that did better, or held no names out."""
    if trainer.best_val_loss is None or trainer.val_data is None:
        return None
    vocab = trainer.config.model.vocab_size
    uniform = math.log(vocab)
    # every id after the first boundary token is a target: each character, and the boundary that ends its name
    counts = torch.bincount(trainer.train_data.flat[1:].long().cpu(), minlength=vocab).double()
    targets = trainer.val_data.flat[1:].long().cpu()
    frequency = float(-(counts / counts.sum())[targets].clamp_min(1e-12).log().mean())
    best = trainer.best_val_loss
    if best <= uniform and (best <= frequency or trainer.step < JUDGED_FROM):
        return None
    guess = (
        f"a uniform guess over its {vocab} tokens ({uniform:.3f})"
        if best > uniform
        else f"guessing each character by how often the training names use it ({frequency:.3f})"
    )
    name, why = fitting_recipe(len(trainer.train_data), trainer.recipe.time_limit)
    source = getattr(trainer.config, "source", None)
    fits = (
        ""
        if source is not None and Path(source).stem == name
        else f"; for this file minigpt train picks configs/{name}.toml ({why}): --config {name}"
    )
    return (
        f"the best validation loss, {best:.3f}, is worse than {guess}: the model learned nothing that carries to "
        f"the held-out names{fits}"
    )


def stopped_before_first_step(resumed_from: Path | None) -> str:
    """What a signal before a run's first step leaves: a new run nothing (its folder goes), a resumed one its
    checkpoint as it was."""
    if resumed_from is None:
        return "stopped before the first step: nothing was trained, and nothing of the run is left"
    again = f"Resume with: minigpt train --resume {resumed_from}"
    return f"stopped before the first step; {resumed_from} is as it was. {again}"


def hear_the_end(reporter: Reporter, trainer: Trainer) -> None:
    """The reporters hear that the run stopped on an error or a signal (result None); what fails in them then
    is dropped, so that the error that stopped the run is the one the user reads."""
    try:
        reporter.end(trainer, None)
    except Exception:
        pass


def finish_run(trainer: Trainer, run_dir: Path, train_loss: float | None, went_back: bool) -> TrainResult:
    """Sum the run up (on its best weights, with train.keep_best)."""
    return TrainResult(
        run_dir=run_dir,
        steps=trainer.step,
        seconds=trainer.seconds,
        tokens=trainer.tokens,
        train_loss=train_loss,
        val_loss=trainer.val_loss,
        best_val_loss=trainer.best_val_loss,
        samples=trainer.samples(10) if trainer.dist.main else [],
        block_size=trainer.config.model.block_size,
        best_step=trainer.best_step,
        went_back_to_best=went_back,
        stopped_early=trainer.stopped_early and not trainer.budget_spent(),  # at its last step: not early
    )


class Reporters(Reporter):
    """Several reporters as one, told in order."""

    def __init__(self, *reporters: Reporter):
        self.reporters = reporters

    def start(self, trainer):
        for r in self.reporters:
            r.start(trainer)

    def step(self, trainer):
        for r in self.reporters:
            r.step(trainer)

    def log(self, trainer, train_loss):
        for r in self.reporters:
            r.log(trainer, train_loss)

    def saving(self, trainer, run_dir):
        for r in self.reporters:
            r.saving(trainer, run_dir)

    def evaluation(self, trainer, samples):
        for r in self.reporters:
            r.evaluation(trainer, samples)

    def end(self, trainer, result):
        """Every reporter hears the end, even when one before it fails; then the first failure is raised."""
        failure = None
        for r in self.reporters:
            try:
                r.end(trainer, result)
            except Exception as e:
                failure = failure or e
        if failure is not None:
            raise failure


@dataclass
class TrainResult:
    run_dir: Path
    steps: int
    seconds: float  # time spent in training steps (evaluation and saving excluded)
    tokens: int  # predicted tokens trained on (padding excluded)
    train_loss: float | None
    val_loss: float | None
    best_val_loss: float | None
    samples: list[tuple[str, bool]] = field(default_factory=list)  # (name, seen in training)
    best_step: int | None = None  # the step of the best validation loss
    went_back_to_best: bool = False  # later steps did worse, so the model was set back to its best weights
    stopped_early: bool = False  # train.patience evaluations passed without a better validation loss
    block_size: int = 0  # the model's: a sample that reached it was cut (0: none is taken for cut)
    # SIGINT or SIGTERM heard in the run's last step: the run was complete, so it ended as usual (a sweep stops)
    signal_at_the_end: int | None = None

    @property
    def ended_on_best(self) -> bool:
        """The model ends on the weights of its best validation loss: set back to them, or they were its last."""
        return self.went_back_to_best or (self.best_step is not None and self.best_step == self.steps)

    def was_cut(self, name: str) -> bool:
        return self.block_size > 0 and is_cut(name, self.block_size)

    @property
    def cut_samples(self) -> int:
        return sum(self.was_cut(name) for name, _ in self.samples)

    @property
    def new_samples(self) -> int:
        """Samples not among the training names; a cut one is not counted, since it is no whole name."""
        return sum(not seen and not self.was_cut(name) for name, seen in self.samples)

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        """What `minigpt train --json` prints."""
        return {
            "run_dir": as_text(self.run_dir),
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "tokens": self.tokens,
            "tokens_per_sec": round(self.tokens_per_sec, 1),
            "train_loss": self.train_loss,
            "val_loss": self.val_loss,
            "best_val_loss": self.best_val_loss,
            "best_step": self.best_step,
            "stopped_early": self.stopped_early,
            "ended_on_best": self.ended_on_best,
            "samples": [name for name, _ in self.samples],
            "new_samples": self.new_samples,
            "cut_samples": self.cut_samples,
        }
