"""Training on a CPU, sooner, swapped into a built model from outside (the model has no mode):

- a faster dropout: what nn.Dropout computes (with p rounded to a multiple of 1/256), with a
  cheaper random mask; docs/speed.md has what it buys;
- attention in bfloat16 by its formula (attention.py's causal_attention), where torch's fused
  kernel is the slower of the two.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from minigpt.attention import causal_attention
from minigpt.model import CausalSelfAttention


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


def bfloat16_by_formula(attn: CausalSelfAttention):
    """The layer's attention step, by the formula in bfloat16 and by its fused kernel otherwise."""
    fused = attn.attend

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if q.dtype != torch.bfloat16 or not attn.causal:  # the formula is the causal one
            return fused(q, k, v)
        return causal_attention(q, k, v, attn.attn_dropout if attn.training else 0.0)[0]
    return attend


def use_cpu_speedups(model: nn.Module) -> nn.Module:
    """Both speed-ups, in place: the same numbers as the model computes itself (returns it)."""
    use_fast_dropout(model)
    for module in model.modules():
        if isinstance(module, CausalSelfAttention):
            module.attend = bfloat16_by_formula(module)
    return model
