"""A recipe's values checked: every key against what its declaration in config.py allows, the model's
size, and what no one key can say alone; each refusal one line naming the key and the value."""

from __future__ import annotations

import dataclasses
import math
import struct

from minigpt.config import Config, GPTConfig, checked_shape
from minigpt.common.errors import UsageError
from minigpt.common.ranges import LARGEST_INTEGER, NOT_NEGATIVE, SEED, UP_TO_ONE, Range

# far beyond any model of names (docs/recipes.md gives the recipes' sizes); a stored config past it
# is refused before anything is allocated, so a small crafted file cannot claim gigabytes
MAX_PARAMETERS = 100_000_000


def as_float32(value: float) -> float:
    """The value as a float32 holds it, the precision the model's arithmetic uses (past its range: ±inf)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def check(value, allowed: Range, name: str) -> None:
    """One line naming the key (or option) and the value when `value` is outside `allowed`: a number that is not
    finite says so, and a float is checked as given and as the float32 it becomes where it is used (1e-50 is 0)."""
    if isinstance(value, float) and not math.isfinite(value):  # nan and inf pass or fail comparisons by accident
        raise UsageError(f"{name} must be a finite number, got {value}")
    if not allowed.holds(value):
        got = f"{value:,}" if "from" in allowed.says and isinstance(value, int) else f"{value}"
        raise UsageError(f"{name} {allowed.says}, got {got}")
    if isinstance(value, float) and not (math.isfinite(as_float32(value)) and allowed.holds(as_float32(value))):
        says = allowed.says if math.isfinite(as_float32(value)) else "must be a finite number"
        raise UsageError(f"{name} {says}, got {value}, which is {as_float32(value):g} as the float32 the "
                         f"model computes with")


def parameter_count(m: GPTConfig) -> int:
    """The parameters of a model of this shape, by arithmetic (nothing is built)."""
    c = m.n_embd
    per_layer = 12 * c * c + (2 * c if m.norm_scale else 0)  # attention 4 C^2, MLP 8 C^2, the gains
    final = c if m.final_norm and m.norm_scale else 0
    return (2 * m.vocab_size + m.block_size) * c + m.n_layer * per_layer + final


def check_model_size(m: GPTConfig, where: str | None = None) -> None:
    if parameter_count(m) > MAX_PARAMETERS:
        shape = f"n_layer {m.n_layer:,}, n_embd {m.n_embd:,}, block_size {m.block_size:,}, vocab_size {m.vocab_size:,}"
        raise UsageError(f"{where + ': ' if where else ''}a model of {shape} would have {parameter_count(m):,} "
                         f"parameters; minigpt builds at most {MAX_PARAMETERS:,}")


def check_64_bits(value, name: str) -> None:
    """A whole number past 64 bits (a recipe key or a command's option) can mean nothing: one line says so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise UsageError(f"{name} must be at most {LARGEST_INTEGER:,} (64 bits), got {value}")


def a_number(value, name: str, whole: bool = False) -> None:
    """A whole number (or with `whole` False any number) within 64 bits; true and false are not numbers."""
    from minigpt.files.fields import what_it_is  # here: fields imports torch, and the CLI imports this module

    if type(value) is not int and (whole or type(value) is not float):
        raise UsageError(f"{name} must be {'a whole number' if whole else 'a number'}, got {what_it_is(value)}")
    check_64_bits(value, name)


def check_seed(seed: int | None, name: str) -> None:
    if seed is not None:
        check(seed, SEED, name)


def check_sampling(temperature: float, top_k: int | None, top_p: float, name=lambda key: f"sample.{key}") -> None:
    """The sampling options' ranges, for sample's options (a recipe's [sample] keys declare the same): a
    value means one thing on the command line and in a recipe. Temperature 0 is greedy decoding (the
    likeliest character each time); top_k 0 (or None) keeps every token. `name` spells a key as the user wrote it.
    """
    check(temperature, NOT_NEGATIVE, name("temperature"))
    if top_k is not None:
        check(top_k, NOT_NEGATIVE, name("top_k"))
    check(top_p, UP_TO_ONE, name("top_p"))


def validate(config: Config) -> None:
    """Every key against what its declaration allows, then what no one key can say alone."""
    m, t = config.model, config.train
    for section in ("model", "train", "sample"):
        part = getattr(config, section)
        for f in dataclasses.fields(part):
            value, name = getattr(part, f.name), f"{section}.{f.name}"
            if isinstance(value, float) and not math.isfinite(value):  # nan and inf pass every comparison
                raise UsageError(f"{name} must be a finite number, got {value}")
            if f.metadata.get("choices") and value not in f.metadata["choices"]:
                raise UsageError(f"{name} must be one of {', '.join(f.metadata['choices'])}, got '{value}'")
            for allowed in f.metadata.get("ranges", ()):
                check(value, allowed, name)
            check_64_bits(value, name)  # after the ranges, which name narrower bounds
    checked_shape(dataclasses.replace(m, vocab_size=2))  # the shape alone: vocab_size comes from the data
    if t.min_lr > t.lr:
        raise UsageError(f"train.min_lr ({t.min_lr}) must not exceed train.lr ({t.lr})")
    if t.pack_names and not m.causal:  # packed names are kept apart by a mask of their own, a causal one
        raise UsageError("train.pack_names needs the causal mask: with model.causal = false a packed name would "
                         "read the names beside it; drop one of the two")
    check_model_size(m)


def check_options(num: int, temperature: float, top_k: int | None, top_p: float, seed: int | None = None) -> None:
    """The options as `minigpt sample` takes them (check_sampling holds the ranges), of their types first: the
    Python API is handed what a command line never gives (None, "5", 10**30)."""
    for value, name, whole in ((num, "--num", True), (temperature, "--temperature", False), (top_k, "--top-k", True),
                               (top_p, "--top-p", False), (seed, "--seed", True)):
        if value is not None or name == "--num":
            a_number(value, name, whole)
    if num < 1:
        raise UsageError(f"--num must be at least 1, got {num}")
    check_seed(seed, "--seed")
    check_sampling(temperature, top_k, top_p, name=lambda key: "--" + key.replace("_", "-"))
