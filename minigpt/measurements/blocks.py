"""The model's layers as what they are: nn.ModuleList gives each as any Module, so a measurement that reads a
layer's attention or MLP takes them from here and its type checker knows their parts."""

from __future__ import annotations

from minigpt.model import GPT, Block


def blocks(model: GPT) -> list[Block]:
    return [layer for layer in model.layers if isinstance(layer, Block)]
