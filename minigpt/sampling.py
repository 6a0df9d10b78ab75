"""Generating names: batched, one token at a time over a key/value cache, the options (temperature,
top-k, top-p) checked once for the command line and the Python API alike (recipes/checks.py).
runs/new_names.py draws from a checkpoint with its recipe's options."""

from __future__ import annotations

import torch

from minigpt.attention import KVCache
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.model import GPT, eval_mode
from minigpt.recipes.checks import check_options


def filter_logits(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float) -> torch.Tensor:
    """Scale by 1/temperature, keep the top_k tokens (None or 0: all), then the smallest set with probability >= top_p.

    The likeliest token is moved to 0 before the scaling, so that a temperature near 0 sends every other
    token to -inf and leaves it alone: greedy decoding in the limit, never inf - inf (nan)."""
    temperature = 0.0 if temperature == 0 else temperature  # -0.0 is 0: greedy, where dividing by it flips every sign
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    logits = torch.where(shifted == 0, shifted, shifted / temperature)
    if top_k and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already reach top_p (the first always stays)
        drop_sorted = probs.cumsum(dim=-1) - probs >= top_p
        drop_sorted[..., 0] = False  # said, not left to arithmetic: a top_p that rounds to 0 in float32 keeps it too
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_token(logits: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """One token per row from softmax(logits): the first whose cumulative probability reaches its uniform draw.

    One random number per row, where torch.multinomial draws one per row and token.
    """
    cumulative = torch.softmax(logits, dim=-1).cumsum(dim=-1)  # [rows, vocab]
    return (cumulative < draws[:, None] * cumulative[:, -1:]).sum(dim=-1)


def _generate_batch(model, tokenizer, prompt, batch, temperature, top_k, top_p, generator, use_cache, width) -> list[str]:
    device = generator.device
    block_size = model.config.block_size
    prompt = torch.tensor(prompt, device=device)[None]  # [1, len(prompt)]
    cache = KVCache.for_model(model, batch) if use_cache else None
    # every name starts with the same prompt: run it once (its keys and values fill every row of the cache)
    logits = model(prompt, attend=cache.layers if use_cache else None)[0][:, -1]  # [1, vocab]
    if prompt.size(1) == 1:
        logits[:, tokenizer.bos] = float("-inf")  # a name has at least one character
    logits = logits.expand(batch, -1)
    tokens = prompt.expand(batch, -1)
    written = torch.full((batch, block_size + 1 - prompt.size(1)), tokenizer.bos, device=device)
    rows = torch.arange(batch, device=device)  # the names still being computed
    ended = torch.zeros(batch, dtype=torch.bool, device=device)  # ...of which these have already ended
    for step in range(written.size(1)):
        # a whole batch's width of draws, whatever the batch holds, one per name computed or not: the k-th
        # name's draws depend neither on when the others ended nor on how many names were asked for
        draws = torch.rand(width, generator=generator, device=device)[:batch]
        token = sample_token(filter_logits(logits, temperature, top_k, top_p), draws[rows])  # [len(rows)]
        written[rows, step] = token  # after a name's end, what is written is never read
        ended |= token == tokenizer.bos
        if prompt.size(1) + step + 1 > block_size or bool(ended.all()):
            break
        if 2 * int(ended.sum()) >= len(rows):  # once half have ended, stop computing them
            going = (~ended).nonzero().squeeze(1)  # positions in the batch as it is now
            rows, token, ended = rows[going], token[going], ended[going]
            if use_cache:
                cache.keep(going)
            else:
                tokens = tokens[going]
        if use_cache:
            logits = model(token[:, None], start=cache.length, attend=cache.layers)[0][:, -1]  # reads the cache
        else:
            tokens = torch.cat([tokens, token[:, None]], dim=1)
            logits = model(tokens)[0][:, -1]  # every position again
    prefix = tokenizer.decode(prompt[0].tolist())
    return [prefix + tokenizer.decode(row[: row.index(tokenizer.bos)] if tokenizer.bos in row else row)
            for row in written.tolist()]


LOGITS_AT_ONCE = 2**24  # numbers (64 MB of float32): what evaluation and sampling compute of [names, positions, vocabulary] at once


def rows_at_once(batch_size: int, positions: int, vocab_size: int) -> int:
    """Names a batch of evaluation or sampling takes: `batch_size`, fewer where a large vocabulary would make
    their logits outgrow LOGITS_AT_ONCE (a million characters: a name at a time), never none."""
    return max(1, min(batch_size, LOGITS_AT_ONCE // (positions * vocab_size)))


def generate(model: GPT, tokenizer: Tokenizer, num: int, **options) -> list[str]:
    """`num` names that start with `prefix`. A name ends at the boundary token or at block_size characters.
    The options are `generate_batches`'."""
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
):
    """`generate`'s names, a batch (a list) at a time as each is made: a million names print as they come.

    use_cache=False recomputes the whole prefix for every new character instead of reading
    the key/value cache: slower, and the same names but for a rare draw that lands within
    rounding of a boundary between two characters (the benchmarks compare the two).
    """
    check_options(num, temperature, top_k, top_p, seed)
    block_size = model.config.block_size
    if len(prefix) >= block_size:
        raise UsageError(f"--prefix is {len(prefix)} characters; the model's block size allows at most {block_size - 1}")
    prompt = [tokenizer.bos] + tokenizer.encode(prefix)
    device = model.lm_head.weight.device
    generator = torch.Generator(device=device)
    generator.manual_seed(seed if seed is not None else torch.seed())
    batch_size = rows_at_once(batch_size, 1, tokenizer.vocab_size)  # up to 8,192 characters, 2,048 names at a time
    with eval_mode(model):
        for start in range(0, num, batch_size):
            batch = min(batch_size, num - start)
            yield _generate_batch(model, tokenizer, prompt, batch, temperature, top_k, top_p, generator, use_cache, batch_size)
