"""precision = "auto": bfloat16 where it is faster on the machine at hand, measured rather than assumed.

bfloat16's matrix multiplies are faster only on hardware that has them (a GPU's tensor cores, a
CPU's AMX or AVX-512 BF16), and on a model this small even there the casts around them can cost
more than they save. So on such hardware "auto" times a few forward and backward passes of the
run's own first batch both ways and takes bfloat16 only when it is clearly faster; elsewhere it is
float32 without a measurement. A run that measured records what it chose as its precision
(runs/setup.py), so that resuming it computes as the run it continues did.
"""

from __future__ import annotations

import statistics
import time

import torch

CLEARLY_FASTER = 0.9  # bfloat16 is taken when its pass takes at most this share of float32's
TIMED_PASSES = 3  # each way, after one that warms up, alternating so a drift in speed hits both


def bfloat16_hardware(device: torch.device) -> bool:
    """Whether this device has bfloat16 arithmetic of its own (else autocast only adds casts)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        has = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
        return any(check is not None and check() for check in has)
    return False


def time_passes(one_pass, device: torch.device) -> dict[bool, float]:
    """The median seconds of `one_pass(bfloat16)` each way: {True: bfloat16's, False: float32's}."""
    def timed(bfloat16: bool) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        one_pass(bfloat16)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - started

    timed(True), timed(False)  # the first of each pays for kernels chosen and memory found
    times = {True: [], False: []}
    for _ in range(TIMED_PASSES):
        for bfloat16 in (True, False):
            times[bfloat16].append(timed(bfloat16))
    return {bfloat16: statistics.median(seconds) for bfloat16, seconds in times.items()}


def measure_bfloat16(one_pass, device: torch.device) -> tuple[bool, float]:
    """Whether bfloat16 is clearly faster than float32 for `one_pass(bfloat16)` (a forward and backward
    pass of a real batch that leaves no trace on the run), and how many times as fast it measured."""
    seconds = time_passes(one_pass, device)
    speed = seconds[False] / seconds[True]
    return speed >= 1 / CLEARLY_FASTER, speed
