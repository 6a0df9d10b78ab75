"""JSON that is always JSON: what minigpt prints with --json and writes for other programs.

Python's json writes a float that is not finite as NaN or Infinity, which no other JSON reader
accepts. A loss can be nan (a run that diverged, a damaged file), so every document minigpt
hands out goes through `dumps`, which writes such a number as null: unknown.
"""

from __future__ import annotations

import json
import math


def finite(value):
    """`value` with every float that is not finite replaced by None, through dicts, lists and tuples."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value, **options) -> str:
    return json.dumps(finite(value), allow_nan=False, **options)
