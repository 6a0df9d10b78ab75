"""Millions of names without a Python object per name where one would cost seconds: a seeded shuffle
that hands over to torch's past PYTHON_SHUFFLE_UP_TO names, the training names kept in the file's
order around a hold-out, and names turned into one tensor of ids through their UTF-32 code points.
data.py calls these; on the bundled names they do what the plain Python would."""

from __future__ import annotations

import random

import torch

PYTHON_SHUFFLE_UP_TO = 2_000_000  # names; past this the split uses torch's permutation (Python's takes seconds)


def seeded_permutation(n: int, seed) -> torch.Tensor:
    """A permutation of range(n) that depends only on `seed`: Python's shuffle, as earlier versions
    made it, up to PYTHON_SHUFFLE_UP_TO; past that torch's (Python's takes seconds on ten million)."""
    if n > PYTHON_SHUFFLE_UP_TO:
        return torch.randperm(n, generator=torch.Generator().manual_seed(random.Random(seed).getrandbits(63)))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return torch.tensor(order, dtype=torch.int64)


def names_not_held_out(names: list[str], order: torch.Tensor, n_val: int) -> list[str]:
    """The names a split trains on (all but order[:n_val]): in the seeded order, or past PYTHON_SHUFFLE_UP_TO
    names in the file's order (a shuffled copy of ten million costs seconds, and batches are shuffled anyway)."""
    if len(names) <= PYTHON_SHUFFLE_UP_TO:
        return [names[i] for i in order[n_val:].tolist()]
    train, after_last = [], 0
    for i in sorted(order[:n_val].tolist()):  # the runs of names between the held-out ones
        train += names[after_last:i]
        after_last = i + 1
    return train + names[after_last:]


def token_ids(names: list[str], tokenizer, chunk: int = 1 << 20) -> torch.Tensor:
    """[BOS] name0 [BOS] name1 ... [BOS] as one tensor of ids, made without a Python list per name.

    The names are joined with a separator that no name holds, read as UTF-32 code points, and
    mapped through a lookup table (the separator to the boundary token), a million at a time.
    """
    separator = next(c for c in "\n\x00\uffff" if c not in tokenizer.stoi)
    codes = [ord(c) for c in tokenizer.chars] + [ord(separator)]
    table = torch.full((max(codes) + 1,), -1, dtype=torch.int32)
    table[torch.tensor(codes)] = torch.arange(len(codes), dtype=torch.int32)  # the separator gets id len(chars)
    dtype = torch.int16 if tokenizer.vocab_size < 2**15 else torch.int32
    parts = []
    for start in range(0, len(names), chunk):
        text = separator + separator.join(names[start : start + chunk])
        points = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).long()
        ids = table[points.clamp(max=len(table) - 1)].masked_fill_(points >= len(table), -1)
        if bool((ids < 0).any()):
            tokenizer.check_names(names[start : start + chunk], "the names")  # names the characters
        parts.append(ids.to(dtype))
    parts.append(torch.tensor([tokenizer.bos], dtype=dtype))
    return torch.cat(parts)
