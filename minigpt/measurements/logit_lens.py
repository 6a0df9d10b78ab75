"""The logit lens: each layer's guess at the next character, read off the residual stream.

Every sublayer adds its output to one running vector per position, the residual stream.
The model reads its prediction off the stream's final value: the final norm (when the
recipe has one), then lm_head. The lens reads the stream the same way after the
embeddings and after every attention and MLP sublayer, as if the model stopped there.

It is an approximation. Only the final value was trained to be read this way; an early
stream holds what later layers will use, not a guess, so early rows say what the stream
already leans to, no more. The last row is exactly the model's prediction.
"""

from __future__ import annotations

import functools

import torch

from minigpt.common.arguments import as_list
from minigpt.common.text import token_label
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.formats.checkpoint_checks import check_model
from minigpt.measurements.blocks import blocks
from minigpt.model import GPT


def embedded(model: GPT, idx: torch.Tensor) -> torch.Tensor:
    """The residual stream's first value [B, T, C]: token plus position embeddings, normed (model.py's)."""
    positions = torch.arange(idx.size(1), device=idx.device)
    return model.emb_norm(model.wte(idx) + model.wpe(positions))


@torch.no_grad()
def residual_streams(model: GPT, idx: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """The residual stream [B, T, C] after the embeddings and after each sublayer, named.
    The loop is model.py's Block.forward, kept apart so the stream can be read between sublayers."""
    x = embedded(model, idx)
    streams = [("embeddings", x)]
    for l, layer in enumerate(blocks(model)):
        x = x + layer.attn(layer.attn_norm(x))
        streams.append((f"layer {l} attention", x))
        x = x + layer.mlp(layer.mlp_norm(x))
        streams.append((f"layer {l} MLP", x))
    return streams


@torch.no_grad()
def read_off(model: GPT, x: torch.Tensor) -> torch.Tensor:
    """Logits from a residual stream, as the model reads its last one: final norm (if any), lm_head."""
    return model.lm_head(model.final_norm(x) if model.final_norm is not None else x)


@torch.no_grad()
def logit_lens(model: GPT, tokenizer: Tokenizer, ids: list[int], top: int = 3) -> dict:
    """For one token sequence (the boundary token first): every stage's likeliest next tokens and its
    probability of the actual next one (the end of the name after the last position).

    {"stages": [names], "positions": [{"position", "read", "next", "stages": [{"top": [{"token", "prob"}],
    "next_prob"}]}]}
    """
    check_model(model, tokenizer)
    ids = as_list(ids, "logit_lens reads token ids (the boundary token, then tokenizer.encode(name))", "token id")
    if (
        not ids
        or not all(isinstance(i, int) and 0 <= i <= tokenizer.bos for i in ids)
        or len(ids) > model.config.block_size
    ):
        raise UsageError(
            f"logit_lens reads token ids (the boundary token, then tokenizer.encode(name)), at most "
            f"{model.config.block_size} of them from 0 to {tokenizer.bos}; got {str(ids)[:40]}"
        )
    model.eval()
    idx = torch.tensor([ids], device=model.lm_head.weight.device)
    stages = residual_streams(model, idx)
    probs = torch.stack([torch.softmax(read_off(model, x)[0].float(), -1) for _, x in stages]).cpu()  # [S, T, V]
    targets = ids[1:] + [tokenizer.bos]
    best = torch.topk(probs, min(top, probs.size(-1)), dim=-1)
    label = functools.partial(token_label, tokenizer)
    return {
        "stages": [name for name, _ in stages],
        "positions": [
            {
                "position": t,
                "read": "".join(label(i) for i in ids[: t + 1]),
                "next": label(targets[t]),
                "stages": [
                    {
                        "top": [
                            {"token": label(i), "prob": p}
                            for i, p in zip(best.indices[s, t].tolist(), best.values[s, t].tolist())
                        ],
                        "next_prob": probs[s, t, targets[t]].item(),
                    }
                    for s in range(len(stages))
                ],
            }
            for t in range(len(ids))
        ],
    }
