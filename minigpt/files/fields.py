"""Fields read from a file, checked for their type before anything uses them.

A file can hold anything: an edited, damaged or hostile one has `null` where a table belongs,
a list where a number does, a number too large for any count. Every reader asks here for the
type it needs and gets the value back, or one line naming the file, the field, what it should
be and what it holds instead (rather than an AttributeError far from the file).
"""

from __future__ import annotations

import math

from minigpt.common.arguments import kind_name, tensor_type, what_it_is
from minigpt.common.text import number_text
from minigpt.errors import UsageError


def expect(value, kinds: type | tuple, where, name: str):
    """`value` when it is one of `kinds` (true/false is never taken for a number), else one line."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if float in kinds and type(value) is int:
        return value
    tensor = tensor_type()
    if type(value) not in kinds and not (tensor is not None and tensor in kinds and isinstance(value, tensor)):
        wanted = " or ".join(kind_name(kind) for kind in kinds)
        raise UsageError(f"{where}: {name} should be {wanted}, and it is {what_it_is(value)}")
    return value


def entry(table: dict, key: str, kinds: type | tuple, where, name: str | None = None):
    """`table[key]`, which must be there and be one of `kinds`."""
    name = name or f"'{key}'"
    if key not in table:
        raise UsageError(f"{where}: {name} is missing")
    return expect(table[key], kinds, where, name)


def whole_number(value, where, name: str, least: int = 0, most: int = 2**63 - 1) -> int:
    """A whole number from `least` to `most` (a count, a step, an id)."""
    expect(value, int, where, name)
    if not least <= value <= most:
        raise UsageError(f"{where}: {name} should be from {least:,} to {most:,}, and it is {number_text(value)}")
    return value


def finite_number(value, where, name: str) -> float:
    """A finite number (whole or not)."""
    expect(value, float, where, name)
    if not math.isfinite(value):
        raise UsageError(f"{where}: {name} should be a finite number, and it is {value}")
    return value


def tensors(value, where, name: str) -> dict:
    """A table of tensors under text names."""
    expect(value, dict, where, name)
    for key, tensor in value.items():
        expect(key, str, where, f"a name in {name}")
        expect(tensor, tensor_type(), where, f"{name}[{key!r}]")
    return value
