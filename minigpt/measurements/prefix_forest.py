"""Names as a forest of prefixes: every distinct prefix of a set of names computed once.

The model's output at a position depends on the tokens up to it alone, and names begin alike:
516 validation names fill 3,631 positions but have 1,899 distinct prefixes. Scoring them name by
name computes the shared beginnings again for every name. A forest holds each distinct prefix
(the boundary token first) once, as a node:

    token       its last token, at `position` (the prefix's length - 1)
    visits      how many names read this position (a mean over positions counts it that often)
    targets     after it, each next token with how many names predict it (the loss counts each)

A position's query reads the keys and values of its own prefixes, exactly the positions 0..t a
name's position t reads under the causal mask, so every number is the one the names give, up to
the order floats are added in. The nodes of one forest are computed as one batch [1, P, C]: the
model's own modules run on it, with `node_attention(forest)` as their attention step, which
lays the nodes out along the forest's longest prefixes (`paths`, no shorter prefix of another
name) for the causal attention kernel, then reads each node's output off one path through it.

    forests = prefix_forests(names, tokenizer, block_size)   # a few forests, each of bounded size
    stream = through_layers(model, embedded_nodes(model, forest), ..., attend=node_attention(forest))
    nats = forest_nats(model, stream[None], forest)       # the names' summed loss, read off the last stream
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.measurements.blocks import blocks
from minigpt.model import GPT, Attend, causal_attention

NODES = 8192  # the most nodes in one forest: names are grouped by first character up to this (memory stays bounded)
PATH_GROUPS = 4  # paths of like length are attended to together: fewer padded positions
LOGITS = 1 << 22  # logits worked out at once when scoring (32 MB in float64), whatever the vocabulary
PAIRED = 2  # paths read as one sequence by the fused kernel: its work per sequence is the slow part (docs/explorer.md)


def read_by_prefixes(model: GPT, what: str) -> None:
    """Refuse a model trained without the causal mask (model.causal = false): its position t reads the
    positions after it too, so a prefix alone does not give its numbers, and `what` is measured by prefixes."""
    if not model.config.causal:
        raise UsageError(
            f"{what} reads a model under the causal mask, and this one was trained without it "
            f"(model.causal = false); its attention maps and losses are in inspect-attention and eval"
        )


@dataclass
class PrefixForest:
    tokens: torch.Tensor  # [P] each node's last token
    positions: torch.Tensor  # [P]
    paths: list[torch.Tensor]  # [B, A] per group of paths of like length: the nodes from the root to a leaf
    where: torch.Tensor  # [P] each node's place in the groups' paths, flattened one after another
    visits: torch.Tensor  # [P] float: how many names read the node's position
    target_nodes: torch.Tensor  # [K] a (node, next token) pair the names predict, and how often
    target_tokens: torch.Tensor  # [K]
    target_counts: torch.Tensor  # [K] float64

    def to(self, device) -> PrefixForest:
        tensors = (self.tokens, self.positions, self.where, self.visits)
        targets = (self.target_nodes, self.target_tokens, self.target_counts)
        tokens, positions, where, visits = (t.to(device) for t in tensors)
        return PrefixForest(
            tokens, positions, [p.to(device) for p in self.paths], where, visits, *(t.to(device) for t in targets)
        )

    @property
    def predicted(self) -> int:
        """How many tokens the names predict (characters and ends): the loss's denominator."""
        return int(self.target_counts.sum())


def prefix_forest(names: list[str], tokenizer: Tokenizer, block_size: int) -> PrefixForest:
    """One forest of these names, each read as the model reads it: [BOS] + characters, at most block_size positions."""
    node_of: dict[tuple[int, ...], int] = {(): 0}  # a prefix (its tokens after BOS) -> its node
    tokens, positions, parents, visits = [tokenizer.bos], [0], [-1], [0.0]
    targets: dict[tuple[int, int], float] = {}
    for name in names:
        full = tokenizer.encode(name)
        ids = full[: block_size - 1]  # the characters read; the last position predicts the next, or the end
        node, prefix = 0, tuple[int, ...]()
        visits[0] += 1
        for t, token in enumerate(ids):
            targets[(node, token)] = targets.get((node, token), 0.0) + 1
            prefix = prefix + (token,)
            if prefix not in node_of:
                node_of[prefix] = len(tokens)
                tokens.append(token)
                positions.append(t + 1)
                parents.append(node)
                visits.append(0.0)
            node = node_of[prefix]
            visits[node] += 1
        after = (
            full[len(ids)] if len(full) > len(ids) else tokenizer.bos
        )  # a name cut at block_size predicts a character
        targets[(node, after)] = targets.get((node, after), 0.0) + 1
    paths, where = root_to_leaf(parents, positions)
    pairs = list(targets.items())
    return PrefixForest(
        torch.tensor(tokens),
        torch.tensor(positions),
        paths,
        where,
        torch.tensor(visits),
        torch.tensor([n for (n, _), _ in pairs], dtype=torch.long),
        torch.tensor([t for (_, t), _ in pairs], dtype=torch.long),
        torch.tensor([c for _, c in pairs], dtype=torch.float64),
    )


def root_to_leaf(
    parents: list[int], positions: list[int], groups: int = PATH_GROUPS
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The paths from the root to each leaf, in `groups` groups of like length, each [B, A] (a path
    shorter than its group's longest is padded with the root: under the causal mask a later position
    changes nothing before it), and where each node lies on one of them, counting the groups' paths
    flattened one after another."""
    depth = torch.tensor(positions)
    parent = torch.tensor(parents)
    is_leaf = torch.ones(len(parents), dtype=torch.bool)
    is_leaf[parent[parent >= 0]] = False
    leaves = is_leaf.nonzero().squeeze(1)
    leaves = leaves[torch.argsort(depth[leaves], stable=True)]
    where = torch.full((len(parents),), -1, dtype=torch.long)
    paths, offset = [], 0
    for chunk in torch.tensor_split(leaves, min(groups, len(leaves))):
        width = int(depth[chunk].max()) + 1
        group = torch.zeros(len(chunk), width, dtype=torch.long)
        node = chunk.clone()
        for t in range(width - 1, -1, -1):  # from each leaf up to the root, one position at a time
            here = depth[node] == t  # the paths whose node is at this position now
            group[here, t] = node[here]
            node = torch.where(here, parent[node].clamp(min=0), node)
        flat = group.flatten()
        real = (torch.arange(width)[None, :] <= depth[chunk][:, None]).flatten()
        places = (real & (where[flat] < 0)).nonzero().squeeze(1)  # a node not placed in an earlier group
        nodes = flat[places]
        first = torch.full((len(parents),), flat.numel()).scatter_reduce(0, nodes, places, "amin")  # its first place
        fresh = torch.unique(nodes)
        where[fresh] = offset + first[fresh]
        paths.append(group)
        offset += flat.numel()
    return paths, where


def prefix_forests(names: list[str], tokenizer: Tokenizer, block_size: int, nodes: int = NODES) -> list[PrefixForest]:
    """The names' forests: names grouped by first character, groups joined while their positions fit
    in `nodes` (each name is in one forest, so losses and means add up over them)."""
    by_first: dict[str, list[str]] = {}
    for name in names:
        by_first.setdefault(name[:1], []).append(name)
    forests: list[PrefixForest] = []
    group: list[str] = []
    size = 0
    for first in sorted(by_first):
        group_names = by_first[first]
        positions = sum(min(len(n) + 1, block_size) for n in group_names)  # at most this many nodes
        if group and size + positions > nodes:
            forests.append(prefix_forest(group, tokenizer, block_size))
            group, size = [], 0
        group, size = group + group_names, size + positions
    if group:
        forests.append(prefix_forest(group, tokenizer, block_size))
    return forests


def embedded_nodes(model: GPT, forest: PrefixForest) -> torch.Tensor:
    """The residual stream's first value at every node [1, P, C]: model.py's embeddings, normed."""
    return model.emb_norm(model.wte(forest.tokens) + model.wpe(forest.positions))[None]


def node_attention(forest: PrefixForest, weights: list[torch.Tensor] | None = None) -> Attend:
    """An attention step (model.py's Attend) for the nodes of `forest`: each node's query reads the keys
    and values of its own prefixes, laid out along the paths. q, k, v: [S, H, P, d] -> [S, H, P, d].
    With a list `weights`, the formula is written out and each group's weights [S, B, H, A, A] go on it;
    without, torch's fused kernel reads two paths as one sequence (PAIRED), each path its own."""
    layouts: list[tuple[torch.Tensor, torch.Tensor | None, int]] = [
        (paths, None, paths.numel()) if weights is not None else (*paired(paths), paths.numel())
        for paths in forest.paths
    ]

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        S, H, _, d = q.shape
        outputs = []
        for paths, mask, real in layouts:
            B, A = paths.shape
            # gathered as rows of heads side by side (q.transpose(1, 2) is [S, P, H, d]): whole rows copy fastest
            along = [
                t.transpose(1, 2)
                .index_select(1, paths.flatten())
                .view(S, B, A, H, d)
                .transpose(2, 3)
                .reshape(S * B, H, A, d)
                for t in (q, k, v)
            ]
            if weights is None:
                y = F.scaled_dot_product_attention(along[0], along[1], along[2], attn_mask=mask)  # [S B, H, A, d]
            else:
                y, w = causal_attention(along[0], along[1], along[2])
                weights.append(w.view(S, B, H, A, A))
            outputs.append(y.view(S, B, H, A, d).transpose(2, 3).reshape(S, B * A, H, d)[:, :real])  # less any padding
        # each node's output off its first place, as [S, P, H, d] seen as [S, H, P, d]: merging the heads is then free
        return torch.cat(outputs, 1).index_select(1, forest.where).transpose(1, 2)

    return attend


def paired(paths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A group of paths [B, A] as PAIRED of them a row [B / PAIRED, PAIRED A] (the flattened order, which
    forest.where counts in, unchanged; a root-only path pads the last row), and the mask that keeps each
    path causal and to itself."""
    B, A = paths.shape
    padded = torch.cat([paths, paths.new_zeros((-B) % PAIRED, A)])
    mask = torch.block_diag(*[torch.ones(A, A, dtype=torch.bool, device=paths.device).tril()] * PAIRED)
    return padded.view(-1, PAIRED * A), mask


@torch.no_grad()
def path_weights(model: GPT, forest: PrefixForest) -> list[torch.Tensor]:
    """Every layer's attention weights along the forest's paths, a tensor [L, B, H, A, A] per group of paths:
    what a name reading that path's prefix gets at each of its positions."""
    weights: list[torch.Tensor] = []
    attend, x = node_attention(forest, weights), embedded_nodes(model, forest)
    for layer in blocks(model):
        x = layer(x, attend)
    groups = len(forest.paths)
    return [torch.stack([weights[l * groups + g][0] for l in range(model.config.n_layer)]) for g in range(groups)]


def forest_nats(model: GPT, stream: torch.Tensor, forest: PrefixForest) -> torch.Tensor:
    """[S]: the summed cross-entropy of the names' predictions, for each of S residual streams [S, P, C]
    read off as the model reads its last one (final norm, lm_head). The logits are worked out a few rows
    at a time, LOGITS numbers at most, and only their normaliser (logsumexp) is kept, with the scored
    token's logit as a dot product: a vocabulary of 50,000 characters costs time, not gigabytes."""
    S, P, C = stream.shape
    normed = model.final_norm(stream) if model.final_norm is not None else stream
    rows = normed.reshape(S * P, C)
    weight = model.lm_head.weight
    step = max(1, LOGITS // weight.size(0))
    norms = torch.cat(
        [torch.logsumexp((rows[at : at + step] @ weight.T).double(), dim=-1) for at in range(0, S * P, step)]
    ).view(S, P)
    nodes, tokens = forest.target_nodes, forest.target_tokens
    scored = (normed[:, nodes] * weight[tokens]).sum(-1).double()  # [S, K]: each scored token's logit
    return -((scored - norms[:, nodes]) * forest.target_counts).sum(-1)
