"""The loss of a model on names: mean cross-entropy per predicted token (each character and the end)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minigpt.data import IGNORE, Tokenizer, TokenizedNames
from minigpt.distributed import Distributed
from minigpt.model import GPT


@torch.no_grad()
def evaluate(model: GPT, data: TokenizedNames, batch_size: int = 256, dist: Distributed = Distributed()) -> float:
    """Mean cross-entropy per predicted token over every name in `data` (each rank scores its share)."""
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=data.flat.device)
    for x, y in data.in_order(batch_size, dist.shard):
        logits, _ = model(x)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum")
    model.train(was_training)
    return dist.sum(total).item() / int(data.lengths.sum())


def evaluate_names(model: GPT, tokenizer: Tokenizer, names: list[str], what: str = "names") -> dict:
    """Loss of a trained model on a list of names: {"loss", "tokens", "names", "truncated"}."""
    tokenizer.check("".join(names), what)
    device = model.lm_head.weight.device
    data = TokenizedNames(names, tokenizer, model.config.block_size).to(device)
    return {
        "loss": evaluate(model, data),
        "tokens": int(data.lengths.sum()),
        "names": len(names),
        "truncated": data.truncated,
    }
