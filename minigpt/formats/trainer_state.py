"""A trainer saved into a checkpoint and restored from one: the model, the optimizer, the step, the
clock and every process's random state, so that a resumed run goes on as if it had never stopped.
The checkpoint's format itself is formats/checkpoint.py's."""

from __future__ import annotations

from pathlib import Path

import torch

from minigpt.errors import UsageError
from minigpt.formats.checkpoint import ResumeState, load_microgpt_weights, payload, save_checkpoint, training_state
from minigpt.optimizer import Optimizers, load_state


def save_trainer(trainer, path: Path) -> None:
    """The trainer into the checkpoint `path`: rank 0 writes; every rank must call it, since each hands
    over its random state."""
    rank_rng = trainer.dist.gather(torch.get_rng_state())
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    if not trainer.dist.main:
        return
    training = training_state(trainer.optimizer.state_dict(), rank_rng, cuda_rng, trainer.tokens, trainer.seconds,
                              trainer.elapsed, trainer.best_step, trainer.evals_since_best)
    save_checkpoint(path, payload(trainer.model, trainer.config, trainer.tokenizer.chars, trainer.step,
                                  trainer.val_loss, trainer.best_val_loss, trainer.membership, trainer.data_info, training))


def restore_trainer(trainer, state: ResumeState, path: Path) -> None:
    """Continue from a checkpoint of this same run: every number as it was when it was saved."""
    for key in ("train_digest", "val_digest"):
        if state.data.get(key) != trainer.data_info[key]:
            raise UsageError(f"{path}: the names have changed since this run started; resuming needs the same data")
    load_microgpt_weights(trainer.model, state.model)
    load_optimizer_state(trainer, state.optimizer, path)
    trainer.step, trainer.val_loss, trainer.best_val_loss = state.step, state.val_loss, state.best_val_loss
    trainer.tokens, trainer.seconds, trainer._elapsed = state.tokens, state.seconds, state.elapsed
    trainer.best_step, trainer.evals_since_best = state.best_step, state.evals_since_best
    if trainer.snapshots and not trainer.snapshots.resume(path.parent, state.step):
        trainer.snapshots = None  # a run begun without snapshots cannot have a whole set of them
    ranks = state.rng["ranks"]
    if len(ranks) == trainer.dist.world:  # the same number of processes: each rank's own state
        torch.set_rng_state(ranks[trainer.dist.rank])
    elif trainer.dist.main:
        torch.set_rng_state(ranks[0])
    if "cuda" in state.rng and torch.cuda.is_available() and not trainer.dist.enabled:
        torch.cuda.set_rng_state_all(state.rng["cuda"])


def load_optimizer_state(trainer, saved: dict, path: Path) -> None:
    """The optimizer as it was: refused when it is another optimizer's state, or a damaged one."""
    combined = isinstance(trainer.optimizer, Optimizers)
    fits = set(saved) == set(trainer.optimizer.named) if combined else "param_groups" in saved
    if not isinstance(saved, dict) or not fits:
        raise UsageError(f"{path}: its optimizer state does not fit train.optimizer = "
                         f"'{trainer.recipe.optimizer}'; resume with the optimizer it was trained with")
    try:
        trainer.optimizer.load_state_dict(saved) if combined else load_state(trainer.optimizer, saved)
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path}: its optimizer state is damaged: {e}") from None
