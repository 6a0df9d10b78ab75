"""Names from a trained checkpoint (`minigpt sample`, `minigpt.sample`): the options its recipe's [sample]
section gives unless given, and with new_only, only names that are not among its training names.
`minigpt.generate` is here: sampling.py's, its options checked first, in the command line's words."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from minigpt import sampling
from minigpt.common.ranges import check_listed, check_options
from minigpt.common.text import is_cut
from minigpt.config import SEEDS, SampleConfig
from minigpt.errors import UsageError
from minigpt.files.names_file import refuse_unseen
from minigpt.formats.checkpoint_checks import check_model

if TYPE_CHECKING:
    from minigpt.data import Tokenizer
    from minigpt.formats.checkpoint import Checkpoint
    from minigpt.model import GPT

GENERATE_OPTIONS = ("temperature", "top_k", "top_p", "prefix", "seed", "batch_size", "use_cache")


def generate(model: GPT, tokenizer: Tokenizer, num: int, **options: Any) -> list[str]:
    """`minigpt.generate`: sampling.py's `generate` (its options are `generate_batches`'), with
    everything checked first, in the command line's words."""
    unknown = sorted(set(options) - set(GENERATE_OPTIONS))
    if unknown:
        raise UsageError(f"generate takes no option {', '.join(unknown)}; its options: {', '.join(GENERATE_OPTIONS)}")
    check_listed(num)  # a list of them, all at once: more is a stream (generate_batches)
    check_draw(
        model,
        tokenizer,
        num,
        **{key: value for key, value in options.items() if key not in ("batch_size", "use_cache")},
    )
    return sampling.generate(model, tokenizer, num, **options)


def check_draw(
    model,
    tokenizer,
    num: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float = 1.0,
    prefix: str = "",
    seed: int | None = None,
) -> None:
    """A model with its own tokenizer, a draw's options each in its range (common/ranges.py),
    and a prefix the model has room to read."""
    check_model(model, tokenizer)
    check_options(num, temperature, top_k, top_p, seed)
    if not isinstance(prefix, str):
        raise UsageError(f"--prefix must be text, got {type(prefix).__name__}")
    refuse_unseen(prefix, tokenizer.unseen, f"'{prefix}'")
    if len(prefix) >= model.config.block_size:
        raise UsageError(
            f"--prefix is {len(prefix)} characters; the model's block size allows at most {model.config.block_size - 1}"
        )


NEW_AT_ONCE = 1 << 20  # names an attempt of `sample --new-only` draws before the next begins


def recipe_options(
    recipe: SampleConfig, temperature: float | None = None, top_k: int | None = None, top_p: float | None = None
) -> dict:
    """Each option as given, else as the recipe's [sample] section has it."""
    return {
        "temperature": recipe.temperature if temperature is None else temperature,
        "top_k": (recipe.top_k or None) if top_k is None else top_k,  # the recipe's 0 keeps every token
        "top_p": recipe.top_p if top_p is None else top_p,
    }


def is_new(name: str, checkpoint) -> bool:
    """Not among the checkpoint's training names, and whole: a name cut at the block size is the
    start of one, never a new name."""
    return name not in checkpoint.membership and not is_cut(name, checkpoint.config.model.block_size)


def sample(
    checkpoint: Checkpoint,
    num: int = 10,
    new_only: bool = False,
    seed: int | None = None,
    prefix: str = "",
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
) -> list[str]:
    """Names from a loaded checkpoint; with new_only, only names not in its training data.

    Options left as None take the checkpoint's recipe (its [sample] section).
    """
    check_listed(num)
    batches = sample_batches(checkpoint, num, new_only, seed, prefix, temperature, top_k, top_p)
    return [name for batch in batches for name in batch]


def sample_batches(
    checkpoint: Checkpoint,
    num: int = 10,
    new_only: bool = False,
    seed: int | None = None,
    prefix: str = "",
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Iterator[list[str]]:
    """`sample`'s names a batch at a time, as each is made (`minigpt sample` prints them so)."""
    if not all(hasattr(checkpoint, part) for part in ("model", "tokenizer", "config", "membership")):
        raise UsageError(
            f"sample takes a loaded checkpoint (minigpt.load_checkpoint(path)), got {type(checkpoint).__name__}"
        )
    model, tokenizer = checkpoint.model, checkpoint.tokenizer
    options = {"prefix": prefix, **recipe_options(checkpoint.config.sample, temperature, top_k, top_p)}
    check_draw(model, tokenizer, num, seed=seed, **options)
    if not new_only:
        yield from sampling.generate_batches(model, tokenizer, num, seed=seed, **options)
        return
    seen = checkpoint.membership
    if seen.kind == "none":
        raise UsageError(
            f"{checkpoint.path} does not carry its training names, so new names cannot be told from "
            f"them; give the names it was trained on (minigpt sample --data FILE)"
        )
    found = 0
    generator_seed = seed if seed is not None else torch.seed()
    for attempt in range(20):  # each attempt its own seed, kept in the range a seed has
        wanted = min(2 * (num - found) + 10, NEW_AT_ONCE)  # -n 10,000,000 is drawn a chunk at a time, not held
        for batch in sampling.generate_batches(
            model, tokenizer, wanted, seed=(generator_seed + attempt) % SEEDS, **options
        ):
            fresh = [name for name in batch if is_new(name, checkpoint)][: num - found]
            found += len(fresh)
            yield fresh
            if found == num:
                return
    raise UsageError(f"found only {found} of {num} names not in the training data; {what_to_try(options)}")


def what_to_try(options: dict) -> str:
    """Advice that can help a draw find more new names: a higher temperature does nothing at top-k 1."""
    if options.get("top_k") == 1 or options.get("temperature") == 0:
        return (
            "top-k 1 and temperature 0 draw the likeliest name every time: raise --top-k (0 keeps every character) "
            "and the temperature"
        )
    if options.get("top_p", 1.0) < 1:
        return "try a higher --top-p or temperature"
    return "try a higher temperature"


@dataclass
class Tally:
    """What `minigpt sample` says of the names it printed: how many, how many are new (not training
    names; a cut name is no whole name, so never new), and how many were cut at the block size."""

    printed: int = 0
    new: int = 0
    cut: int = 0

    def add(self, batch: list[str], checkpoint) -> None:
        seen, block = checkpoint.membership, checkpoint.config.model.block_size
        self.printed += len(batch)
        self.cut += sum(is_cut(name, block) for name in batch)
        if seen.kind != "none":  # an imported checkpoint cannot know its training names
            self.new += sum(is_new(name, checkpoint) for name in batch)


def name_record(name: str, checkpoint) -> dict:
    """A drawn name as `minigpt sample --json` writes it: is it a training name (None: unknown), is it cut."""
    seen = checkpoint.membership
    known = seen.kind != "none"
    return {
        "name": name,
        "in_training_data": (name in seen) if known else None,
        "cut": is_cut(name, checkpoint.config.model.block_size),
    }
