"""A faster dropout for training on a CPU, swapped into a built model from outside.

It computes what nn.Dropout computes (with p rounded to a multiple of 1/256), with a
cheaper random mask; docs/speed.md has what it buys. The model itself uses nn.Dropout.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Dropout(nn.Module):
    """nn.Dropout, faster on a CPU: zero each element with probability p (rounded to a
    multiple of 1/256) and scale the rest by 1/(1 - p).

    On a CPU, torch's dropout draws one random number per element, which for a model this
    small costs more than the rest of its step. Here one 64-bit draw gives the mask bytes
    of eight elements. Elsewhere it is torch's own dropout.
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self.threshold = round(p * 256)  # drop where a random byte is below this

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.threshold == 0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)  # fast enough where it runs
        n = x.numel()
        draws = torch.randint(-(2**63), 2**63 - 1, ((n + 7) // 8,), dtype=torch.int64)
        keep = draws.view(torch.uint8)[:n].view_as(x) >= self.threshold
        return x * keep * (256 / (256 - self.threshold))


def use_fast_dropout(model: nn.Module) -> nn.Module:
    """Replace every nn.Dropout in `model` by `Dropout` of the same p (in place; returns the model)."""
    for module in model.modules():
        for name, child in module.named_children():
            if isinstance(child, nn.Dropout):
                setattr(module, name, Dropout(child.p))
    return model
