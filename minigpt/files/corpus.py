"""Names by the million, without a Python object per name where one would cost seconds.

- a seeded shuffle that hands over to torch's past PYTHON_SHUFFLE_UP_TO names, the training names
  kept in the file's order around a hold-out, and names turned into one tensor of ids through their
  UTF-32 code points (data.py calls these; on the bundled names they do what the plain Python would);
- every name of a corpus once, as one flat tensor of ids, and a batch's rows cut from it:

    [BOS] name0 [BOS] name1 [BOS] ... [BOS]

  name i's inputs are the positions from starts[i] (its boundary token) on, its targets the
  positions one further, so the next name's boundary token is its end; nothing is stored padded,
  so memory grows with the characters, not with names times block_size;
- a run's names as tensors on its device, with one fingerprint a name (repeated names counted; a
  Bloom filter for "is this a training name?" past a size), and the digests a resumed run checks
  its names against.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

import torch

from minigpt.common.ranges import rows_at_once
from minigpt.files.membership import NameSet, fingerprints
from minigpt.files.names_file import digest


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


IGNORE = -100  # the target of a padding position: torch's cross_entropy skips it by default


class TokenizedNames:
    """The names as ids; lengths[i] is name i's predicted tokens (its characters and the end), cut
    to block_size."""

    def __init__(self, names: list[str], tokenizer, block_size: int):
        self.bos, self.block_size = tokenizer.bos, block_size
        self.flat = token_ids(names, tokenizer)
        bounds = (self.flat == self.bos).nonzero().squeeze(1)  # len(names) + 1 boundary tokens
        self.starts = bounds[:-1]
        self.characters = bounds[1:] - bounds[:-1] - 1  # of each name, before any cut
        self.truncated = int((self.characters + 1 > block_size).sum())
        self.lengths = (self.characters + 1).clamp(max=block_size)
        self.steps = torch.arange(block_size)
        self.device_starts, self.device_lengths = self.starts, self.lengths  # on the ids' device

    def __len__(self) -> int:
        return len(self.lengths)

    def to(self, device: torch.device) -> TokenizedNames:
        """Move the ids to `device`; lengths stay on the CPU too, so batching never waits on it."""
        self.flat, self.steps = self.flat.to(device), self.steps.to(device)
        self.device_starts, self.device_lengths = self.starts.to(device), self.lengths.to(device)
        return self

    def padded(self, indices: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets [len(indices), width]: BOS pads the inputs, IGNORE the targets."""
        device = self.flat.device
        if device.type == "cuda":
            indices = indices.pin_memory()  # a copy from pinned memory need not wait for the GPU
        rows = indices.to(device, non_blocking=True)
        starts, lengths = self.device_starts[rows], self.device_lengths[rows]
        steps = self.steps[:width]
        positions = (starts[:, None] + steps).clamp(max=len(self.flat) - 2)  # [B, width]
        pad = steps >= lengths[:, None]
        x = self.flat[positions].long().masked_fill_(pad, self.bos)
        y = self.flat[positions + 1].long().masked_fill_(pad, IGNORE)
        return x, y

    def batch(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets of these names, cut to the longest of them: padding costs nothing."""
        return self.padded(indices, int(self.lengths[indices].max()))

    def in_order(self, batch_size: int, shard=lambda names: names, vocab_size: int = 1):
        """Every name once (or this rank's share), in batches of names of similar length; with the
        model's vocab_size, batches no larger than their logits may be (common/ranges.py)."""
        batch_size = rows_at_once(batch_size, self.block_size, vocab_size)
        by_length = shard(torch.argsort(self.lengths, stable=True))
        for start in range(0, len(by_length), batch_size):
            yield self.batch(by_length[start : start + batch_size])


class Corpus(NamedTuple):
    """The names of a run as tensors, the check for "is this a training name?", and what checkpoints record."""

    train: TokenizedNames
    val: TokenizedNames | None
    membership: NameSet
    info: dict


def tokenize_corpus(train_names, val_names, tokenizer, block_size: int, device, data_path,
                    val_path) -> Corpus:
    """The training and validation names on `device`, with their membership check and summary."""
    tokens = TokenizedNames(train_names, tokenizer, block_size)
    # one fingerprint per name (on the CPU): repeated names are counted, and large corpora get a Bloom filter
    prints = torch.unique(fingerprints(tokens.flat, tokens.starts + 1, tokens.characters))
    characters = int(tokens.characters.sum())
    info = {
        "path": str(Path(data_path).resolve()) if data_path else None,
        "val_path": str(Path(val_path).resolve()) if val_path else None,
        "train_names": len(train_names),
        "val_names": len(val_names),
        "characters": characters,
        "duplicates": len(train_names) - len(prints),
        "vocab_size": tokenizer.vocab_size,
        "truncated": tokens.truncated,
        "train_digest": digest(train_names),
        "val_digest": digest(val_names),
    }
    return Corpus(
        train=tokens.to(device),
        val=TokenizedNames(val_names, tokenizer, block_size).to(device) if val_names else None,
        membership=NameSet.for_corpus(train_names, characters, prints, tokenizer),
        info=info,
    )
