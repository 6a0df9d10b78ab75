"""Names, their vocabulary, the split into training and validation names, and the batches. A
name is trained as `[BOS] + chars + [BOS]`: the model reads the boundary token and the
characters, and predicts every character and then the end (the boundary token again).

    tokenizer = Tokenizer.from_names(names)
    train, val = split_names(names, fraction=0.1, at_most=1000, seed=1337)
    data = TokenizedNames(train, tokenizer, block_size=16)    # every name as one tensor of ids
    x, y = data.batch(BatchOrder(len(data), 64, seed=1337).indices(step))

Every name of a corpus is held once, in one flat tensor of ids:

    [BOS] name0 [BOS] name1 [BOS] ... [BOS]

name i's inputs are the positions from starts[i] (its boundary token) on, its targets the
positions one further, so the next name's boundary token is its end; nothing is stored padded,
so memory grows with the characters, not with names times block_size. Names by the million
take no Python object each where one would cost seconds (the shuffle, the ids)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from .config import held_out_count
from .errors import UsageError

# names; past this the split uses torch's permutation (Python's takes seconds)
PYTHON_SHUFFLE_UP_TO = 2_000_000


def seeded_permutation(n: int, seed: int | str) -> torch.Tensor:
    """A permutation of range(n) that depends only on `seed`: Python's shuffle, as earlier
    versions made it, up to PYTHON_SHUFFLE_UP_TO; past that torch's (Python's takes seconds on
    ten million)."""
    if n > PYTHON_SHUFFLE_UP_TO:
        generator = torch.Generator().manual_seed(random.Random(seed).getrandbits(63))
        return torch.randperm(n, generator=generator)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return torch.tensor(order, dtype=torch.int64)


def names_not_held_out(names: list[str], order: torch.Tensor, n_val: int) -> list[str]:
    """The names a split trains on (all but order[:n_val]): in the seeded order, or past
    PYTHON_SHUFFLE_UP_TO names in the file's order (a shuffled copy of ten million costs
    seconds, and batches are shuffled anyway)."""
    if len(names) <= PYTHON_SHUFFLE_UP_TO:
        return [names[i] for i in order[n_val:].tolist()]
    train, after_last = [], 0
    for i in sorted(order[:n_val].tolist()):  # the runs of names between the held-out ones
        train += names[after_last:i]
        after_last = i + 1
    return train + names[after_last:]


def split_names(
    names: list[str], fraction: float, at_most: int, seed: int
) -> tuple[list[str], list[str]]:
    """A seeded hold-out: `fraction` of the names (at most `at_most`) for validation."""
    n_val = held_out_count(len(names), fraction, at_most)
    order = seeded_permutation(len(names), seed)
    return names_not_held_out(names, order, n_val), [names[i] for i in order[:n_val].tolist()]


def check_names(names: Any, what: str, at_least: int = 0) -> list[str]:
    """A list of names as the core reads them: each a non-empty string. A string is refused, not
    read as one name a letter; so is a list of numbers."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise UsageError(
            f"{what} is a list of names (strings), got {type(names).__name__} {names!r:.40}"
        )
    wrong = next((n for n in names if not isinstance(n, str) or not n or "\n" in n), None)
    if wrong is not None:
        raise UsageError(f"{what}: each name is a non-empty string on one line, got {wrong!r:.40}")
    if len(names) < at_least:
        raise UsageError(
            f"{what}: at least {at_least} name{'s' * (at_least > 1)}, got {len(names)}"
        )
    return list(names)


class Tokenizer:
    """Characters get ids 0..n-1 in sorted order; the boundary token is id n (microgpt's)."""

    def __init__(self, chars: list[str]):
        what = "a Tokenizer's characters: expected"
        if isinstance(chars, str):  # read letter by letter, it would look like a list
            raise UsageError(
                f'{what} a list of characters, got one str "{chars:.40}": put it in a list, [x]'
            )
        try:
            chars = list(chars)
        except TypeError:
            kind = type(chars).__name__ if chars is not None else None
            raise UsageError(f"{what} a list of characters, got {kind}") from None
        single = all(isinstance(c, str) and len(c) == 1 for c in chars)
        if not single or len(set(chars)) < len(chars):
            raise UsageError(f"{what} distinct single characters, got {chars!r:.60}")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.bos = len(self.chars)

    @classmethod
    def from_names(cls, names: list[str]) -> Tokenizer:
        return cls(sorted(set("".join(names))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars) + 1

    def unseen(self, text: str) -> list[str]:
        return sorted(set(text) - self.stoi.keys())

    def encode(self, text: str) -> list[int]:
        unseen = self.unseen(text)
        if unseen:  # files/names_file.py's refuse_unseen says it with advice, before text gets here
            listed = ", ".join(map(repr, unseen[:10]))
            raise UsageError(f"{text!r:.60} has characters the vocabulary lacks: {listed}")
        return [self.stoi[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        """The text of token ids, the boundary token dropped. An id outside the vocabulary is
        refused: Python's indexing would read -1 as the last character and True as 1."""
        ids = list(ids) if not isinstance(ids, (str, bytes)) else [ids]
        wrong = [i for i in ids if not (type(i) is int and 0 <= i <= self.bos)]
        if wrong:
            got = repr(wrong[0])[:40]
            raise UsageError(f"a token id is a whole number from 0 to {self.bos}, got {got}")
        return "".join(self.chars[i] for i in ids if i != self.bos)


def token_ids(names: list[str], tokenizer: Tokenizer) -> torch.Tensor:
    """[BOS] name0 [BOS] name1 ... [BOS]: each name's ids after a boundary token, and one to end
    the last. (files/corpus.py makes the same tensor for millions of names without a Python list
    a name, and hands it in as `ids`.)"""
    ids = [tokenizer.bos]
    for name in names:
        ids += tokenizer.encode(name)
        ids.append(tokenizer.bos)
    return torch.tensor(ids, dtype=torch.int16 if tokenizer.vocab_size < 2**15 else torch.int32)


IGNORE = -100  # the target of a padding position: torch's cross_entropy skips it by default


class TokenizedNames:
    """The names as ids; lengths[i] is name i's predicted tokens (its characters and the end), cut
    to block_size."""

    def __init__(
        self,
        names: list[str],
        tokenizer: Tokenizer,
        block_size: int,
        ids: torch.Tensor | None = None,
    ) -> None:
        """`ids`: token_ids(names, tokenizer), when it was made already."""
        self.bos, self.block_size = tokenizer.bos, block_size
        self.flat = token_ids(names, tokenizer) if ids is None else ids
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

    def in_order(
        self,
        batch_size: int,
        shard: Callable[[torch.Tensor], torch.Tensor] = lambda names: names,
        vocab_size: int = 1,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Every name once (or this rank's share), in batches of names of similar length; with the
        model's vocab_size, batches no larger than their logits may be (rows_at_once)."""
        batch_size = rows_at_once(batch_size, self.block_size, vocab_size)
        by_length = shard(torch.argsort(self.lengths, stable=True))
        for start in range(0, len(by_length), batch_size):
            yield self.batch(by_length[start : start + batch_size])


LOGITS_AT_ONCE = 2**24  # numbers (64 MB of float32) of [names, positions, vocabulary] at once


def rows_at_once(batch_size: int, positions: int, vocab_size: int) -> int:
    """Names a batch of evaluation or sampling takes: `batch_size`, fewer where a large vocabulary
    would make their logits outgrow LOGITS_AT_ONCE (a million characters: a name at a time)."""
    return max(1, min(batch_size, LOGITS_AT_ONCE // (positions * vocab_size)))


@dataclass(eq=False)  # hashed as itself: each cache below keeps its latest pass or window
class BatchOrder:
    """Which names form the batch of each step: a pure function of (seed, step), so a
    resumed run goes on with the same batches. The names are read in passes, each a seeded
    permutation (or the first again, with reshuffle=False, as microgpt does). With `lengths`
    and window > 1, each run of `window` batches is regrouped so that names of similar
    length share a batch (less padding), and those batches are taken in a seeded order."""

    n: int
    batch_size: int
    seed: int
    reshuffle: bool = True
    lengths: torch.Tensor | None = None
    window: int = 1

    @functools.lru_cache(maxsize=1)  # noqa: B019 (the latest pass; BatchOrder is hashed as itself)
    def permutation(self, epoch: int) -> torch.Tensor:
        return seeded_permutation(self.n, f"{self.seed}-{epoch if self.reshuffle else 0}")

    def stream(self, start: int, end: int) -> torch.Tensor:
        """Positions start..end-1 of the endless sequence of passes."""
        parts = []
        while start < end:
            epoch, offset = divmod(start, self.n)
            take = min(end - start, self.n - offset)
            parts.append(self.permutation(epoch)[offset : offset + take])
            start += take
        return torch.cat(parts)

    def indices(self, step: int) -> torch.Tensor:
        if self.window <= 1 or self.lengths is None:
            return self.stream(step * self.batch_size, (step + 1) * self.batch_size)
        window, slot = divmod(step, self.window)
        return self.window_batches(window)[slot]

    @functools.lru_cache(maxsize=1)  # noqa: B019 (the latest window, as permutation's)
    def window_batches(self, window: int) -> list[torch.Tensor]:
        size = self.window * self.batch_size
        names = self.stream(window * size, (window + 1) * size)
        assert self.lengths is not None  # indices() comes here only with lengths
        names = names[torch.argsort(self.lengths[names], stable=True)]
        batches = list(torch.split(names, self.batch_size))
        random.Random(f"{self.seed}-window-{window}").shuffle(batches)
        return batches
