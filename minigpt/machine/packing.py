"""Packed rows (train.pack_names): several short names side by side in one row, each with its own
positions from 0 and a mask that keeps its attention inside itself, so every loss and gradient is
the one it has alone (tests/test_packing.py). Fewer, longer rows: the attention kernels cost by
the row, not the token. docs/speed.md measures when that is faster (off by default).

The model has no mode for this: a packed batch hands it the positions and each layer's attention.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minigpt.data import Batch
from minigpt.files.corpus import IGNORE, TokenizedNames
from minigpt.model import GPT


def within_names(width: int, name_length: int, device) -> torch.Tensor:
    """The mask of a packed row [width, width]: True where a position may look, which is itself
    and the positions before it in its own name (each name `name_length` positions long)."""
    position = torch.arange(width, device=device)
    same_name = position[:, None] // name_length == position[None, :] // name_length
    return same_name & (position[:, None] >= position[None, :])


def packed_batch(data: TokenizedNames, indices: torch.Tensor, model: GPT) -> Batch:
    """The batch with as many names a row as fit in block_size positions, each as long as the
    longest name; a name a row when no two fit."""
    name_length = int(data.lengths[indices].max())
    per_row = data.block_size // name_length
    x, y = data.padded(indices, name_length)
    if per_row < 2:
        return Batch(x, y)
    empty = -len(indices) % per_row  # the last row's free places: BOS, predicting nothing
    if empty:
        x = torch.cat([x, x.new_full((empty, name_length), data.bos)])
        y = torch.cat([y, y.new_full((empty, name_length), IGNORE)])
    width = per_row * name_length
    allowed = within_names(width, name_length, x.device)
    positions = torch.arange(width, device=x.device) % name_length

    def attend_within(layer):
        def attend(q, k, v):
            dropout = layer.attn_dropout if layer.training else 0.0
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout)
        return attend

    attend = [attend_within(block.attn) for block in model.layers]
    return Batch(x.view(-1, width), y.view(-1, width), positions, attend)
