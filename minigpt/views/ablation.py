"""Switch parts of a trained model off and measure what each costs: ablation.

An attention pattern says where a head looks, not whether the model needs it. Switching a
part off and scoring the names again says that: the change in loss (nats per predicted
token) is what the part was worth. The parts are each head, each layer's attention as a
whole, and each layer's MLP. Off means one of two things:

    zero   the part's output is 0: a head's output before attn_wo (so it adds nothing to
           the residual stream), or the attention's or MLP's output after their projections;
    mean   the part's output is its mean over the names (every position of every name),
           the same for every input: it keeps the part's average push and drops what
           depends on the input.

One function, `forward_without`, runs the model with any set of parts off; the explorer
page's JavaScript (`forward` in model.js with `off`) does the same and a test holds the
two equal.

    report = ablate(ckpt.model, tokenizer, names, mode="zero")    # what `minigpt ablate` prints
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import torch
import torch.nn.functional as F

from minigpt.cli.errors import UsageError
from minigpt.data import TokenizedNames, Tokenizer
from minigpt.model import GPT, IGNORE, causal_attention

MODES = ("zero", "mean")
BATCH = 512  # names scored at once


@dataclass(frozen=True)
class Part:
    """One part that can be switched off: a head (kind "head"), a layer's attention or its MLP."""

    kind: str  # "head", "attention" or "mlp"
    layer: int
    head: int | None = None

    def __str__(self) -> str:
        if self.kind == "head":
            return f"layer {self.layer} head {self.head}"
        return f"layer {self.layer} {'attention' if self.kind == 'attention' else 'MLP'}"


def all_parts(model: GPT) -> list[Part]:
    """Every head, then every layer's attention, then every layer's MLP."""
    c = model.config
    heads = [Part("head", l, h) for l in range(c.n_layer) for h in range(c.n_head)]
    return heads + [Part("attention", l) for l in range(c.n_layer)] + [Part("mlp", l) for l in range(c.n_layer)]


def forward_without(model: GPT, idx: torch.Tensor, off: Iterable[Part] = (), means: dict | None = None) -> torch.Tensor:
    """The model's logits [B, T, vocab] with the parts in `off` switched off: their outputs zeroed,
    or, with `means` (from `mean_outputs`), replaced by their mean outputs."""
    off = set(off)
    attends, hooks = [], []
    for l, layer in enumerate(model.layers):
        heads = [p.head for p in off if p.kind == "head" and p.layer == l]
        attends.append(heads_replaced(heads, means and means["head"][l]) if heads else layer.attn.attend)
        for kind, module in (("attention", layer.attn), ("mlp", layer.mlp)):
            if Part(kind, l) in off:
                replacement = means[kind][l] if means else 0.0
                hooks.append(module.register_forward_hook(lambda _m, _in, out, r=replacement: torch.zeros_like(out) + r))
    try:
        logits, _ = model(idx, attend=attends)
    finally:
        for hook in hooks:
            hook.remove()
    return logits


def heads_replaced(heads: list[int], means: torch.Tensor | None):
    """A layer's attention step with these heads' outputs [B, H, T, hd] replaced: by 0, or by their means [H, hd]."""

    def attend(q, k, v):
        y = causal_attention(q, k, v)[0].clone()
        for h in heads:
            y[:, h] = means[h] if means is not None else 0.0
        return y

    return attend


@torch.no_grad()
def mean_outputs(model: GPT, data: TokenizedNames) -> dict:
    """Each part's mean output over every position the names fill: per layer, the heads' [H, hd]
    (before attn_wo), the attention's [C] and the MLP's [C] (after their projections)."""
    L, H, C = model.config.n_layer, model.config.n_head, model.config.n_embd
    sums = {"head": torch.zeros(L, H, C // H, dtype=torch.float64), "attention": torch.zeros(L, C, dtype=torch.float64),
            "mlp": torch.zeros(L, C, dtype=torch.float64)}
    count = 0
    for x, y in data.in_order(BATCH):
        real = (y != IGNORE)  # [B, T]: the positions that are not padding
        seen = {"head": [], "attention": [], "mlp": []}

        def recorder(kind):
            return lambda _m, _in, out: seen[kind].append(out)

        def attend(q, k, v):
            out = causal_attention(q, k, v)[0]
            seen["head"].append(out)
            return out

        hooks = [layer.attn.register_forward_hook(recorder("attention")) for layer in model.layers]
        hooks += [layer.mlp.register_forward_hook(recorder("mlp")) for layer in model.layers]
        try:
            model(x, attend=[attend] * L)
        finally:
            for hook in hooks:
                hook.remove()
        for l in range(L):
            sums["head"][l] += (seen["head"][l] * real[:, None, :, None]).sum((0, 2)).double().cpu()
            sums["attention"][l] += (seen["attention"][l] * real[..., None]).sum((0, 1)).double().cpu()
            sums["mlp"][l] += (seen["mlp"][l] * real[..., None]).sum((0, 1)).double().cpu()
        count += int(real.sum())
    dtype = model.lm_head.weight.dtype
    device = model.lm_head.weight.device
    return {kind: (total / max(count, 1)).to(device, dtype) for kind, total in sums.items()}


@torch.no_grad()
def loss_without(model: GPT, data: TokenizedNames, off: Iterable[Part] = (), means: dict | None = None) -> float:
    """Mean cross-entropy per predicted token (characters and the end) over every name, with `off` switched off."""
    total, count = 0.0, 0
    for x, y in data.in_order(BATCH):
        logits = forward_without(model, x, off, means)
        total += F.cross_entropy(logits.flatten(0, 1).double(), y.flatten(), ignore_index=IGNORE, reduction="sum").item()
        count += int((y != IGNORE).sum())
    return total / count


@dataclass
class Ablation:
    mode: str
    names: int
    tokens: int
    loss: float  # the whole model's
    costs: list[tuple[Part, float]]  # each part's loss with it off, minus `loss`; largest first
    means: dict | None = None  # with mode "mean": each part's mean output over the names (mean_outputs)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "names": self.names, "tokens": self.tokens, "loss": self.loss,
                "parts": [{"part": str(p), "kind": p.kind, "layer": p.layer, "head": p.head, "loss": self.loss + cost,
                           "cost": cost} for p, cost in self.costs]}


@torch.no_grad()
def ablate(model: GPT, tokenizer: Tokenizer, names: list[str], mode: str = "zero") -> Ablation:
    """Switch each part off in turn and score `names`: what each part is worth, in nats per token."""
    if mode not in MODES:
        raise UsageError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    was_training = model.training
    model.eval()
    data = TokenizedNames(names, tokenizer, model.config.block_size).to(model.lm_head.weight.device)
    means = mean_outputs(model, data) if mode == "mean" else None
    base = loss_without(model, data)
    costs = [(part, loss_without(model, data, [part], means) - base) for part in all_parts(model)]
    model.train(was_training)
    return Ablation(mode, len(names), int(data.lengths.sum()), base, sorted(costs, key=lambda pc: -pc[1]), means)
