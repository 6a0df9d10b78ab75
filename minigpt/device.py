"""Where a model runs: "auto" picks CUDA when there is a GPU, else the CPU."""

from __future__ import annotations

import torch

from minigpt.errors import UsageError


def resolve_device(name: str) -> torch.device:
    """"auto" is CUDA when there is one, else the CPU; anything else must exist here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UsageError(f"unknown device '{name}' (expected auto, cpu, cuda, cuda:N or mps)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"device '{name}' asked for, but CUDA is not available on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"device '{name}' asked for, but there are {torch.cuda.device_count()} CUDA devices")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError("device 'mps' asked for, but MPS is not available on this machine")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"unsupported device '{name}' (expected auto, cpu, cuda, cuda:N or mps)")
    return device
