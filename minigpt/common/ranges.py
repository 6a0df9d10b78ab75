"""The values a recipe's key may take beyond its type (config.py declares each key with its ranges),
and the largest numbers minigpt takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


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
