"""What a run keeps of its weights as it goes, as reporters the loop tells: the best weights
(train.keep_best), so that the run ends on them, and the snapshots at a few steps (train.snapshots,
RUN/snapshots.pt) to watch attention form in the explorer page."""

from __future__ import annotations

from pathlib import Path

from minigpt.formats.checkpoint import read_model_weights
from minigpt.formats.snapshots import RunSnapshots, run_identity
from minigpt.model import load_microgpt_weights
from minigpt.training import Reporter, Trainer


class KeepBest(Reporter):
    """A copy of the weights at the best validation loss, to end the run on them."""

    def __init__(self):
        self.weights: dict | None = None

    def evaluation(self, trainer: Trainer, samples) -> None:
        if trainer.best_step == trainer.step and trainer.val_data is not None:
            self.weights = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}

    def go_back(self, trainer: Trainer, best_checkpoint: Path) -> bool:
        """Set the model back to its best weights when later steps did worse; True when it did."""
        if trainer.best_step in (None, trainer.step):
            return False
        if self.weights is not None:
            trainer.model.load_state_dict(self.weights)
        else:  # resumed after the best step, the run has no copy: best.pt holds them
            load_microgpt_weights(trainer.model, read_model_weights(best_checkpoint))
        return True


class KeepSnapshots(Reporter):
    """The weights at step 0, at the steps snapshots.py spaces out, and at the run's last and best
    steps; written before each last.pt, so that a resumed run finds every one up to its step."""

    def __init__(self, trainer: Trainer, resumed_from: Path | None):
        recipe = trainer.recipe
        self.snapshots: RunSnapshots | None = RunSnapshots(
            run_identity(trainer.data_info, trainer.config),
            recipe.steps,
            recipe.snapshots,
            trainer.model,
            recipe.warmup_steps,
        )
        if resumed_from is not None and not self.snapshots.resume(resumed_from.parent, trainer.step):
            self.snapshots = None  # a run begun without snapshots cannot have a whole set of them

    def step(self, trainer: Trainer) -> None:
        if self.snapshots:
            self.snapshots.after_step(trainer.step, trainer.model)

    def saving(self, trainer: Trainer, run_dir: Path) -> None:
        if self.snapshots and trainer.dist.main:
            self.snapshots.write(run_dir)

    def keep(self, step: int, trainer: Trainer, val_loss: float | None = None) -> None:
        if self.snapshots:
            self.snapshots.keep(step, trainer.model, val_loss)


def end_on_best(trainer: Trainer, run_dir: Path, best: KeepBest | None, snapshots: KeepSnapshots | None) -> bool:
    """End the run: its last step among the snapshots, back to its best weights (with
    train.keep_best), its best step among the snapshots, and the snapshots written. True when it
    went back."""
    # the best step's snapshot carries its loss: what ties the snapshots to the run's own records
    if snapshots:
        snapshots.keep(trainer.step, trainer, trainer.best_val_loss if trainer.best_step == trainer.step else None)
    went_back = best is not None and best.go_back(trainer, run_dir / "best.pt")
    if went_back and snapshots and trainer.best_step is not None:
        snapshots.keep(trainer.best_step, trainer, trainer.best_val_loss)
    if snapshots:
        snapshots.saving(trainer, run_dir)
    return went_back
