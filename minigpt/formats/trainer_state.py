"""A trainer restored from its checkpoint (training.py's `Trainer.checkpoint` writes it): the model, the
optimizer, the step, the clock and every process's random state, so that a resumed run goes on as if it
had never stopped. The checkpoint's fields are checked by formats/checkpoint.py."""

from __future__ import annotations

from pathlib import Path

import torch

from minigpt.common.text import plural
from minigpt.errors import UsageError
from minigpt.formats.checkpoint import ResumeState
from minigpt.model import load_microgpt_weights
from minigpt.optimizer import Optimizers


def restore_trainer(trainer, state: ResumeState, path: Path) -> None:
    """Continue from a checkpoint of this same run: every number as it was when it was saved."""
    for key in ("train_digest", "val_digest"):
        if state.data.get(key) != trainer.data_info[key]:
            raise UsageError(f"{path}: the names have changed since this run started; resuming needs the same data")
    load_microgpt_weights(trainer.model, state.model)
    load_optimizer_state(trainer, state.optimizer, path)
    trainer.step, trainer.val_loss, trainer.best_val_loss = state.step, state.val_loss, state.best_val_loss
    trainer.tokens, trainer.seconds, trainer.clock.before = state.tokens, state.seconds, state.elapsed
    trainer.best_step, trainer.evals_since_best = state.best_step, state.evals_since_best
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
        raise UsageError(
            f"{path}: its optimizer state does not fit train.optimizer = "
            f"'{trainer.recipe.optimizer}'; resume with the optimizer it was trained with"
        )
    parts = (
        [(optimizer, saved[name]) for name, optimizer in trainer.optimizer.named.items()]
        if combined
        else [(trainer.optimizer, saved)]
    )
    try:
        for optimizer, its_state in parts:
            load_state(optimizer, its_state)
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path}: its optimizer state is damaged: {e}") from None


def load_state(optimizer, saved) -> None:
    """Load a saved state after checking it fits: torch's fused AdamW reads a misshapen moment out of
    bounds (the process dies), and a setting of another type fails only mid-step. A ValueError says why."""
    if (
        not isinstance(saved, dict)
        or not isinstance(saved.get("state"), dict)
        or not isinstance(saved.get("param_groups"), list)
    ):
        raise ValueError("the optimizer state is not a table of 'state' and 'param_groups'")
    fresh = optimizer.state_dict()
    saved = with_embeddings_group(saved, fresh)
    if len(saved["param_groups"]) != len(fresh["param_groups"]):
        raise ValueError(
            f"it has {plural(len(saved['param_groups']), 'parameter group')}, and the optimizer "
            f"{len(fresh['param_groups'])}"
        )
    for group, expected in zip(saved["param_groups"], fresh["param_groups"]):
        if not isinstance(group, dict):
            raise ValueError("a parameter group is not a table")
        for key, value in expected.items():
            if key in group and not same_kind(group[key], value):
                raise ValueError(f"the setting {key!r} holds {group[key]!r}, where {value!r} belongs")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for index, moments in saved["state"].items():
        if type(index) is not int or not 0 <= index < len(params) or not isinstance(moments, dict):
            raise ValueError(f"state for a parameter {index!r} that is not among the {len(params)}")
        for name, moment in moments.items():
            if not isinstance(moment, torch.Tensor) or (moment.dim() and moment.shape != params[index].shape):
                shape = list(moment.shape) if isinstance(moment, torch.Tensor) else type(moment).__name__
                raise ValueError(
                    f"{name} of parameter {index} is {shape}, and the parameter {list(params[index].shape)}"
                )
            if not torch.isfinite(moment).all() or (name.endswith("_sq") and (moment < 0).any()):
                raise ValueError(
                    f"{name} of parameter {index} holds values no step makes (nan, inf, or a negative square)"
                )
    optimizer.load_state_dict(saved)


def with_embeddings_group(saved: dict, fresh: dict) -> dict:
    """A state saved before wte and wpe had a group of their own (train.embedding_lr_scale), with one
    group fewer: they were the first parameters of its first group, so that group is split in two."""
    groups, wanted = saved["param_groups"], fresh["param_groups"]
    if (
        len(groups) != len(wanted) - 1
        or not groups
        or not isinstance(groups[0], dict)
        or not isinstance(groups[0].get("params"), list)
    ):
        return saved
    first, n = groups[0], len(wanted[0]["params"])
    embeddings = {**first, "params": first["params"][:n]}  # at the rate they had: the group's
    return {**saved, "param_groups": [embeddings, {**first, "params": first["params"][n:]}, *groups[1:]]}


def same_kind(value, expected) -> bool:
    """A saved setting of the kind the optimizer holds: a number for a number, a pair of numbers for betas."""
    number = (int, float)
    if isinstance(expected, tuple):
        return (
            isinstance(value, (tuple, list)) and len(value) == len(expected) and all(type(v) in number for v in value)
        )
    if type(expected) in number:
        return type(value) in number
    return expected is None or type(value) is type(expected)
