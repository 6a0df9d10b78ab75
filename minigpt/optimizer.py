"""Optimizers: AdamW (or Adam) for every parameter, or Muon for the hidden matrices and
AdamW for the rest; and the learning rate over a run (`lr_at`).

Muon (momentum, orthogonalized) updates a weight matrix W with the orthogonal matrix nearest
to its momentum M = U S V^T, that is U V^T: every direction the gradients point in moves W
by the same amount, where Adam's update is dominated by a few large ones.

    M  <- momentum * M + G                       G: this step's gradient of W
    W  <- W - lr * sqrt(max(1, rows/cols)) * orthogonalize(G + momentum * M)   (Nesterov)

orthogonalize() finds U V^T without an SVD, by a Newton-Schulz iteration: a few multiplies
that push every singular value of M towards 1. AdamW keeps the embeddings, lm_head and norm
gains."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import torch
import torch.nn as nn

from .config import TrainConfig
from .model import GPT

# p(s) = a s + b s^3 + c s^5 on every singular value s at once: pulls any s in (0, 1] to
# within about 0.3 of 1 in five steps, which is all Muon needs
NEWTON_SCHULZ = (3.4445, -4.7750, 2.0315)


def orthogonalize(m: torch.Tensor, steps: int = 5) -> torch.Tensor:
    """Approximately U V^T for m = U S V^T; m: [stack, rows, cols], a stack of matrices."""
    tall = m.size(-2) > m.size(-1)
    wide = m.mT if tall else m  # iterate on the wide side, where x x^T is the smaller square
    x = wide / (wide.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # every singular value now <= 1
    a, b, c = NEWTON_SCHULZ
    for _ in range(steps):
        xxt = x @ x.mT  # U (a S + b S^3 + c S^5) V^T in two fused multiply-adds: fewer ops
        x = torch.baddbmm(x, torch.baddbmm(xxt, xxt, xxt, beta=b, alpha=c), x, beta=a)
    return x.mT if tall else x


class Muon(torch.optim.Optimizer):
    """Muon for 2-D weights, with decoupled weight decay as in AdamW."""

    def __init__(
        self,
        params: list[dict[str, Any]],
        lr: float,
        momentum: float = 0.95,
        weight_decay: float = 0.0,
    ) -> None:
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]  # (no closure: Muon's step is one)
        for group in self.param_groups:
            muon_update(group, self.state)


def muon_update(group: dict[str, Any], state: Any) -> None:
    """One Muon step for a parameter group; `state`: each parameter's momentum."""
    lr, beta = group["lr"], group["momentum"]
    params = [p for p in group["params"] if p.grad is not None]
    grads = [p.grad for p in params]
    momenta = [state[p].setdefault("momentum", torch.zeros_like(p)) for p in params]
    torch._foreach_mul_(momenta, beta)  # each op one call for every matrix: a loop of
    torch._foreach_add_(momenta, grads)  # small ops costs more than their arithmetic
    directions = torch._foreach_add(grads, momenta, alpha=beta)
    torch._foreach_mul_(params, 1 - lr * group["weight_decay"])
    by_shape = defaultdict(list)  # one stack a shape, a tall matrix as its transpose:
    for p, direction in zip(params, directions):  # so mlp_fc1 joins mlp_fc2's stack
        tall = p.size(0) > p.size(1)
        shape = (direction.mT if tall else direction).shape
        by_shape[shape].append((p, direction, tall))
    for triples in by_shape.values():
        updates = orthogonalize(torch.stack([d.mT if t else d for _, d, t in triples]))
        for (p, _, tall), u in zip(triples, updates):
            scale = max(1.0, p.size(0) / p.size(1)) ** 0.5  # a tall matrix by sqrt(rows / cols)
            p.add_(u.mT if tall else u, alpha=-lr * scale)


class Optimizers:
    """Several optimizers stepped as one; their param_groups are listed together."""

    def __init__(self, **named: torch.optim.Optimizer):
        self.named = named

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return [group for optimizer in self.named.values() for group in optimizer.param_groups]

    def step(self) -> None:
        for optimizer in self.named.values():
            optimizer.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.named.values():
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {name: optimizer.state_dict() for name, optimizer in self.named.items()}


def make_optimizer(model: GPT, t: TrainConfig) -> torch.optim.Optimizer | Optimizers:
    """AdamW (or Adam) for every parameter, or Muon for the hidden matrices and AdamW for
    the rest. Decay on matrices only. A group's rate is the schedule's times its lr_scale,
    the embeddings' train.embedding_lr_scale. Fused AdamW: one kernel for every parameter,
    not ops per tensor."""
    muon = t.optimizer == "muon"
    hidden: list[nn.Parameter] = []
    embeddings: list[nn.Parameter] = []
    matrices: list[nn.Parameter] = []
    others: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if muon and name.startswith("layers.") and p.dim() == 2:
            hidden.append(p)
        elif name in ("wte.weight", "wpe.weight"):
            embeddings.append(p)
        else:
            (matrices if p.dim() >= 2 else others).append(p)
    decay = t.weight_decay
    groups = [
        dict(params=embeddings, weight_decay=decay, lr_scale=t.embedding_lr_scale),
        dict(params=matrices, weight_decay=decay, lr_scale=1.0),
        dict(params=others, weight_decay=0.0, lr_scale=1.0),
    ]
    adam_class = torch.optim.Adam if t.optimizer == "adam" else torch.optim.AdamW
    adam = adam_class(groups, lr=t.lr, betas=(t.beta1, t.beta2), eps=t.eps, fused=True)
    if not muon:
        return adam  # formats/trainer_state.py checks a saved state before it is loaded
    hidden_group = {"params": hidden, "lr_scale": t.muon_lr / t.lr}
    for_hidden = Muon([hidden_group], lr=t.muon_lr, momentum=t.muon_momentum, weight_decay=decay)
    return Optimizers(adamw=adam, muon=for_hidden)


def lr_at(step: int, progress: float, recipe: TrainConfig) -> float:
    """Linear warmup over warmup_steps, then constant, linear to 0 (microgpt) or cosine to
    min_lr. `progress`: how much of the run is done, 0 to 1, by steps (or by time with a
    time limit)."""
    if step < recipe.warmup_steps:
        return recipe.lr * (step + 1) / recipe.warmup_steps
    if recipe.lr_schedule == "constant":
        return recipe.lr
    if recipe.lr_schedule == "linear":
        return recipe.lr * (1 - progress)
    half_range = 0.5 * (recipe.lr - recipe.min_lr)
    return recipe.min_lr + half_range * (1 + math.cos(math.pi * min(progress, 1.0)))
