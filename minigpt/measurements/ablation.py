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

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from minigpt.data import IGNORE, TokenizedNames, Tokenizer
from minigpt.errors import UsageError
from minigpt.formats.checkpoint_checks import check_model_and_names
from minigpt.measurements.blocks import blocks
from minigpt.measurements.logit_lens import embedded, read_off
from minigpt.measurements.prefix_forest import (
    PrefixForest,
    embedded_nodes,
    forest_nats,
    node_attention,
    prefix_forests,
    read_by_prefixes,
)
from minigpt.model import GPT, causal_attention, eval_mode

MODES = ("zero", "mean")
BATCH = 128  # names scored at once (smaller batches of names of like length pad less)
# residual-stream rows (positions x variants) run through the layers above a part at once: a few
# thousand keep each layer's activations in a CPU's cache (docs/explorer.md has the measurement)
ROWS = 6144


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

    def to_dict(self) -> dict:
        return {"part": str(self), "kind": self.kind, "layer": self.layer, "head": self.head}


def all_parts(model: GPT) -> list[Part]:
    """Every head, then every layer's attention, then every layer's MLP."""
    c = model.config
    heads = [Part("head", l, h) for l in range(c.n_layer) for h in range(c.n_head)]
    return heads + [Part("attention", l) for l in range(c.n_layer)] + [Part("mlp", l) for l in range(c.n_layer)]


def forward_without(model: GPT, idx: torch.Tensor, off: Iterable[Part] = (), means: dict | None = None) -> torch.Tensor:
    """The model's logits [B, T, vocab] with the parts in `off` switched off: their outputs zeroed,
    or, with `means` (from `mean_outputs`), replaced by their mean outputs."""
    return read_off(model, through_layers(model, embedded(model, idx), range(model.config.n_layer), off, means))


def through_layers(
    model: GPT, x: torch.Tensor, layers: range, off: Iterable[Part] = (), means: dict | None = None, attend=None
) -> torch.Tensor:
    """The residual stream x [B, T, C] after `layers`, with the parts in `off` switched off. The loop
    is model.py's, written out so that parts can be left out of it and it can start at any layer.
    `attend` is the attention step (model.py's Attend; the fused kernel when None)."""
    off = set(off)

    def replaced(kind, l):  # what a part that is off adds to the residual stream
        return means[kind][l] if means else 0.0

    model_layers = blocks(model)
    for l in layers:
        layer = model_layers[l]
        if Part("attention", l) in off:
            x = x + replaced("attention", l)
        else:
            heads = [p.head for p in off if p.kind == "head" and p.layer == l and p.head is not None]
            step = heads_replaced(heads, means["head"][l] if means else None, attend) if heads else attend
            x = x + layer.attn(layer.attn_norm(x), step)
        x = x + (replaced("mlp", l) if Part("mlp", l) in off else layer.mlp(layer.mlp_norm(x)))
    return x


def heads_replaced(heads: list[int], means: torch.Tensor | None, base=None):
    """A layer's attention step (`base`, or the causal formula) with these heads' outputs [B, H, T, hd]
    replaced: by 0, or by their means [H, hd]."""

    def attend(q, k, v):
        y = (base(q, k, v) if base else causal_attention(q, k, v)[0]).clone()
        for h in heads:
            y[:, h] = means[h] if means is not None else 0.0
        return y

    return attend


@dataclass
class WholePass:
    """The whole model on one forest of names, and what each part gave: per layer the residual stream
    entering it (and, last, after the last layer), its heads' outputs [1, H, P, hd] before attn_wo, and
    its attention's and MLP's outputs [1, P, C]. Means and each part's cost are read off it."""

    forest: PrefixForest
    entering: list[torch.Tensor] = field(default_factory=list)
    heads: list[torch.Tensor] = field(default_factory=list)
    attention: list[torch.Tensor] = field(default_factory=list)
    mlp: list[torch.Tensor] = field(default_factory=list)


@torch.no_grad()
def whole_pass(model: GPT, forest: PrefixForest) -> WholePass:
    attend, found = node_attention(forest), WholePass(forest)
    x = embedded_nodes(model, forest)
    for layer in blocks(model):
        found.entering.append(x)

        def keep(q, k, v):
            found.heads.append(attend(q, k, v))
            return found.heads[-1]

        found.attention.append(layer.attn(layer.attn_norm(x), keep))
        x = x + found.attention[-1]
        found.mlp.append(layer.mlp(layer.mlp_norm(x)))
        x = x + found.mlp[-1]
    found.entering.append(x)
    return found


@torch.no_grad()
def mean_outputs(model: GPT, passes: list[WholePass]) -> dict:
    """Each part's mean output over every position the names fill: per layer, the heads' [H, hd]
    (before attn_wo), the attention's [C] and the MLP's [C] (after their projections)."""
    L, H, C = model.config.n_layer, model.config.n_head, model.config.n_embd
    sums = {
        "head": torch.zeros(L, H, C // H, dtype=torch.float64),
        "attention": torch.zeros(L, C, dtype=torch.float64),
        "mlp": torch.zeros(L, C, dtype=torch.float64),
    }
    count = 0.0
    for found in passes:
        visits = found.forest.visits.double().to(found.entering[0].device)
        for l in range(L):
            sums["head"][l] += torch.einsum("hpd,p->hd", found.heads[l][0].double(), visits).cpu()
            sums["attention"][l] += (found.attention[l][0].double().T @ visits).cpu()
            sums["mlp"][l] += (found.mlp[l][0].double().T @ visits).cpu()
        count += float(visits.sum())
    dtype, device = model.lm_head.weight.dtype, model.lm_head.weight.device
    return {kind: (total / max(count, 1)).to(device, dtype) for kind, total in sums.items()}


def nats(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """The summed cross-entropy of the targets that are not padding."""
    return F.cross_entropy(
        logits.flatten(0, 1).double(), targets.flatten(), ignore_index=IGNORE, reduction="sum"
    ).item()


@torch.no_grad()
def loss_without(model: GPT, data: TokenizedNames, off: Iterable[Part] = (), means: dict | None = None) -> float:
    """Mean cross-entropy per predicted token (characters and the end) over every name, with `off` switched off."""
    total, count = 0.0, 0
    for x, y in data.in_order(BATCH):
        total += nats(forward_without(model, x, off, means), y)
        count += int((y != IGNORE).sum())
    return total / count


@torch.no_grad()
def losses_each_off(
    model: GPT, passes: list[WholePass], parts: list[Part], modes: list[dict | None]
) -> list[list[float]]:
    """Per mode (its mean outputs, or None to zero a part): the whole model's loss, then the loss with
    each part off on its own, `loss_without` for each, sparing the work that is the same. Each
    distinct prefix of the names is computed once (the forests); the layers below a part's are the
    whole model's, and so is the part's own layer but for the part (`own_layer_each_off`); from
    there a few parts at a time go through the layers above, stacked as one batch of ROWS rows."""
    L = model.config.n_layer
    totals, count = torch.zeros(len(modes), len(parts) + 1, dtype=torch.float64), 0
    for found in passes:
        attend = node_attention(found.forest)
        totals[:, 0] += forest_nats(model, found.entering[L], found.forest)[0].cpu()
        per = max(1, ROWS // found.entering[0].size(1))
        for l in range(L):
            here = [i for i, part in enumerate(parts) if part.layer == l]
            for m, means in enumerate(modes):
                for some in (here[at : at + per] for at in range(0, len(here), per)):
                    after = own_layer_each_off(model, found, l, [parts[i] for i in some], means)
                    stream = through_layers(model, after, range(l + 1, L), attend=attend)
                    totals[m, [1 + i for i in some]] += forest_nats(model, stream, found.forest).cpu()
        count += found.forest.predicted
    return (totals / count).tolist()


def own_layer_each_off(model: GPT, found: WholePass, l: int, parts: list[Part], means: dict | None) -> torch.Tensor:
    """The residual stream after layer l [len(parts), P, C] with each of its `parts` off in turn, from the
    whole pass: the attention is not run again (a head off changes its output by the head's slice of
    attn_wo times the change in the head's output, attn_wo having no bias); the MLP runs for every
    part but its own."""
    layer, x, attention = blocks(model)[l], found.entering[l][0], found.attention[l][0]
    width = x.size(-1) // model.config.n_head

    def replaced(kind, *which):  # what a part that is off gives instead
        return means[kind][l][which] if means else torch.zeros_like(x[0, :width] if kind == "head" else x[0])

    def after_attention(part):
        if part.kind == "head":
            h = part.head
            change = replaced("head", h) - found.heads[l][0, h]  # [P, hd]
            return x + attention + change @ layer.attn.attn_wo.weight[:, h * width : (h + 1) * width].T
        return x + (replaced("attention") if part.kind == "attention" else attention)

    def after_mlp(part, mid):
        return mid + (replaced("mlp") if part.kind == "mlp" else layer.mlp(layer.mlp_norm(mid)))

    return torch.stack([after_mlp(part, after_attention(part)) for part in parts])


@dataclass
class Ablation:
    mode: str
    names: int
    tokens: int
    loss: float  # the whole model's
    costs: list[tuple[Part, float]]  # each part's loss with it off, minus `loss`; largest first
    means: dict | None = None  # with mode "mean": each part's mean output over the names (mean_outputs)

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "names": self.names,
            "tokens": self.tokens,
            "loss": self.loss,
            "parts": [{**p.to_dict(), "loss": self.loss + cost, "cost": cost} for p, cost in self.costs],
        }


@torch.no_grad()
def ablate(model: GPT, tokenizer: Tokenizer, names: list[str], mode: str = "zero") -> Ablation:
    """Switch each part off in turn and score `names`: what each part is worth, in nats per token."""
    return ablate_modes(model, tokenizer, names, [mode])[0]


@torch.no_grad()
def ablate_modes(
    model: GPT, tokenizer: Tokenizer, names: list[str], modes=MODES, forests: list[PrefixForest] | None = None
) -> list[Ablation]:
    """`ablate` in each of `modes` at once, sharing the whole model's pass and the layers above each part
    (the explorer page measures both at every training snapshot). `forests`: the names' prefix_forests,
    when they are already made."""
    names = check_model_and_names(model, tokenizer, names)
    read_by_prefixes(model, "ablation")
    for mode in modes:
        if mode not in MODES:
            raise UsageError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    device = model.lm_head.weight.device
    forests = forests or prefix_forests(names, tokenizer, model.config.block_size)
    parts = all_parts(model)
    with eval_mode(model):
        passes = [whole_pass(model, forest.to(device)) for forest in forests]
        means = mean_outputs(model, passes) if "mean" in modes else None
        losses = losses_each_off(model, passes, parts, [means if mode == "mean" else None for mode in modes])
    tokens = sum(found.forest.predicted for found in passes)
    reports = []
    for mode, (base, *each) in zip(modes, losses):
        costs = sorted([(part, loss - base) for part, loss in zip(parts, each)], key=lambda pc: -pc[1])
        reports.append(Ablation(mode, len(names), tokens, base, costs, means if mode == "mean" else None))
    return reports
