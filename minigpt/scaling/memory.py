"""Freed memory kept for reuse: the C library's malloc, set for many tensors of a few megabytes.

torch takes each CPU tensor's memory from malloc and gives it back when the tensor goes. glibc
serves a large request with fresh pages from the kernel (mmap) and gives them back on free, and
it returns the free top of its heap to the kernel too; a fresh page costs a fault and zeroing the
first time it is touched. The explorer page's measurements make and drop thousands of 1-4 MB
tensors, so a good part of their time went to that (docs/explorer.md measures it). With these
settings, requests up to 32 MB (glibc's largest threshold) come from the heap, and the heap keeps
what is freed, so the same memory serves the next tensor. A process's memory then stays at its
peak until it ends; training, measured, gains nothing from it and is left as it is.
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
FROM_HEAP = 32 * 2**20  # requests up to this come from the heap (glibc's most on a 64-bit machine)
KEPT = 2**30  # free memory at the heap's top is given back to the kernel only past this


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to serve requests up to FROM_HEAP from its heap and keep what is freed; False
    (and nothing changed) where the C library has no mallopt or refuses (not glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process already runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, FROM_HEAP)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT))
