"""The loss on names: over all of them (training.py's `evaluate`, the validation loss a run
measures), and of each name on its own: what a paired comparison of two models needs, and what shows which names a
model finds hard.

    for name, tokens, loss in name_losses(model, tokenizer, names): ...

A name's loss is its mean cross-entropy per predicted token (its characters and the end), so the
token-weighted mean over the names is `evaluate_names`'s loss (below).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minigpt.common.arguments import as_whole_number
from minigpt.data import IGNORE, Tokenizer, rows_at_once
from minigpt.files.corpus import tokenized
from minigpt.files.names_file import refuse_unseen_names
from minigpt.formats.checkpoint_checks import check_model_and_names
from minigpt.model import GPT, eval_mode
from minigpt.training import evaluate


def evaluate_names(model: GPT, tokenizer: Tokenizer, names: list[str], what: str = "names") -> dict:
    """Loss of a trained model on a list of names: {"loss", "tokens", "names", "block_size", "truncated",
    "unscored"}: the tokens scored, and those of names cut to fit the block size that were not (a loss
    compares with another only over the same tokens)."""
    names = check_model_and_names(model, tokenizer, names)
    refuse_unseen_names(names, tokenizer.unseen, what)
    device = model.lm_head.weight.device
    data = tokenized(names, tokenizer, model.config.block_size).to(device)
    return {
        "loss": evaluate(model, data),
        "tokens": int(data.lengths.sum()),
        "names": len(names),
        "block_size": model.config.block_size,
        "truncated": data.truncated,
        "unscored": int((data.characters + 1).sum() - data.lengths.sum()),  # what the block size cut off
    }


def name_losses(
    model: GPT, tokenizer: Tokenizer, names: list[str], what: str = "names", batch_size: int = 256
) -> list[tuple[str, int, float]]:
    """(name, predicted tokens, mean loss per token) for every name, in the order given."""
    as_whole_number(batch_size, "batch_size (names scored at once)", least=1)
    names = check_model_and_names(model, tokenizer, names)
    refuse_unseen_names(names, tokenizer.unseen, what)
    return scored_rows(model, tokenizer, names, batch_size)


@torch.no_grad()
def scored_rows(
    model: GPT, tokenizer: Tokenizer, names: list[str], batch_size: int = 256
) -> list[tuple[str, int, float]]:
    """name_losses's rows for names already checked."""
    data = tokenized(names, tokenizer, model.config.block_size).to(model.lm_head.weight.device)
    sums = torch.zeros(len(names), dtype=torch.float64)
    by_length = torch.argsort(data.lengths, stable=True)  # batches of names of one length waste no work on padding
    batch_size = rows_at_once(batch_size, model.config.block_size, model.config.vocab_size)  # as evaluate's
    with eval_mode(model):
        for rows in by_length.split(batch_size):
            x, y = data.batch(rows)
            logits, _ = model(x)
            losses = F.cross_entropy(logits.transpose(1, 2), y, ignore_index=IGNORE, reduction="none")
            sums[rows] = losses.double().sum(1).cpu()
    tokens = data.lengths.tolist()
    return [(name, n, total / n) for name, n, total in zip(names, tokens, sums.tolist())]


def name_losses_as_scored(model: GPT, tokenizer: Tokenizer, names: list[str], what: str = "names", chunk: int = 8192):
    """name_losses's rows, yielded a chunk of names at a time: every name is checked first, then rows come as
    they are scored, and memory holds one chunk's ids and losses, not every name's (millions of names)."""
    names = check_model_and_names(model, tokenizer, names)  # here, before the first row is asked for
    refuse_unseen_names(names, tokenizer.unseen, what)
    return (
        row
        for start in range(0, len(names), chunk)
        for row in scored_rows(model, tokenizer, names[start : start + chunk])
    )


@torch.no_grad()
def loss_with_mask_off(model: GPT, tokenizer: Tokenizer, names: list[str], batch_size: int = 256) -> float:
    """The mean loss a token on `names` with the causal mask taken away: every position reads every position
    of its name, the later ones too (what the explorer's "mask off" switch does). Names are read in batches of
    one length, so that no position reads another name's padding."""
    names = check_model_and_names(model, tokenizer, names)
    refuse_unseen_names(names, tokenizer.unseen, "names")
    data = tokenized(names, tokenizer, model.config.block_size).to(model.lm_head.weight.device)
    reads_all = [lambda q, k, v: F.scaled_dot_product_attention(q, k, v)] * model.config.n_layer
    nats, tokens = 0.0, 0
    with eval_mode(model):
        for length in data.lengths.unique().tolist():
            for rows in (data.lengths == length).nonzero().squeeze(1).split(batch_size):
                x, y = data.batch(rows)
                logits, _ = model(x, attend=reads_all)
                nats += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum").item()
                tokens += int((y != IGNORE).sum())
    return nats / tokens
