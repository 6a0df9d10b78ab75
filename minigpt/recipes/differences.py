"""How recipes differ: a Config flat ("section.key" -> value), and the keys whose values are not
all equal across several (what `minigpt compare` and `train --json` show)."""

from __future__ import annotations

import json

from minigpt.recipes.loading import NOT_SETTABLE


def flat_config(config) -> dict:
    """A Config as "section.key" -> value, without the vocabulary size, which comes from the data."""
    return {f"{section}.{key}": value for section, values in config.to_dict().items() for key, value in values.items()
            if (section, key) not in NOT_SETTABLE}


def recipe_differences(recipes: list[dict]) -> dict[str, list]:
    """The keys of flat recipes ("section.key" -> value) whose values are not all equal, with each recipe's value."""
    keys = sorted({key for recipe in recipes for key in recipe})
    return {key: [recipe.get(key) for recipe in recipes] for key in keys
            if len({json.dumps(recipe.get(key)) for recipe in recipes}) > 1}
