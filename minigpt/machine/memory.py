"""The C library's allocator, tuned for a process that frees and allocates the same large blocks
over and over (a training step on a CPU, the explorer page's measurements)."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


def keep_freed_memory() -> bool:
    """Ask glibc to keep large freed blocks for reuse instead of returning them to the OS; False
    (nothing changed) where the C library is not glibc.

    A training step on a CPU allocates and frees the same few multi-megabyte activations
    every time, and the explorer page's measurements thousands of them. By default glibc serves
    each with a fresh mmap, and the first touch of every page then faults: thousands of faults a
    step, a noticeable share of a small model's step (and of the page's writing time).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        # 32 MB: glibc's ceiling for the mmap threshold
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):
        return False  # not glibc (macOS, Windows, musl): nothing to tune
