"""The values a recipe's key may take beyond its type (config.py declares each key with its ranges),
and the largest numbers minigpt takes."""

from __future__ import annotations

import dataclasses
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable

from minigpt.common.arguments import what_it_is
from minigpt.common.errors import UsageError


@dataclass(frozen=True)
class Range:
    """The values a key may take beyond its type, and how a refusal says so."""

    holds: Callable[[Any], bool]
    says: str  # "must be positive": the refusal reads "train.lr must be positive, got -1"


POSITIVE = Range(lambda v: v > 0, "must be positive")
NOT_NEGATIVE = Range(lambda v: v >= 0, "must not be negative")
A_FRACTION = Range(lambda v: 0 <= v < 1, "must be in [0, 1)")  # a probability or a decay that must stay below 1
UP_TO_ONE = Range(lambda v: 0 < v <= 1, "must be in (0, 1]")


def from_to(low: int, high: int, what: str = "") -> Range:
    return Range(lambda v: low <= v <= high, f"must be {what}from {low:,} to {high:,}")


LARGEST_INTEGER = 2**63 - 1  # every whole-number key: what a checkpoint and torch hold
SEEDS = LARGEST_INTEGER + 1  # a seed is a whole number from 0 up to LARGEST_INTEGER: what torch's generators take
SEED = from_to(0, SEEDS - 1, "a whole number ")
MAX_BATCH_SIZE = 65_536  # names a step: past this one step's activations outgrow any machine's memory
MAX_SNAPSHOTS = 256  # a run's snapshots, each a copy of the weights: the explorer's slider, not a history
LOGITS_AT_ONCE = 2**24  # numbers (64 MB of float32) of [names, positions, vocabulary] at once


def rows_at_once(batch_size: int, positions: int, vocab_size: int) -> int:
    """Names a batch of evaluation or sampling takes: `batch_size`, fewer where a large vocabulary
    would make their logits outgrow LOGITS_AT_ONCE (a million characters: a name at a time)."""
    return max(1, min(batch_size, LOGITS_AT_ONCE // (positions * vocab_size)))


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


def parameter_count(m) -> int:
    """The parameters of a model of this shape, by arithmetic (nothing is built)."""
    c = m.n_embd
    per_layer = 12 * c * c + (2 * c if m.norm_scale else 0)  # attention 4 C^2, MLP 8 C^2, the gains
    final = c if m.final_norm and m.norm_scale else 0
    return (2 * m.vocab_size + m.block_size) * c + m.n_layer * per_layer + final


def check_model_size(m, where: str | None = None) -> None:
    if parameter_count(m) > MAX_PARAMETERS:
        shape = f"n_layer {m.n_layer:,}, n_embd {m.n_embd:,}, block_size {m.block_size:,}, vocab_size {m.vocab_size:,}"
        raise UsageError(f"{where + ': ' if where else ''}a model of {shape} would have {parameter_count(m):,} "
                         f"parameters; minigpt builds at most {MAX_PARAMETERS:,}")


def check_64_bits(value, name: str) -> None:
    """A whole number past 64 bits (a recipe key or a command's option) can mean nothing: one line says so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise UsageError(f"{name} must be at most {LARGEST_INTEGER:,} (64 bits), got {value}")


def check_declared(part, section: str) -> None:
    """Every key of a recipe's section (a GPTConfig, TrainConfig or SampleConfig) as its declaration in
    config.py allows: its type, its choices, its ranges, 64 bits; one line naming the first that does not hold."""
    for f in dataclasses.fields(part):
        value, name = getattr(part, f.name), f"{section}.{f.name}"
        expected = type(f.default)
        if type(value) is not expected and not (expected is float and type(value) is int):
            shown = f"{type(value).__name__} {value!r}"[:80]
            raise UsageError(f"{name} must be {expected.__name__}, got {shown}")
        if isinstance(value, float) and not math.isfinite(value):  # nan and inf pass every comparison
            raise UsageError(f"{name} must be a finite number, got {value}")
        if f.metadata.get("choices") and value not in f.metadata["choices"]:
            raise UsageError(f"{name} must be one of {', '.join(f.metadata['choices'])}, got '{value}'")
        for allowed in f.metadata.get("ranges", ()):
            check(value, allowed, name)
        check_64_bits(value, name)  # after the ranges, which name narrower bounds


# ---- a draw's options, as `minigpt sample` and the Python API take them (sampling.py checks a draw with these)

MOST_LISTED = 10_000_000  # names one list holds (about a gigabyte of strings); more are a stream


def a_number(value, name: str, whole: bool = False) -> None:
    """A whole number (or with `whole` False any number) within 64 bits; true and false are not numbers."""
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


def check_listed(num) -> None:
    """A number of names that one list can hold: more is a stream (`minigpt.sample_batches`, `minigpt sample -n`)."""
    a_number(num, "--num", whole=True)
    if num > MOST_LISTED:
        raise UsageError(f"num is at most {MOST_LISTED:,} names in one list, got {num:,}; "
                         f"minigpt.sample_batches yields them a batch at a time")
