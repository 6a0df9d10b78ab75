"""Every name of a corpus once, as one flat tensor of ids, and a batch's rows cut from it.

    [BOS] name0 [BOS] name1 [BOS] ... [BOS]

Name i's inputs are the positions from starts[i] (its boundary token) on, its targets the
positions one further, so the next name's boundary token is its end. Nothing is stored
padded, so memory grows with the characters, not with names times block_size.
"""

from __future__ import annotations

import torch

from minigpt.files.many_names import token_ids

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

    def in_order(self, batch_size: int, shard=lambda names: names):
        """Every name once (or this rank's share), in batches of names of similar length."""
        by_length = shard(torch.argsort(self.lengths, stable=True))
        for start in range(0, len(by_length), batch_size):
            yield self.batch(by_length[start : start + batch_size])
