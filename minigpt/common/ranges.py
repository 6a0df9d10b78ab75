"""A draw's options as `minigpt sample` and the Python API take them, each checked against the ranges
config.py declares for the recipe's [sample] keys: a value means one thing on the command line and in a
recipe."""

from __future__ import annotations

from minigpt.common.arguments import what_it_is
from minigpt.config import NOT_NEGATIVE, SEED, UP_TO_ONE, check, check_64_bits
from minigpt.errors import UsageError

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
    for value, name, whole in (
        (num, "--num", True),
        (temperature, "--temperature", False),
        (top_k, "--top-k", True),
        (top_p, "--top-p", False),
        (seed, "--seed", True),
    ):
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
        raise UsageError(
            f"num is at most {MOST_LISTED:,} names in one list, got {num:,}; "
            f"minigpt.sample_batches yields them a batch at a time"
        )
