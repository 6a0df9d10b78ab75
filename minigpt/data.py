"""Names files, the character vocabulary, and batches of tokenised names.

A name is trained as `[BOS] + chars + [BOS]`: the model reads the boundary token and the
characters, and predicts every character and then the end (the boundary token again).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from minigpt.bundled import names_file
from minigpt.errors import UsageError

BUNDLED_NAMES = names_file()
IGNORE = -1  # target id of padding positions, skipped by the loss


def read_names(path: str | Path) -> list[str]:
    """Names from a UTF-8 file, one per line; surrounding whitespace stripped, blank lines skipped."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"names file not found: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a names file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is not part of the first name
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UsageError(f"{path}: line {line} is not valid UTF-8") from None
    names = [line.strip() for line in text.splitlines()]  # \n, \r\n and a lone \r all end a line
    names = [name for name in names if name]
    if not names:
        raise UsageError(f"{path}: no names in the file (it is empty or has only blank lines)")
    return names


def split_names(names: list[str], fraction: float, at_most: int, seed: int) -> tuple[list[str], list[str]]:
    """A seeded hold-out: `fraction` of the names (at most `at_most`) for validation."""
    order = list(range(len(names)))
    random.Random(seed).shuffle(order)
    n_val = min(at_most, int(len(names) * fraction))
    if fraction > 0 and n_val == 0 and len(names) >= 10:
        n_val = 1
    return [names[i] for i in order[n_val:]], [names[i] for i in order[:n_val]]


class Tokenizer:
    """Characters get ids 0..n-1 in sorted order; the boundary token is id n (microgpt's scheme)."""

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
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
        """Raise a UsageError naming the characters of `text` outside the vocabulary."""
        unseen = self.unseen(text)
        if unseen:
            listed = ", ".join(repr(c) for c in unseen)
            raise UsageError(f"{what} has characters the model never saw: {listed}")

    def encode(self, text: str) -> list[int]:
        self.check(text, f"'{text}'")
        return [self.stoi[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids if i != self.bos)

    def token_label(self, i: int) -> str:
        return "<BOS>" if i == self.bos else self.chars[i]


class TokenizedNames:
    """Every name once, tokenised into padded tensors, so a batch is an index lookup.

    x[i] = [BOS, c1, ..., cL] and y[i] = [c1, ..., cL, BOS], cut to block_size positions;
    unused positions hold IGNORE in y. lengths[i] is the number of predicted tokens.
    """

    def __init__(self, names: list[str], tokenizer: Tokenizer, block_size: int):
        bos = tokenizer.bos
        rows = [[bos] + tokenizer.encode(name) + [bos] for name in names]
        self.truncated = sum(len(row) - 1 > block_size for row in rows)
        rows = [row[: block_size + 1] for row in rows]
        self.lengths = torch.tensor([len(row) - 1 for row in rows])
        self.x = torch.tensor([row[:-1] + [bos] * (block_size + 1 - len(row)) for row in rows])
        self.y = torch.tensor([row[1:] + [IGNORE] * (block_size + 1 - len(row)) for row in rows])

    def __len__(self) -> int:
        return len(self.lengths)

    def to(self, device: torch.device) -> TokenizedNames:
        """Move the tokens to `device`; lengths stay on the CPU so batching never waits on it."""
        self.x, self.y = self.x.to(device), self.y.to(device)
        return self

    def batch(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets of these names, cut to the longest of them: padding costs nothing."""
        width = int(self.lengths[indices].max())
        if self.x.device.type == "cuda":
            indices = indices.pin_memory()  # a copy from pinned memory need not wait for the GPU to catch up
        rows = indices.to(self.x.device, non_blocking=True)
        return self.x[rows, :width], self.y[rows, :width]

    def in_order(self, batch_size: int, shard=lambda names: names):
        """Every name once (or this rank's share), in batches of names of similar length."""
        by_length = shard(torch.argsort(self.lengths, stable=True))
        for start in range(0, len(by_length), batch_size):
            yield self.batch(by_length[start : start + batch_size])


@dataclass
class BatchOrder:
    """Which names form the batch of each step: a pure function of (seed, step).

    The names are read in passes; each pass is a seeded permutation of all of them
    (or the first pass's permutation again, with reshuffle=False, as microgpt does).
    With `lengths` and window > 1, each run of `window` batches is regrouped so that
    names of similar length share a batch (less padding to compute), and those batches
    are taken in a seeded random order. Every name is still read once per pass, and
    because nothing else is stored, a resumed run continues with exactly the same batches.
    """

    n: int
    batch_size: int
    seed: int
    reshuffle: bool = True
    lengths: torch.Tensor | None = None
    window: int = 1

    def __post_init__(self):
        self._cached_pass: tuple[int, torch.Tensor] | None = None
        self._cached_window: tuple[int, list[torch.Tensor]] | None = None

    def permutation(self, epoch: int) -> torch.Tensor:
        epoch = epoch if self.reshuffle else 0
        if self._cached_pass is None or self._cached_pass[0] != epoch:
            order = list(range(self.n))
            random.Random(f"{self.seed}-{epoch}").shuffle(order)
            self._cached_pass = (epoch, torch.tensor(order))
        return self._cached_pass[1]

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

    def window_batches(self, window: int) -> list[torch.Tensor]:
        if self._cached_window is None or self._cached_window[0] != window:
            size = self.window * self.batch_size
            names = self.stream(window * size, (window + 1) * size)
            names = names[torch.argsort(self.lengths[names], stable=True)]
            batches = list(names.split(self.batch_size))
            random.Random(f"{self.seed}-window-{window}").shuffle(batches)
            self._cached_window = (window, batches)
        return self._cached_window[1]
