"""JSON that is always JSON: what minigpt prints with --json and writes for other programs.

Python's json writes a float that is not finite as NaN or Infinity, which no other JSON reader
accepts. A loss can be nan (a run that diverged, a damaged file), so every document minigpt
hands out goes through `dumps`, which writes such a number as null: unknown. A path whose name
is not UTF-8 holds lone surrogates, which JSON readers refuse too: written as \\xNN escapes.
"""

from __future__ import annotations

import json
import math

from minigpt.common.text import as_text


def readable(value):
    """`value` with every float that is not finite replaced by None and every string made text
    (`as_text`), through dicts, lists and tuples."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return as_text(value)
    if isinstance(value, dict):
        return {as_text(key): readable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(item) for item in value]
    return value


def dumps(value, **options) -> str:
    return json.dumps(readable(value), allow_nan=False, **options)


def streamed_list(key: str, items):
    """`{"key": [item, ...]}` as pieces of text, a batch of items at a time (`items` yields lists):
    ten million names are written as they come, never held."""
    opening = "{" + dumps(key) + ": ["
    for batch in items:
        if batch:
            yield opening + ", ".join(dumps(item) for item in batch)
            opening = ", "
    yield ("" if opening == ", " else opening) + "]}"
