"""What makes an MLP unit fire: the prefixes of a set of names where each unit's activation (after
the nonlinearity, what mlp_fc2 reads) is largest.

A unit is one of the 4 × n_embd numbers between a layer's mlp_fc1 and mlp_fc2. Reading the
prefixes where it fires most names it by what it responds to ("after a double letter", "the
third character of a name starting with m") rather than by its index. What it writes is the
other half: its column of mlp_fc2, which the explorer page reads through lm_head.

    found = firing_prefixes(model, tokenizer, names)   # the page carries it (views/page_data.py)
"""

from __future__ import annotations

import torch

from minigpt.common.text import token_label
from minigpt.data import Tokenizer
from minigpt.measurements.blocks import blocks
from minigpt.measurements.prefix_forest import read_by_prefixes
from minigpt.model import GPT, eval_mode

TOP = 10  # prefixes kept per unit


def distinct_prefixes(names: list[str], tokenizer: Tokenizer, block_size: int) -> list[tuple[int, ...]]:
    """Every distinct prefix the model reads in these names (the boundary token first), each once, in order."""
    seen: dict[tuple[int, ...], None] = {}
    for name in names:
        ids = (tokenizer.bos, *tokenizer.encode(name)[: block_size - 1])
        for t in range(1, len(ids) + 1):
            seen.setdefault(ids[:t], None)
    return list(seen)


@torch.no_grad()
def unit_activations(model: GPT, prefixes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    """Each layer's MLP activations [prefixes, 4 × n_embd] at each prefix's last position."""
    # a prefix is read at its last position of the longest prefix that starts with it
    longest: dict[tuple[int, ...], tuple[int, ...]] = {}
    for p in sorted(prefixes, key=len, reverse=True):
        for t in range(1, len(p) + 1):
            longest.setdefault(p[:t], p)
    leaves = list(dict.fromkeys(longest[p] for p in prefixes))
    row = {leaf: n for n, leaf in enumerate(leaves)}
    width = max(map(len, leaves))
    device = model.lm_head.weight.device
    idx = torch.tensor([list(leaf) + [leaf[0]] * (width - len(leaf)) for leaf in leaves], device=device)
    found: dict[int, torch.Tensor] = {}
    hooks = [
        layer.mlp.mlp_fc2.register_forward_hook(lambda m, i, o, l=l: found.__setitem__(l, i[0]))
        for l, layer in enumerate(blocks(model))
    ]
    try:
        with eval_mode(model):
            model(idx)
    finally:
        for hook in hooks:
            hook.remove()
    where_row = torch.tensor([row[longest[p]] for p in prefixes], device=device)
    where_position = torch.tensor([len(p) - 1 for p in prefixes], device=device)
    return [found[l][where_row, where_position].float().cpu() for l in range(model.config.n_layer)]


def firing_prefixes(model: GPT, tokenizer: Tokenizer, names: list[str], top: int = TOP) -> dict:
    """For every MLP unit, the prefixes of `names` where it fires most, largest first.

    {"prefixes": [text, ...], "layers": [[[prefix index, ...], ...] per unit], "values": same shape}
    """
    read_by_prefixes(model, "what MLP units fire on")
    prefixes = distinct_prefixes(names, tokenizer, model.config.block_size)
    if not prefixes:
        return {"prefixes": [], "layers": [], "values": []}
    best = [torch.topk(acts, min(top, acts.size(0)), dim=0) for acts in unit_activations(model, prefixes)]
    return {
        "prefixes": ["".join(token_label(tokenizer, t) for t in p) for p in prefixes],
        "layers": [b.indices.T.tolist() for b in best],
        "values": [[[round(v, 3) for v in unit] for unit in b.values.T.tolist()] for b in best],
    }
