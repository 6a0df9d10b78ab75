"""Names, their vocabulary, the split into training and validation names, and which names
form each batch. A name is trained as `[BOS] + chars + [BOS]`: the model reads the boundary
token and the characters, and predicts every character and then the end (the boundary token
again). files/corpus.py holds the names as one tensor of ids and cuts a batch's rows from
it."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import NamedTuple

import torch

from minigpt.common.errors import UsageError
from minigpt.files.corpus import TokenizedNames, names_not_held_out, seeded_permutation
from minigpt.files.names_file import (as_characters, held_out_count, read_names, refuse_unseen,
                                      refuse_unseen_names)


def split_names(names: list[str], fraction: float, at_most: int,
                seed: int) -> tuple[list[str], list[str]]:
    """A seeded hold-out: `fraction` of the names (at most `at_most`) for validation."""
    n_val = held_out_count(len(names), fraction, at_most)
    order = seeded_permutation(len(names), seed)
    return names_not_held_out(names, order, n_val), [names[i] for i in order[:n_val].tolist()]


class Tokenizer:
    """Characters get ids 0..n-1 in sorted order; the boundary token is id n (microgpt's)."""

    def __init__(self, chars: list[str]):
        self.chars = as_characters(chars, "a Tokenizer's characters")
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

    def check(self, text: str, what: str) -> None:
        """Refuse text with characters outside the vocabulary, in one line with advice."""
        refuse_unseen(text, self.unseen, what)

    def check_names(self, names: list[str], what: str) -> None:
        """`check` for a list of names: the error names the first names concerned."""
        refuse_unseen_names(names, self.unseen, what)

    def encode(self, text: str) -> list[int]:
        self.check(text, f"'{text}'")
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

    @functools.lru_cache(maxsize=1)
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

    @functools.lru_cache(maxsize=1)
    def window_batches(self, window: int) -> list[torch.Tensor]:
        size = self.window * self.batch_size
        names = self.stream(window * size, (window + 1) * size)
        names = names[torch.argsort(self.lengths[names], stable=True)]
        batches = list(names.split(self.batch_size))
        random.Random(f"{self.seed}-window-{window}").shuffle(batches)
        return batches


def load_data(data_path, val_path, val_fraction: float, val_max: int,
              seed: int) -> tuple[list[str], list[str], Tokenizer]:
    """Training and validation names, and the vocabulary of the training file."""
    names = read_names(data_path)
    tokenizer = Tokenizer.from_names(names)
    if val_path is None:
        train_names, val_names = split_names(names, val_fraction, val_max, seed)
        return train_names, val_names, tokenizer
    val_names = read_names(val_path)
    tokenizer.check_names(val_names, f"validation file {val_path}")
    return names, val_names, tokenizer


class Batch(NamedTuple):
    """Inputs and targets [rows, width], and what the model needs to read them: the tokens'
    positions and each layer's attention (None for a name a row)."""

    x: torch.Tensor
    y: torch.Tensor
    positions: torch.Tensor | None = None
    attend: list | None = None


def plain_batch(data: TokenizedNames, indices: torch.Tensor, model=None) -> Batch:
    """The names at `indices`, a name a row, cut to the longest of them: inputs from each
    name's boundary token on, targets one position further (files/corpus.py lays the names
    out)."""
    return Batch(*data.batch(indices))
