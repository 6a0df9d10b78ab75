"""What each head tends to do, measured over many names, and a plain label for it.

For every head: where a row's weight goes, by how far back it looks (the boundary token,
the position itself, one, two, three or more characters back), beside what a head that
spread its weight evenly would give; how spread out its rows are; and, per character it
reads, the mean weight it puts on each earlier character. The explorer page draws these.

A label names what a head does *more than an even spread would*: a row of position i
that spread its weight evenly would put 1/(i+1) on each position, so even a head with no
preference puts a fair share on the boundary token. The rules are in LABEL_RULES.
"""

from __future__ import annotations

import torch

from minigpt.data import Tokenizer
from minigpt.measurements.prefix_forest import PrefixForest, path_weights, prefix_forests, read_by_prefixes
from minigpt.model import GPT

OFFSETS = ["the boundary token", "itself", "1 back", "2 back", "3 or more back"]
STRONG, LEANS, SPREAD = 2.0, 1.5, 0.65
LABEL_RULES = (
    f"A head is named for the place it looks at {STRONG:g} times or more as much as an even spread would "
    f"(“previous character”, …); else it “leans to” the place it looks at {LEANS:g} times or more as much; "
    f"else it is “spread out” when its rows' entropy is at least {SPREAD:.0%} of the most a row can have; "
    f"else “mixed”, with its two largest shares named."
)
# The character picture's rows (and columns, with the boundary token) are at most this many characters,
# those the names read most: a vocabulary of thousands of characters (Chinese names) would make it
# layers × heads × V² numbers, gigabytes to compute and a page no browser loads.
CHARS_SHOWN = 40


def offset_masks(T: int) -> torch.Tensor:
    """[5, T, T]: which key j of query i falls in each of OFFSETS (row 0, the boundary token's own, in none)."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    reads = (i >= 1) & (j <= i)
    return torch.stack(
        [
            reads & (j == 0),
            reads & (j == i),
            reads & (j >= 1) & (j == i - 1),
            reads & (j >= 1) & (j == i - 2),
            reads & (j >= 1) & (j <= i - 3),
        ]
    ).float()


@torch.no_grad()
def head_roles(model: GPT, tokenizer: Tokenizer, names: list[str], forests: list[PrefixForest] | None = None) -> dict:
    """Each head's shares by offset, its even-spread reference, its spread and its character matrix.

    shares [L][H][5]   the mean weight a row (positions 1 and on) puts on each of OFFSETS
    even [5]           the same for rows that spread their weight evenly
    spread [L][H]      the mean entropy of a row over the most a row of its length can have
    chars [L][H][C][C+1]  for a query reading character c, the mean weight on each of the same characters
                       and the boundary token (last); the characters are `char_ids`, the CHARS_SHOWN the
                       names read most (all of them in a small vocabulary); rows of characters never read are zeros
    char_ids [C]       the token ids of those characters, in id order
    labels [L][H]      a plain name for each head (see LABEL_RULES)

    The means are over every row of every name, each distinct prefix read once and counted as often
    as names share it (`counted_rows`); `forests`: the names' prefix forests, when already made.
    """
    read_by_prefixes(model, "what each head tends to do")
    L, H = model.config.n_layer, model.config.n_head
    forests = prefix_forests(names, tokenizer, model.config.block_size) if forests is None else forests
    shares, even, spread = torch.zeros(L, H, 5), torch.zeros(5), torch.zeros(L, H)
    char_ids = most_read(forests, tokenizer)
    C = len(char_ids)
    place = torch.full(
        (tokenizer.vocab_size,), C + 1, dtype=torch.long
    )  # a token's row and column in the picture; C + 1: not shown
    place[torch.tensor(char_ids, dtype=torch.long)] = torch.arange(C)
    place[tokenizer.bos] = C
    P = C + 2
    chars, reads_of = torch.zeros(L, H, P * P), torch.zeros(P)
    rows = 0.0
    for ids, counts, maps in counted_rows(model, forests):
        T = ids.size(1)
        w = maps.float().cpu()  # [L, B, H, T, T]
        position = torch.arange(T)
        masks = offset_masks(T)
        shares += torch.einsum("lbhij,kij,bi->lhk", w, masks, counts)
        evenly = torch.tril(torch.ones(T, T)) / (position[:, None] + 1)
        even += torch.einsum("ij,kij,bi->k", evenly, masks, counts)
        entropy = -(w * w.clamp_min(1e-30).log()).sum(-1)  # [L, B, H, T]
        most = torch.log(position + 1.0)  # the entropy of an even row of position i
        most[0] = 1.0  # row 0 is not counted
        spread += torch.einsum("lbhi,i,bi->lh", entropy, 1 / most, counts)
        shown = place[ids]  # [B, T]: each token's place in the picture
        pair = shown[:, :, None] * P + shown[:, None, :]  # [B, T, T]: (query token, key token)
        weighted = (w * counts[None, :, None, :, None]).permute(0, 2, 1, 3, 4).reshape(L, H, -1)
        for l in range(L):  # per layer, to keep the scatter plain
            chars[l].index_add_(1, pair.reshape(-1), weighted[l].reshape(H, -1))
        reads_of.index_add_(0, shown.reshape(-1), counts.reshape(-1))
        rows += float(counts.sum())
    if rows == 0:
        return {}
    shares, even, spread = shares / rows, even / rows, spread / rows
    chars = chars.reshape(L, H, P, P) / reads_of.clamp_min(1)[None, None, :, None]
    labels = [[label(shares[l, h].tolist(), even.tolist(), spread[l, h].item()) for h in range(H)] for l in range(L)]
    return {
        "offsets": OFFSETS,
        "shares": rounded(shares),
        "even": rounded(even),
        "spread": rounded(spread),
        "chars": chars[:, :, :C, : C + 1],  # the boundary token is never a query here
        "char_ids": char_ids,
        "labels": labels,
        "rules": LABEL_RULES,
        "rows": int(rows),
    }


def counted_rows(model: GPT, forests: list[PrefixForest]):
    """The forests' paths as token sequences [B, T], each with how many names read each of its rows [B, T]
    and every layer's attention weights along it [L, B, H, T, T]: a prefix's own place counts as
    often as names share it; its places on other paths, the padding and the boundary token's row
    (it reads nothing before it) count 0."""
    device = model.lm_head.weight.device
    for forest in forests:
        offset = 0
        for paths, maps in zip(forest.paths, path_weights(model, forest.to(device))):
            places = offset + torch.arange(paths.numel()).view(paths.shape)
            counts = torch.where(forest.where[paths] == places, forest.visits[paths], 0.0)
            counts[:, 0] = 0.0
            yield forest.tokens[paths], counts, maps
            offset += paths.numel()


def most_read(forests: list[PrefixForest], tokenizer: Tokenizer) -> list[int]:
    """The token ids of the CHARS_SHOWN characters the names read most (as the model reads them: at most
    block_size - 1 a name), in id order."""
    counts = torch.zeros(tokenizer.vocab_size, dtype=torch.float64)
    for forest in forests:
        counts.index_add_(0, forest.tokens[1:], forest.visits[1:].double())  # every prefix but the root's own
    counts[tokenizer.bos] = -1
    read = [int(t) for t in torch.argsort(counts, descending=True, stable=True)[:CHARS_SHOWN] if counts[t] > 0]
    return sorted(read)


def label(shares: list[float], even: list[float], spread: float) -> str:
    """A plain name for a head from its shares by offset, against an even spread's (LABEL_RULES)."""
    lift = [s / e if e > 0 else 0.0 for s, e in zip(shares, even)]
    best = max(range(len(lift)), key=lambda k: lift[k])
    place = "previous character" if OFFSETS[best] == "1 back" else OFFSETS[best]
    if lift[best] >= STRONG:
        return place
    if lift[best] >= LEANS:
        return f"leans to {'the ' if place == 'previous character' else ''}{place}"
    if spread >= SPREAD:
        return "spread out"
    first, second = sorted(range(len(shares)), key=lambda k: -shares[k])[:2]
    return f"mixed: {OFFSETS[first]} {shares[first]:.0%}, {OFFSETS[second]} {shares[second]:.0%}"


def rounded(t: torch.Tensor, digits: int = 3):
    """A tensor as nested lists of numbers cut to `digits` decimals (the page's JSON stays small)."""
    return (torch.round(t.double() * 10**digits) / 10**digits).tolist()


def unigram_loss(names: list[str], tokenizer: Tokenizer) -> float | None:
    """The loss of guessing every next token from how often it occurs in `names` (the end included)."""
    tokens = torch.tensor([token for name in names for token in tokenizer.encode(name)], dtype=torch.long)
    counts = torch.bincount(tokens, minlength=tokenizer.vocab_size).float()
    counts[tokenizer.bos] += len(names)
    if counts.sum() == 0:
        return None
    p = counts / counts.sum()
    return float(-(p[p > 0] * p[p > 0].log()).sum())
