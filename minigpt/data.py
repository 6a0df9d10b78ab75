"""Names files, the character vocabulary, names as tensors, and the order of batches.

A name is trained as `[BOS] + chars + [BOS]`: the model reads the boundary token and the
characters, and predicts every character and then the end (the boundary token again).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import NamedTuple

import torch

from minigpt.bundled import names_file
from minigpt.files.name_hints import refuse_unseen, refuse_unseen_names
from minigpt.files.names_file import read_names
from minigpt.scaling.many_names import names_not_held_out, seeded_permutation, token_ids

BUNDLED_NAMES = names_file()
BOUNDARY = "·"  # the boundary token's one name, everywhere it is shown: a name's start, and its end when predicted
# a vocabulary may hold "·" itself (Catalan's "l·l"): the boundary token is then drawn as the first of these it lacks
BOUNDARY_STAND_INS = ("◇", "¤", "␄", "⟂")
IGNORE = -100  # the target of a padding position: torch's cross_entropy skips it by default


def split_names(names: list[str], fraction: float, at_most: int, seed: int) -> tuple[list[str], list[str]]:
    """A seeded hold-out: `fraction` of the names (at most `at_most`) for validation."""
    n_val = min(at_most, int(len(names) * fraction))
    if fraction > 0 and n_val == 0 and len(names) >= 10:
        n_val = 1
    order = seeded_permutation(len(names), seed)
    return names_not_held_out(names, order, n_val), [names[i] for i in order[:n_val].tolist()]


class Tokenizer:
    """Characters get ids 0..n-1 in sorted order; the boundary token is id n (microgpt's scheme)."""

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.bos = len(self.chars)
        # then the control pictures and on: a vocabulary is finite, so one is free
        marks = itertools.chain((BOUNDARY, *BOUNDARY_STAND_INS), map(chr, range(0x2400, 0xD800)))
        self.boundary = next(mark for mark in marks if mark not in self.stoi)

    @classmethod
    def from_names(cls, names: list[str]) -> Tokenizer:
        return cls(sorted(set("".join(names))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars) + 1

    def unseen(self, text: str) -> list[str]:
        return sorted(set(text) - self.stoi.keys())

    def check(self, text: str, what: str) -> None:
        """Refuse `text` when it holds characters outside the vocabulary, in one line with advice (name_hints.py)."""
        refuse_unseen(text, self.unseen, what)

    def check_names(self, names: list[str], what: str) -> None:
        """`check` for a list of names: the error names the first names concerned, never the names joined."""
        refuse_unseen_names(names, self.unseen, what)

    def encode(self, text: str) -> list[int]:
        self.check(text, f"'{text}'")
        return [self.stoi[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids if i != self.bos)

    def token_label(self, i: int) -> str:
        return self.boundary if i == self.bos else self.chars[i]


class TokenizedNames:
    """Every name once, as one flat tensor of ids: [BOS] name0 [BOS] name1 [BOS] ... [BOS].

    Name i's inputs are the positions from starts[i] (its boundary token) on, its targets the
    positions one further, so the next name's boundary token is its end. lengths[i] is the
    number of predicted tokens, its characters and the end, cut to block_size. A batch is
    gathered from the flat tensor: nothing is stored padded, and ten million names fit in
    about 350 MB.
    """

    def __init__(self, names: list[str], tokenizer: Tokenizer, block_size: int):
        self.bos, self.block_size = tokenizer.bos, block_size
        self.flat = token_ids(names, tokenizer)
        bounds = (self.flat == self.bos).nonzero().squeeze(1)  # len(names) + 1 boundary tokens
        self.starts = bounds[:-1]
        self.characters = bounds[1:] - bounds[:-1] - 1  # of each name, before any cut
        self.truncated = int((self.characters + 1 > block_size).sum())
        self.lengths = (self.characters + 1).clamp(max=block_size)
        self.steps = torch.arange(block_size)
        self.device_starts, self.device_lengths = self.starts, self.lengths  # copies on the tokens' device

    def __len__(self) -> int:
        return len(self.lengths)

    def to(self, device: torch.device) -> TokenizedNames:
        """Move the tokens to `device`; lengths stay on the CPU too, so batching never waits on it."""
        self.flat, self.steps = self.flat.to(device), self.steps.to(device)
        self.device_starts, self.device_lengths = self.starts.to(device), self.lengths.to(device)
        return self

    def padded(self, indices: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets [len(indices), width]: BOS pads the inputs, IGNORE the targets."""
        device = self.flat.device
        if device.type == "cuda":
            indices = indices.pin_memory()  # a copy from pinned memory need not wait for the GPU to catch up
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

    def packed(self, indices: torch.Tensor) -> Batch:
        """The batch with several names a row when they are short: as many as fit in block_size
        positions, each as long as the longest name, side by side (the model's `name_length` keeps
        each to itself). Fewer, longer rows: the attention kernels cost by the row, not the token."""
        name_length = int(self.lengths[indices].max())
        per_row = self.block_size // name_length
        x, y = self.padded(indices, name_length)
        if per_row < 2:
            return Batch(x, y, None)
        empty = -len(indices) % per_row  # the last row's free places: the boundary token, predicting nothing
        if empty:
            x = torch.cat([x, x.new_full((empty, name_length), self.bos)])
            y = torch.cat([y, y.new_full((empty, name_length), IGNORE)])
        width = per_row * name_length
        return Batch(x.view(-1, width), y.view(-1, width), name_length)

    def in_order(self, batch_size: int, shard=lambda names: names):
        """Every name once (or this rank's share), in batches of names of similar length."""
        by_length = shard(torch.argsort(self.lengths, stable=True))
        for start in range(0, len(by_length), batch_size):
            yield self.batch(by_length[start : start + batch_size])


class Batch(NamedTuple):
    """Inputs and targets [rows, width]; name_length when each row holds several names that long."""

    x: torch.Tensor
    y: torch.Tensor
    name_length: int | None


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
            self._cached_pass = (epoch, seeded_permutation(self.n, f"{self.seed}-{epoch}"))
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
