"""A recipe read: the defaults, a TOML file (a bundled recipe by name, or a path), `--set` overrides,
or a checkpoint's stored recipe, each key checked before anything uses it; the bundled recipe that fits
the data; a recipe written back as TOML (a run's config.toml); the keys' table that
docs/configuration.md holds; and how recipes differ (what `minigpt compare` and `train --json` show)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path

from minigpt.common.arguments import as_strings, kind_of
from minigpt.common.bundled import config_dir, recipe_names
from minigpt.common.text import as_text, plural
from minigpt.config import Config, GPTConfig, SampleConfig, TrainConfig, check_recipe
from minigpt.errors import UsageError
from minigpt.files.bounded import read_bytes
from minigpt.files.sniffing import NOT_NAMES, identify, wrong_kind

NOT_SETTABLE = {("model", "vocab_size")}  # from the data, never from a recipe


@dataclasses.dataclass(eq=False)  # Config's equality: by every key
class Recipe(Config):
    """A Config as the command line read it, with what only the layers around the core read: where it
    came from, what the user set and why train.auto_scale changed what it did. The core trains the
    Config; a Recipe is one (runs/run.py makes one of a Config built in Python)."""

    def __post_init__(self):
        # "section.key" set on the command line: a recipe auto_scale picks keeps them
        self.given: set[str] = set()
        # "section.key" written in the recipe file the user named: no fitting changes them
        self.written: set[str] = set()
        self.notes: list[str] = []  # what was changed because of them, for the start panel
        # every change fitting made to the recipe as a run started: said even under --quiet
        self.changes: list[str] = []
        self.source: Path | None = None  # the recipe file it was read from (None: the defaults)
        # no recipe named: train.auto_scale picks the bundled one that fits the data
        self.fits_data = True
        self.why = ""  # why train.auto_scale chose the recipe it did

    def change(self, note: str) -> list[str]:
        """Record a change fitting made to the recipe (said under --quiet too, and in config.toml);
        the note, for the start panel's list."""
        self.changes.append(note)
        return [note]


def as_recipe(config: Config) -> Recipe:
    """A Recipe as it is; a Config built in Python as a Recipe of its very sections (what fitting changes
    in them, the caller's Config sees), with nothing given or written and auto_scale free to fit it."""
    if isinstance(config, Recipe):
        return config
    return Recipe(config.model, config.train, config.sample)


def resolve_config_path(name: str | Path) -> Path:
    """A path to a TOML file, or the bare name of a bundled recipe ("microgpt")."""
    path = Path(name)
    # a bare name is a bundled recipe unless a file of that name is here (a folder is never a recipe)
    if not path.is_file() and path.suffix == "" and (config_dir() / f"{name}.toml").exists():
        path = config_dir() / f"{name}.toml"
    if not path.exists():
        raise UsageError(f"config file not found: {name} (bundled recipes: {', '.join(recipe_names())})")
    if path.is_dir():
        raise UsageError(f"config path is a directory, not a TOML file: {name}")
    kind = identify(path, "recipe")
    if kind in NOT_NAMES and kind != "a recipe":  # text that is not TOML is said so when it is read
        raise UsageError(wrong_kind(path, kind, "a recipe"))
    return path


def parse_override(item: str) -> tuple[str, str, object]:
    """`model.dropout=0` -> ("model", "dropout", 0); the value is read as TOML, else as a string."""
    if "\n" in item or "\r" in item:  # a TOML value of its own would read only the first line: nothing is dropped
        raise UsageError(f"--set takes one section.key=value on one line, got a line break in {item!r}")
    name, sep, text = item.partition("=")
    section, dot, key = name.strip().partition(".")
    if not sep or not dot or not key:
        raise UsageError(f"--set expects section.key=value, got '{item}'{section_hint(name.strip(), text)}")
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    return section, key.strip(), value


def section_hint(key: str, text: str) -> str:
    """`dropout=0.1` names a key without its section: the key it means, where one section has it."""
    defaults = Config()
    sections = [
        name
        for name in ("model", "train", "sample")
        if key in {f.name for f in dataclasses.fields(getattr(defaults, name))}
    ]
    return f": did you mean {sections[0]}.{key}={text.strip()}?" if len(sections) == 1 else ""


def set_value(config: Config, section: str, key: str, value: object, where: str) -> None:
    """Set one key after checking that it exists and has the right type."""
    part = getattr(config, section, None) if section in ("model", "train", "sample") else None
    if part is None:
        raise UsageError(f"{where}: unknown section '{section}' (expected model, train or sample)")
    fields = {f.name: f for f in dataclasses.fields(part)}
    if key not in fields or (section, key) in NOT_SETTABLE:
        known = ", ".join(n for n in fields if (section, n) not in NOT_SETTABLE)
        raise UsageError(f"{where}: unknown key '{section}.{key}' (known: {known})")
    expected = type(getattr(part, key))
    if expected is float and type(value) is int:
        value = float(value)
    if type(value) is not expected:
        raise UsageError(f"{where}: {section}.{key} must be {expected.__name__}, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{where}: {section}.{key} must be a finite number, got {value}")
    setattr(part, key, value)


def load_config(path: str | Path | None = None, overrides: Sequence[str] = (), base: Config | None = None) -> Recipe:
    """The defaults (or `base`), then the TOML file at `path`, then `section.key=value` overrides."""
    if path is not None and not isinstance(path, (str, os.PathLike)):  # pathlib's TypeError named no argument
        raise UsageError(f"load_config takes a recipe's name or path (a string or a pathlib.Path), got {kind_of(path)}")
    if base is not None and not isinstance(base, Config):
        raise UsageError(f"load_config's base is a Config (another load_config's), got {type(base).__name__}")
    config = as_recipe(copy.deepcopy(base)) if base is not None else Recipe()
    overrides = as_strings(overrides, "the overrides (section.key=value)")
    if path is not None:
        path = resolve_config_path(path)
        config.source, config.fits_data = path, False
        try:
            # a byte-order mark (an editor's) is not part of the recipe, nor NUL padding at its end
            table = tomllib.loads(read_bytes(path, "recipe").rstrip(b"\0").decode("utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"{path}: not valid TOML: {e}") from None
        except RecursionError:  # tomllib reads nested tables and arrays by recursion
            raise UsageError(
                f"{path}: not a recipe: its tables or arrays nest deeper than Python reads "
                f"(a recipe is three sections of plain keys)"
            ) from None
        for section, values in table.items():
            if not isinstance(values, dict):
                raise UsageError(f"{path}: '{section}' must be a [section], one of model, train, sample")
            for key, value in values.items():
                set_value(config, section, key, value, where=str(path))
                config.written.add(f"{section}.{key}")
    for item in overrides:
        section, key, value = parse_override(item)
        set_value(config, section, key, value, where="--set")
        config.given.add(f"{section}.{key}")
    steps_or_time_limit(config)
    check_recipe(config)
    return config


# train.auto_scale, when no recipe is named: the bundled recipe for the data and the time limit (docs/recipes.md)
FEW_NAMES = 2_500  # training names below which configs/few.toml trains
SMALL_FILE = 20_000  # training names below which configs/small.toml trains
SPRINT = 15  # seconds of time limit at most for configs/sprint.toml, on a larger file
SHORT_RUN = 60  # seconds of time limit at most for configs/short.toml, on a larger file


def fitting_recipe(n_train: int, time_limit: float) -> tuple[str, str]:
    """The bundled recipe for a run on `n_train` names within `time_limit` seconds (0: by steps), and why."""
    names = plural(n_train, "training name")
    if n_train < FEW_NAMES:
        return "few", f"{names}, fewer than {FEW_NAMES:,}"
    if n_train < SMALL_FILE:
        return "small", f"{names}, fewer than {SMALL_FILE:,}"
    for name, most in (("sprint", SPRINT), ("short", SHORT_RUN)):
        if 0 < time_limit <= most:
            return name, f"a time limit of {time_limit:g} s, {most} s or less, on {names}"
    return "default", f"{names} and no time limit of {SHORT_RUN} s or less"


def fit_recipe_to_data(config: Recipe, n_train: int) -> list[str]:
    """With train.auto_scale and no recipe named, train on the bundled recipe that `fitting_recipe` picks, with
    every key given on the command line kept. Says which file and why, and which given keys change nothing."""
    if config.fits_data and config.train.auto_scale:
        name, config.why = fitting_recipe(n_train, config.train.time_limit)
        recipe = load_config(config_dir() / f"{name}.toml")  # the bundled file, whatever is in the current folder
        chosen = copy.deepcopy(recipe)
        for key in config.given:
            set_key(chosen, key, key_value(config, key))
        config.model, config.train, config.sample = chosen.model, chosen.train, chosen.sample
        config.source, config.fits_data = recipe.source, False
    else:
        recipe = load_config(config.source) if config.source is not None else Recipe()
    notes = [shown_path(config.source) + (f": {config.why}" if config.why else "")] if config.source else []
    if config.why:  # the recipe auto_scale chose is a change; one the user named is not
        config.change(notes[0])
    in_vain = sorted(key for key in config.given if key_value(config, key) == key_value(recipe, key))
    return notes + [
        f"{key} = {toml_value(key_value(config, key))} changes nothing: the recipe has it already" for key in in_vain
    ]


def key_value(config: Config, key: str):
    """The value of "section.key" in a Config."""
    section, name = key.split(".")
    return getattr(getattr(config, section), name)


def set_key(config: Config, key: str, value) -> None:
    section, name = key.split(".")
    setattr(getattr(config, section), name, value)


def shown_path(path: Path) -> str:
    """A recipe's path as a user would type it: relative to the current directory when it is below it."""
    try:
        return as_text(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return as_text(path)


def steps_or_time_limit(config: Recipe) -> None:
    """Steps given on the command line win over a recipe's time limit; both given is an error."""
    t, given = config.train, config.given
    if "train.steps" not in given or t.time_limit <= 0:
        return
    if "train.time_limit" in given:
        raise UsageError(
            f"--steps ({t.steps:,}) and --time-limit ({t.time_limit:g} s) both say how long to train; give one of them"
        )
    config.notes += config.change(
        f"train.steps {t.steps:,} was given, so the recipe's time limit of {t.time_limit:g} s is off"
    )
    t.time_limit = 0.0


# keys that came later, and the value that keeps a checkpoint written before them training as it did
LATER_KEYS = {("train", "auto_scale"): False, ("train", "patience"): 0, ("train", "snapshots"): 0}


def config_from_dict(data, where: str = "the stored recipe") -> Recipe:
    """Rebuild a Config saved with `Config.to_dict()` (as in a checkpoint), checked as a TOML recipe is.

    A stored file may come from anyone: every key is type-checked and the whole validated,
    the model's size included (with the stored vocab_size, when there is one), before
    anything is built. Keys this version does not know are skipped.
    """
    if not isinstance(data, dict) or not all(isinstance(values, dict) for values in data.values()):
        raise UsageError(f"{where}: the recipe is not a table of sections")
    config = Recipe()
    config.fits_data = False  # a stored recipe is the one its run trained on
    for (section, key), value in LATER_KEYS.items():
        if key not in data.get(section, {}):
            setattr(getattr(config, section), key, value)
    for section, values in data.items():
        part = getattr(config, section, None) if section in ("model", "train", "sample") else None
        for key, value in values.items():
            if (section, key) == ("model", "vocab_size"):
                if type(value) is not int or value < 0:
                    raise UsageError(f"{where}: model.vocab_size must be a non-negative int, got {value!r}")
                config.model.vocab_size = value
            elif part is not None and hasattr(part, key):
                set_value(config, section, key, value, where)
    if "split_seed" not in data.get("train", {}):  # written before split_seed: train.seed chose the split too
        config.train.split_seed = config.train.seed
    try:
        check_recipe(config)
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None
    return config


def keys_markdown() -> str:
    """Every key with its default and description, as the tables of docs/configuration.md."""
    out = []
    for section, part in (("model", GPTConfig), ("train", TrainConfig), ("sample", SampleConfig)):
        out += [f"## [{section}]", "", "| key | default | what it does |", "| --- | --- | --- |"]
        for f in dataclasses.fields(part):
            if "about" in f.metadata:
                out.append(f"| `{f.name}` | `{toml_value(f.default)}` | {f.metadata['about']} |")
        out.append("")
    return "\n".join(out)


DEFAULT_RECIPE_HEADER = """\
# The recommended recipe for names on a laptop CPU: makemore's model size, Muon for the
# hidden matrices and AdamW for the rest, warmup then cosine decay, dropout against
# overfitting, batches of 256 names; on a small file, train.auto_scale adapts it, and
# early stopping ends the run at its best.
# Made from the defaults minigpt/config.py declares, the one place each is written, by
# `python -m minigpt.formats.recipes` (which also writes docs/configuration.md's tables).

"""


def default_recipe_toml() -> str:
    """configs/default.toml: every key at its default, as config.py declares it."""
    return DEFAULT_RECIPE_HEADER + recipe_toml(Config())


def write_made_files(root: Path) -> list[Path]:
    """configs/default.toml and docs/configuration.md's tables, made again from config.py."""
    default, docs = root / "configs" / "default.toml", root / "docs" / "configuration.md"
    default.write_text(default_recipe_toml(), encoding="utf-8")
    text = docs.read_text(encoding="utf-8")
    docs.write_text(text[: text.index("## [model]")] + keys_markdown(), encoding="utf-8")
    return [default, docs]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def recipe_toml(config: Config) -> str:
    """The whole recipe as a TOML file that `--config` reads back (a run's config.toml)."""
    lines = []
    for section, values in config.to_dict().items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items() if (section, key) not in NOT_SETTABLE]
        lines.append("")
    return "\n".join(lines)


def flat_config(config) -> dict:
    """A Config as "section.key" -> value, without the vocabulary size, which comes from the data."""
    return {
        f"{section}.{key}": value
        for section, values in config.to_dict().items()
        for key, value in values.items()
        if (section, key) not in NOT_SETTABLE
    }


def recipe_differences(recipes: list[dict]) -> dict[str, list]:
    """The keys of flat recipes ("section.key" -> value) whose values are not all equal, with each recipe's value."""
    keys = sorted({key for recipe in recipes for key in recipe})
    return {
        key: [recipe.get(key) for recipe in recipes]
        for key in keys
        if len({json.dumps(recipe.get(key)) for recipe in recipes}) > 1
    }


if __name__ == "__main__":  # python -m minigpt.formats.recipes, from a clone: the files made from config.py
    for made in write_made_files(Path(__file__).resolve().parents[2]):
        print(f"wrote {made}")
