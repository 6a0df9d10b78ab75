"""A recipe's values checked: every key against what its declaration in config.py allows, the model's
size, and what no one key can say alone; each refusal one line naming the key and the value."""

from __future__ import annotations

import dataclasses

from minigpt.config import Config, checked_shape
from minigpt.common.errors import UsageError
from minigpt.common.ranges import (NOT_NEGATIVE, SEED, UP_TO_ONE, check, check_64_bits, check_declared,
                                   check_model_size)

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
        check_declared(getattr(config, section), section)
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
