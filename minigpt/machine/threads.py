"""How torch's CPU work runs: its threads on the cores that are free, not all of them, and the C
library's allocator tuned to keep large freed blocks (keep_freed_memory, at the end).

torch's CPU kernels split each operation over its threads (OpenMP), and every thread waits,
spinning, for the others at the end of each one. When another process holds one of the
cores, the thread on it is descheduled and the rest spin until it runs again, and training
slows to a fraction of its quiet speed (dev/LOG.md has the measurements).
So before the work
starts, minigpt looks at how busy the cores are (a quarter of a second of the kernel's
counts, which draws no random numbers) and uses one thread per free core, at least one and
no more than torch's default. OMP_NUM_THREADS, when set, is obeyed as it is.

The thread count changes how floats are summed, so a run's numbers repeat on the same
machine at the same thread count; metrics.jsonl records the count, and the start panel
says how many and why.
"""

from __future__ import annotations

import ctypes
import os
import time

import torch

LOOK = 0.25  # seconds of the kernel's counts before training
QUICK_LOOK = 0.1  # before a command that takes seconds (sample, eval, inspect-attention, ablate)


def busy_cores(seconds: float = LOOK) -> float | None:
    """How many cores were busy over `seconds` (all processes but this one, which sleeps meanwhile),
    from Linux's /proc/stat; None where there is no such file."""

    def counts() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
        return sum(fields), fields[3] + fields[4]

    try:
        total0, idle0 = counts()
        time.sleep(seconds)
        total1, idle1 = counts()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return (1 - (idle1 - idle0) / (total1 - total0)) * (os.cpu_count() or 1)


def choose_threads(look: float = LOOK) -> tuple[int, str]:
    """The thread count for torch's CPU work, and why, in words for the start panel."""
    most = torch.get_num_threads()
    if os.environ.get("OMP_NUM_THREADS"):
        return most, "as OMP_NUM_THREADS says"
    if most <= 1:
        return most, "torch's default here"
    busy = busy_cores(look)
    if busy is None:
        return most, "torch's default (no /proc/stat to see how busy the cores are)"
    cores = os.cpu_count() or most
    threads = max(1, min(most, int(cores - busy + 0.25)))  # a core counts as free when at most a quarter is used
    if threads == most:
        return most, f"one per free core: {most} of {cores} free"
    return threads, (
        f"one per free core: other work kept {busy:.1f} of the {cores} cores busy, and threads that "
        f"wait for a busy core slow every step"
    )


def use_free_cores(look: float = LOOK) -> tuple[int, str]:
    """Set torch's thread count to `choose_threads()`'s, and return it with the reason."""
    threads, why = choose_threads(look)
    torch.set_num_threads(threads)
    return threads, why


# the allocator: a process that frees and allocates the same large blocks over and over (a training step
# on a CPU, the explorer page's measurements)
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
