"""A run in TensorBoard: the reporter that writes what metrics.jsonl holds (the train and validation losses,
the learning rate, tokens per second) and the samples of each evaluation as TensorBoard's event files, under
the run's name. An optional extra (`pip install 'minigpt-names[tensorboard]'`):

    train(load_config("tiny"), out_dir="runs/try", report=TensorBoard("tb"))   # then: tensorboard --logdir tb
    minigpt train --out runs/try --tensorboard tb                                # the same from the command line
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minigpt.common.arguments import as_path
from minigpt.errors import UsageError
from minigpt.training import Reporter, Trainer

EXTRA = "pip install 'minigpt-names[tensorboard]' (or pip install -e '.[tensorboard]' in a clone)"


class TensorBoard(Reporter):
    """Writes the run's scalars and samples under `log_dir`/NAME, NAME the run directory's name (`minigpt.train`
    names it) or `name`, on the first process of a run alone: TensorBoard's own writer (torch.utils.tensorboard),
    flushed at each evaluation and at the end."""

    def __init__(self, log_dir: str | Path, name: str | None = None):
        self.log_dir, self.name = as_path(log_dir, "the TensorBoard folder (log_dir)"), name
        self.writer = None
        writer_class()  # said before the run starts, not at its first step

    def start(self, trainer: Trainer) -> None:
        if self.writer is None and trainer.dist.main:
            name = self.name or "run"
            self.writer = writer_class()(log_dir=str(self.log_dir / name))

    def log(self, trainer: Trainer, train_loss: float) -> None:
        if self.writer is None:
            return
        self.writer.add_scalar("loss/train", train_loss, trainer.step)
        self.writer.add_scalar("lr", trainer.lr, trainer.step)
        if trainer.seconds > 0:
            self.writer.add_scalar("tokens_per_sec", trainer.tokens / trainer.seconds, trainer.step)

    def evaluation(self, trainer: Trainer, samples: list[tuple[str, bool]]) -> None:
        if self.writer is None:
            return
        if trainer.val_loss is not None:
            self.writer.add_scalar("loss/val", trainer.val_loss, trainer.step)
        if samples:
            shown = ", ".join(f"{name}*" if seen else name for name, seen in samples)
            self.writer.add_text("samples", f"{shown} (* a training name)", trainer.step)
        self.writer.flush()

    def end(self, trainer: Trainer, result: Any) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def writer_class():
    """torch's SummaryWriter, which needs the tensorboard package; one line naming the extra without it."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise UsageError(f"--tensorboard writes TensorBoard's event files, which needs tensorboard: {EXTRA}") from None
    return SummaryWriter
