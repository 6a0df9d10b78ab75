"""What a checkpoint file holds, checked before anything uses it.

A checkpoint is a file the user can edit, damage or be handed: every field is checked for its
type and range here (formats/checkpoint.py's docstring has the layout), so a bad one is one
line naming the file and the field, never an error from deep inside sampling or resuming. A model
and names handed to the Python API are checked here too (`check_model_and_names`, `check_model`).
"""

from __future__ import annotations

import math

import torch

from minigpt.common.arguments import as_names
from minigpt.data import Tokenizer
from minigpt.errors import UsageError
from minigpt.files.fields import entry, expect, finite_number, tensors, whole_number
from minigpt.files.run_records import LARGEST_LOSS
from minigpt.model import GPT

LARGEST_WEIGHT = 1e6  # no trained model's weight comes near; past it the forward pass overflows into nan
MOST_HASHES = 64  # a Bloom filter of names uses a handful; more is a damaged field


def check_layout(raw: dict, path) -> None:
    """The fields every checkpoint has (an import's too), each of the type it must be."""
    check_weights(tensors(entry(raw, "model", dict, path), path, "'model'"), path)
    entry(raw, "config", dict, path)
    entry(raw, "vocab", list, path)
    whole_number(raw.get("step", 0), path, "'step'")
    data = expect(raw.get("data", {}), dict, path, "'data'")
    for key in ("path", "val_path"):
        expect(data.get(key), (str, type(None)), path, f"'data'['{key}']")
    expect(raw.get("train_names", ""), str, path, "'train_names'")
    check_membership(expect(raw.get("membership"), (dict, type(None)), path, "'membership'"), path)
    code = expect(raw.get("code", {}), dict, path, "'code'")
    for key, value in code.items():
        expect(value, (str, bool, type(None)), path, f"'code'['{key}']")


def check_membership(membership: dict | None, path) -> None:
    """The training names as text, or a Bloom filter: bytes, a hash count and a name count."""
    if membership is None:
        return
    kind = entry(membership, "kind", str, path, "'membership'['kind']")
    if kind == "exact":
        entry(membership, "names", str, path, "'membership'['names']")
    elif kind == "bloom":
        bits = entry(membership, "bits", torch.Tensor, path, "'membership'['bits']")
        if bits.dtype != torch.uint8 or bits.dim() != 1 or not bits.numel():
            raise UsageError(
                f"{path}: 'membership'['bits'] should be a row of bytes, and it is "
                f"{bits.dtype} of shape {list(bits.shape)}"
            )
        whole_number(membership.get("hashes"), path, "'membership'['hashes']", least=1, most=MOST_HASHES)
        whole_number(membership.get("count"), path, "'membership'['count']")


def check_training_state(raw: dict, path) -> None:
    """What only a resumable run writes: the optimizer's state, the progress and every generator's state."""
    if "optimizer" not in raw or "rng" not in raw:
        raise UsageError(f"{path}: this checkpoint holds no training state to resume from")
    entry(raw, "optimizer", dict, path)
    progress = entry(raw, "progress", dict, path)
    whole_number(progress.get("tokens"), path, "'progress'['tokens']")
    for key in ("seconds", "elapsed"):
        if finite_number(progress.get(key), path, f"'progress'['{key}']") < 0:
            raise UsageError(f"{path}: 'progress'['{key}'] should not be negative")
    if progress.get("best_step") is not None:
        whole_number(progress["best_step"], path, "'progress'['best_step']")
    whole_number(progress.get("evals_since_best", 0), path, "'progress'['evals_since_best']")
    rng = entry(raw, "rng", dict, path)
    ranks = expect(
        rng.get("ranks", [entry(rng, "torch", torch.Tensor, path, "'rng'['torch']")]), list, path, "'rng'['ranks']"
    )
    if not ranks:
        raise UsageError(f"{path}: 'rng'['ranks'] holds no generator state")
    for state in ranks:
        check_generator_state(state, path)
    expect(rng.get("cuda", []), list, path, "'rng'['cuda']")


def check_generator_state(state, path) -> None:
    """A CPU generator's state, as torch.get_rng_state returns it: tried on a generator of its own."""
    expect(state, torch.Tensor, path, "a generator state in 'rng'")
    try:
        torch.Generator().set_state(state)
    except (RuntimeError, TypeError, ValueError):
        raise UsageError(
            f"{path}: a generator state in 'rng' is damaged ({state.dtype}, {state.numel()} values)"
        ) from None


def weight_trouble(tensor: torch.Tensor) -> str | None:
    """What is wrong with a tensor of weights (or their scales) as numbers: nan, inf or an absurd size; None when
    nothing is."""
    if not torch.isfinite(tensor).all():
        bad = int((~torch.isfinite(tensor)).sum())
        return f"{bad} non-finite value{'s' * (bad > 1)} (nan or inf)"
    if tensor.numel() and tensor.abs().max() > LARGEST_WEIGHT:
        return (
            f"{tensor.abs().max().item():.3g}, far larger than a trained model's weights ever are (at most "
            f"{LARGEST_WEIGHT:g} is read)"
        )
    return None


def check_weights(weights: dict, path) -> None:
    """Refuse weights that are not floating point, hold nan or inf, or absurd sizes: every name
    and loss computed from them would be garbage."""
    for name, tensor in weights.items():
        if not tensor.is_floating_point():
            raise UsageError(
                f"{path}: weight {name} holds {str(tensor.dtype).removeprefix('torch.')} values, "
                f"and a model's weights are floating-point numbers"
            )
        trouble = weight_trouble(tensor)
        if trouble:
            raise UsageError(f"{path}: weight {name} holds {trouble}")


def checked_vocab(vocab, path) -> list[str]:
    """The stored vocabulary: distinct single characters, in id order (no half of a surrogate pair,
    which no UTF-8 text holds and no output can write)."""
    if (
        not isinstance(vocab, list)
        or not all(isinstance(c, str) and len(c) == 1 for c in vocab)
        or len(set(vocab)) != len(vocab)
    ):
        raise UsageError(f"{path}: the vocabulary is not a list of distinct single characters")
    halves = [f"U+{ord(c):04X}" for c in vocab if 0xD800 <= ord(c) <= 0xDFFF]
    if halves:
        raise UsageError(
            f"{path}: the vocabulary holds half a surrogate pair ({', '.join(halves[:3])}), which is not a character"
        )
    return vocab


def stored_loss(value, path, name: str) -> float | None:
    """A loss a checkpoint stores: None when it has none, NaN when it was not a number (a diverged run: nan or
    infinite), else a number from 0 to the largest float32; anything else (an edited file) refused in one line."""
    if value is None:
        return None
    expect(value, float, path, f"its {name}")
    if not math.isfinite(value):
        return math.nan
    if not 0 <= value <= LARGEST_LOSS:
        raise UsageError(f"{path}: its {name} should be a loss from 0 to {LARGEST_LOSS:.3g}, and it is {value!r}")
    return float(value)


def known_loss(value, path, name: str) -> float | None:
    """A stored loss as a number, or None when there is none or it is not a number (a diverged run)."""
    loss = stored_loss(value, path, name)
    return None if loss is None or math.isnan(loss) else loss


def check_model_and_names(model, tokenizer, names) -> list[str]:
    """What the Python API is handed, checked as the command line checks a file: one line naming what is wrong.
    The names as a list (an iterator is read here, once)."""
    check_model(model, tokenizer)
    names = as_names(names)
    if not names:
        raise UsageError("expected a list of names, got an empty one")
    return names


def check_model(model, tokenizer) -> None:
    """A model and its tokenizer, as a checkpoint holds them (.model, .tokenizer)."""
    if not isinstance(model, GPT):
        raise UsageError(f"expected the model (a checkpoint's .model), got {type(model).__name__}")
    if not isinstance(tokenizer, Tokenizer):
        raise UsageError(f"expected the tokenizer (a checkpoint's .tokenizer), got {type(tokenizer).__name__}")
    if tokenizer.vocab_size != model.config.vocab_size:  # another model's: other characters
        raise UsageError(
            f"the tokenizer has {tokenizer.vocab_size} tokens and the model reads "
            f"{model.config.vocab_size}: give the model its own tokenizer (the same "
            f"checkpoint's)"
        )
