"""Where a logit comes from: direct logit attribution.

The residual stream the model reads its prediction from is a sum. The embeddings put in one
vector (wte[token] + wpe[position], normed); each head adds its output through its own slice of
attn_wo (the attention's output is the sum of those slices, with no bias); each MLP adds its
output. The logits are lm_head of that sum after the final norm, and the final norm multiplies
the whole stream by one number at each position, 1/rms(x), and by its gains. So the logit of a
character c splits exactly into one term per part:

    logit[c] = Σ over parts   (lm_head[c] ⊙ gain) · part's output / rms(x)

(the microgpt recipe has no final norm: its scale is 1 and it has no gains). The scale is the
one the whole stream set at this position, as TransformerLens's direct attribution reads it: a
part's term is what it writes toward c, not what the logit would be without it, which is what
switching it off says (measurements/ablation.py).

    found = logit_attribution(model, tokenizer, ids)   # inspect-attention --json's "attribution"
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import torch

from minigpt.common.text import token_label
from minigpt.data import Tokenizer
from minigpt.measurements.ablation import Part, heads_replaced
from minigpt.measurements.blocks import blocks
from minigpt.measurements.logit_lens import embedded
from minigpt.model import GPT


def part_names(model: GPT) -> list[str]:
    """The parts that write into the residual stream, in the order they write: the embeddings, then per
    layer its heads and its MLP."""
    c = model.config
    return ["embeddings"] + [
        name for l in range(c.n_layer) for name in [f"layer {l} head {h}" for h in range(c.n_head)] + [f"layer {l} MLP"]
    ]


@torch.no_grad()
def part_outputs(
    model: GPT, idx: torch.Tensor, off: Iterable[Part] = (), means: dict | None = None
) -> tuple[list[str], torch.Tensor]:
    """What each part writes into the residual stream: their names and [parts, B, T, C]; their sum is the
    stream the model reads its prediction from. With parts in `off` switched off as ablation.py switches
    them (0, or with `means` their mean output), a layer whose whole attention is off writes what took its
    place, which no head owns: "layer L attention (off)", after that layer's heads (the page does the same)."""
    c, off = model.config, set(off)
    x = embedded(model, idx)
    names, outputs = ["embeddings"], [x]
    for l, layer in enumerate(blocks(model)):
        names += [f"layer {l} head {h}" for h in range(c.n_head)]
        if Part("attention", l) in off:
            outputs += [torch.zeros_like(x)] * c.n_head
            attention = torch.zeros_like(x) + (means["attention"][l] if means else 0.0)
            names.append(f"layer {l} attention (off)")
            outputs.append(attention)
        else:
            heads: list[torch.Tensor] = []
            step = heads_replaced(
                [p.head for p in off if p.kind == "head" and p.layer == l and p.head is not None],
                means["head"][l] if means else None,
            )

            def keep(q, k, v, heads=heads, step=step):  # the attention step, its heads' outputs kept
                heads.append(step(q, k, v))
                return heads[-1]

            attention = layer.attn(layer.attn_norm(x), keep)
            slices = layer.attn.attn_wo.weight.view(
                c.n_embd, c.n_head, c.head_dim
            )  # [C, H, hd]: a head's slice of attn_wo
            outputs += list(torch.einsum("bhtd,chd->hbtc", heads[0], slices))
        x = x + attention
        mlp = (
            (torch.zeros_like(x) + (means["mlp"][l] if means else 0.0))
            if Part("mlp", l) in off
            else layer.mlp(layer.mlp_norm(x))
        )
        names.append(f"layer {l} MLP")
        outputs.append(mlp)
        x = x + mlp
    return names, torch.stack(outputs)


@torch.no_grad()
def reading(model: GPT, stream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How lm_head reads a final stream [B, T, C]: the final norm's scale at each position [B, T] (1/rms;
    1 without a final norm) and the vectors each character's logit is a dot product with [V, C]
    (lm_head's rows times the norm's gains, when it has them)."""
    rows = model.lm_head.weight
    norm = model.final_norm
    if norm is None:
        return torch.ones(stream.shape[:-1], dtype=stream.dtype, device=stream.device), rows
    eps = norm.eps if norm.eps is not None else torch.finfo(stream.dtype).eps  # torch's RMSNorm's own default
    scale = torch.rsqrt(stream.pow(2).mean(-1) + eps)
    return scale, rows * norm.weight if norm.weight is not None else rows


@torch.no_grad()
def attribution(
    model: GPT, idx: torch.Tensor, off: Iterable[Part] = (), means: dict | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each part's term in every logit [parts, B, T, V] (part_outputs' order), and the final norm's scale
    [B, T]. The terms of a logit add up to it."""
    _, outputs = part_outputs(model, idx, off, means)
    scale, rows = reading(model, outputs.sum(0))
    return (outputs * scale[..., None]) @ rows.T, scale


@torch.no_grad()
def logit_attribution(model: GPT, tokenizer: Tokenizer, ids: list[int]) -> dict:
    """For one token sequence (the boundary token first): at each position, the logit of the token that
    actually comes next (the end of the name after the last character) split into its parts' terms.

    {"parts": [names], "positions": [{"position", "read", "target", "logit", "scale", "parts": [terms]}]}
    """
    model.eval()
    terms, scale = attribution(model, torch.tensor([ids], device=model.lm_head.weight.device))
    terms, scale = terms[:, 0].double().cpu(), scale[0].double().cpu()  # [parts, T, V], [T]
    targets = ids[1:] + [tokenizer.bos]
    label = functools.partial(token_label, tokenizer)
    return {
        "parts": part_names(model),
        "positions": [
            {
                "position": t,
                "read": "".join(label(i) for i in ids[: t + 1]),
                "target": label(targets[t]),
                "logit": terms[:, t, targets[t]].sum().item(),
                "scale": scale[t].item(),
                "parts": terms[:, t, targets[t]].tolist(),
            }
            for t in range(len(ids))
        ],
    }
