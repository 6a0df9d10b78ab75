"""Generating names: batched, one token at a time over a key/value cache, with temperature,
top-k and top-p. `minigpt.generate` (runs/new_names.py) checks what it is handed, then calls
`generate` here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from .attention import KVCache
from .data import Tokenizer, rows_at_once
from .model import GPT, eval_mode


def filter_logits(
    logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float
) -> torch.Tensor:
    """Scale by 1/temperature, keep the top_k tokens (None or 0: all), then the smallest set
    with probability >= top_p. The likeliest token is moved to 0 before the scaling, so a
    temperature near 0 sends every other to -inf and leaves it: greedy in the limit, never
    inf - inf (nan)."""
    temperature = 0.0 if temperature == 0 else temperature  # -0.0 would flip every sign
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    logits = torch.where(shifted == 0, shifted, shifted / temperature)
    if top_k and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already reach top_p
        drop_sorted = probs.cumsum(dim=-1) - probs >= top_p
        drop_sorted[..., 0] = False  # the first stays, even for a top_p that rounds to 0
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_token(logits: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """One token per row from softmax(logits): the first whose cumulative probability
    reaches its uniform draw. One random number per row, where torch.multinomial draws one
    per token."""
    cumulative = torch.softmax(logits, dim=-1).cumsum(dim=-1)  # [rows, vocab]
    return (cumulative < draws[:, None] * cumulative[:, -1:]).sum(dim=-1)


def generate_batch(
    model: GPT,
    bos: int,
    prompt: list[int],
    batch: int,
    choose: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    use_cache: bool,
) -> list[list[int]]:
    """`batch` names' tokens after the prompt; `choose(logits, rows)` picks each next token."""
    # unmasked, the earlier positions' keys change as a name grows: no cache holds them
    use_cache = use_cache and model.config.causal
    device = model.lm_head.weight.device
    start = torch.tensor(prompt, device=device)[None]  # [1, len(prompt)]
    cache = KVCache(model, batch) if use_cache else None
    # every name starts with the same prompt: run it once (it fills every row of the cache)
    logits = model(start, attend=cache.layers if cache is not None else None)[0][
        :, -1
    ]  # [1, vocab]
    if start.size(1) == 1:
        logits[:, bos] = float("-inf")  # a name has at least one character
    logits, tokens = logits.expand(batch, -1), start.expand(batch, -1)
    room = model.config.block_size + 1 - start.size(1)
    written = torch.full((batch, room), bos, device=device)
    rows = torch.arange(batch, device=device)  # the names still being computed
    ended = torch.zeros(batch, dtype=torch.bool, device=device)  # ...of which these have ended
    for step in range(written.size(1)):
        token = choose(logits, rows)  # [len(rows)]
        written[rows, step] = token  # after a name's end, what is written is never read
        ended |= token == bos
        if start.size(1) + step + 1 > model.config.block_size or bool(ended.all()):
            break
        if 2 * int(ended.sum()) >= len(rows):  # once half have ended, stop computing them
            going = (~ended).nonzero().squeeze(1)  # positions in the batch as it is now
            rows, token, ended = rows[going], token[going], ended[going]
            tokens = tokens[going]  # read only without the cache
            if cache is not None:
                cache.keep(going)
        if cache is not None:  # the new token reads the cache
            positions = cache.next_positions(1)
            logits = model(token[:, None], positions=positions, attend=cache.layers)[0][:, -1]
        else:  # every position again
            tokens = torch.cat([tokens, token[:, None]], dim=1)
            logits = model(tokens)[0][:, -1]
    return written.tolist()


def generate(model: GPT, tokenizer: Tokenizer, num: int, **options: Any) -> list[str]:
    """`num` names (the options are `generate_batches`'); a name ends at the boundary token."""
    return [name for batch in generate_batches(model, tokenizer, num, **options) for name in batch]


@torch.no_grad()
def generate_batches(
    model: GPT,
    tokenizer: Tokenizer,
    num: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float = 1.0,
    prefix: str = "",
    seed: int | None = None,
    batch_size: int = 2048,
    use_cache: bool = True,
) -> Iterator[list[str]]:
    """Names that start with `prefix`, a list at a time as each is made. use_cache=False
    recomputes every position for each new character instead of reading the key/value cache:
    slower, and the same names but for a draw within rounding of a boundary between two
    tokens."""
    generator = torch.Generator()  # on the CPU wherever the model runs: a seed, the same names
    generator.manual_seed(seed if seed is not None else torch.seed())
    # 2,048 names at once up to a vocabulary of 8,192 characters
    width = rows_at_once(batch_size, 1, tokenizer.vocab_size)

    def choose(logits: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        # a whole batch's width of draws, one per name computed or not: the k-th name's draws
        # depend neither on when the others ended nor on how many names were asked for
        draws = torch.rand(width, generator=generator).to(logits.device)[rows]
        return sample_token(filter_logits(logits, temperature, top_k, top_p), draws)

    bos, prompt = tokenizer.bos, [tokenizer.bos] + tokenizer.encode(prefix)
    with eval_mode(model):
        for start in range(0, num, width):
            rows = min(width, num - start)
            written = generate_batch(model, bos, prompt, rows, choose, use_cache)
            yield [
                prefix + tokenizer.decode(row[: row.index(bos)] if bos in row else row)
                for row in written
            ]
