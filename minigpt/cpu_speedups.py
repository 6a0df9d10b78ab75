"""What makes training fast on a CPU, kept apart from the math it speeds up.

Neither changes what is computed: `Dropout` is nn.Dropout with a cheaper mask, and
`keep_freed_memory` tunes glibc's allocator. docs/speed.md has what each one buys.
"""

from __future__ import annotations

import ctypes

import torch
import torch.nn as nn
import torch.nn.functional as F

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


def keep_freed_memory() -> None:
    """Ask glibc to keep large freed blocks for reuse instead of returning them to the OS.

    A training step allocates and frees the same few multi-megabyte activations every time.
    By default glibc serves each with a fresh mmap, and the first touch of every page then
    faults: thousands of faults a step, a noticeable share of a small model's step.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's ceiling for this setting
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    except (OSError, AttributeError):
        pass  # not glibc (macOS, Windows, musl): nothing to tune


class Dropout(nn.Module):
    """nn.Dropout, faster on a CPU: zero each element with probability p (rounded to a
    multiple of 1/256) and scale the rest by 1/(1 - p).

    On a CPU, torch's dropout draws one random number per element, which for a model this
    small costs more than the rest of its step. Here one 64-bit draw gives the mask bytes
    of eight elements. Elsewhere it is torch's own dropout.
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self.threshold = round(p * 256)  # drop where a random byte is below this

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.threshold == 0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)  # fast enough where it runs
        n = x.numel()
        draws = torch.randint(-(2**63), 2**63 - 1, ((n + 7) // 8,), dtype=torch.int64)
        keep = draws.view(torch.uint8)[:n].view_as(x) >= self.threshold
        return x * keep * (256 / (256 - self.threshold))
