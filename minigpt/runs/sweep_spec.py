"""A study's description, read from TOML and checked before any trial runs.

    [sweep]
    config = "default"      # the recipe the study starts from (a name in configs/ or a path)
    trials = 8              # finished trials the study runs to
    seeds = 2               # runs of each configuration, seeds train.seed, train.seed + 1, ...
    steps = 400             # or time_limit = 60: each run's budget
    prune_after = 100       # no trial is pruned at or before this step [default: the recipe's warm-up]
    [space]
    "model.dropout" = {low = 0.0, high = 0.4}
    "train.lr" = {low = 1e-3, high = 1e-2, log = true}
    "model.n_layer" = {low = 2, high = 6}          # a whole-number key is sampled whole
    "model.activation" = {choices = ["relu", "gelu"]}
    [set]
    "train.eval_interval" = 100                   # fixed for every trial

Every key and every range end is checked as a `--set` would be, so a misspelt key or a value no
run could take is one line before the first trial, not a failure in the fifth.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from minigpt.common.arguments import quoted, whole_number_within
from minigpt.config import LARGEST_INTEGER, Config
from minigpt.errors import UsageError
from minigpt.files.bounded import read_bytes
from minigpt.formats.recipes import NOT_SETTABLE, load_config, toml_value

SWEEP_KEYS = {"config", "trials", "seeds", "steps", "time_limit", "prune", "prune_after", "name"}
BUDGET_KEYS = ("train.steps", "train.time_limit")  # [sweep] steps and time_limit set them for every run
# a study is a few dozen trials of a few seeds: these bounds only keep a typo from running for ever
MOST_TRIALS, MOST_SEEDS, LONGEST_NAME = 100_000, 1_000, 200


@dataclass
class Dimension:
    """One key of the search space: a range (`low`, `high`, on a log scale with `log`) or `choices`."""

    key: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    choices: list | None = None
    whole: bool = False  # the key is a whole number: sampled as one

    def suggest(self, trial):
        if self.choices is not None:
            return trial.suggest_categorical(self.key, self.choices)
        if self.whole:
            return trial.suggest_int(self.key, self.low, self.high, log=self.log)
        return trial.suggest_float(self.key, self.low, self.high, log=self.log)


@dataclass
class SweepSpec:
    path: Path
    text: str  # the file as read: a resumed study must be the same study
    config: str = "default"
    trials: int = 8
    seeds: int = 1
    steps: int | None = None
    time_limit: float | None = None
    prune: bool = True
    prune_after: int | None = None  # steps; None: the recipe's warm-up
    name: str = ""
    space: list[Dimension] = field(default_factory=list)
    fixed: dict = field(default_factory=dict)

    def overrides(self, values: dict, seed: int) -> list[str]:
        """`--set` strings for one run: the fixed keys, the budget, the trial's values and the seed."""
        budget = (
            {"train.steps": self.steps}
            if self.steps
            else {"train.time_limit": float(self.time_limit)}
            if self.time_limit
            else {}
        )
        chosen = {**self.fixed, **budget, **values, "train.seed": seed}
        return [f"{key}={toml_value(value)}" for key, value in chosen.items()]

    def recipe(self, values: dict, seed: int) -> Config:
        try:
            return load_config(self.config, self.overrides(values, seed))
        except UsageError as e:
            raise UsageError(f"{self.path}: {str(e).removeprefix('--set: ')}") from None

    @property
    def base_seed(self) -> int:
        return load_config(self.config).train.seed

    @property
    def first_prune_step(self) -> int:
        """The first step at which a trial may be pruned: after `prune_after`, or after the recipe's warm-up (its
        [set] value, or the longest [space] allows), when a trial's loss says little about where it will end."""
        if self.prune_after is not None:
            return self.prune_after + 1
        searched = {d.key: d for d in self.space}.get("train.warmup_steps")
        warmup = self.fixed.get("train.warmup_steps", load_config(self.config).train.warmup_steps)
        if searched is not None:
            warmup = max(searched.choices) if searched.choices is not None else searched.high
        return int(warmup) + 1


def read_spec(path: str | Path) -> SweepSpec:
    """The spec at `path`, every key checked; refused in one line naming the file and what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"sweep spec not found: {path} (a TOML file with [sweep], [space] and [set])")
    text = read_bytes(path, "recipe").decode("utf-8-sig", errors="replace")
    table = parsed(path, text)
    head, fixed, space = table.get("sweep", {}), table.get("set", {}), table.get("space", {})
    if set(head) - SWEEP_KEYS:
        raise UsageError(
            f"{path}: unknown [sweep] key {quoted(sorted(set(head) - SWEEP_KEYS)[0])} "
            f"(known: {', '.join(sorted(SWEEP_KEYS))})"
        )
    spec = SweepSpec(path, text, **{k: v for k, v in head.items()})
    check_head(spec)
    spec.name = spec.name or "minigpt-" + hashlib.sha256(text.encode()).hexdigest()[:12]
    refuse_contradictions(spec, fixed, space)
    spec.fixed = {key: checked_value(spec, key, value) for key, value in fixed.items()}
    spec.space = [dimension(spec, key, value) for key, value in space.items()]
    if not spec.space:
        raise UsageError(f"{path}: [space] names no key to search over")
    return spec


def parsed(path: Path, text: str) -> dict:
    """The spec's TOML as tables: [sweep], [space] and [set], each a table if there."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply to be a sweep spec") from None
    unknown = set(table) - {"sweep", "space", "set"}
    if unknown:
        raise UsageError(
            f"{path}: unknown section [{quoted(sorted(unknown)[0])}] (a spec has [sweep], [space] and [set])"
        )
    for section, value in table.items():
        if not isinstance(value, dict):
            raise UsageError(f"{path}: {section} is a section, [{section}], not {quoted(value)}")
    return table


def refuse_contradictions(spec: SweepSpec, fixed: dict, space: dict) -> None:
    """A key fixed in [set] and searched in [space], or a run's budget given twice, is refused: the later
    one would win without a word."""
    both = sorted(set(fixed) & set(space))
    if both:
        raise UsageError(f"{spec.path}: {quoted(both[0])} is both fixed in [set] and searched in [space]; keep one")
    if "model.causal" in space or fixed.get("model.causal") is False:  # its loss would win every comparison
        raise UsageError(
            f"{spec.path}: a study cannot train without the causal mask (model.causal): such a model "
            f"reads each character it is to predict, so its loss measures no prediction and would "
            f"win every comparison"
        )
    budget = "steps" if spec.steps is not None else "time_limit" if spec.time_limit is not None else None
    for key in BUDGET_KEYS:
        where = "[set]" if key in fixed else "[space]" if key in space else None
        if budget and where:
            raise UsageError(f"{spec.path}: {where} {key} and [sweep] {budget} both give each run's budget; keep one")


def check_head(spec: SweepSpec) -> None:
    where = f"{spec.path}: [sweep]"
    whole_number_within(spec.trials, f"{where} trials", 1, MOST_TRIALS)
    whole_number_within(spec.seeds, f"{where} seeds", 1, MOST_SEEDS)
    if spec.steps is not None:
        whole_number_within(spec.steps, f"{where} steps", 1, LARGEST_INTEGER)
    if spec.prune_after is not None and (
        type(spec.prune_after) is not int or not 0 <= spec.prune_after < LARGEST_INTEGER
    ):
        raise UsageError(
            f"{where} prune_after must be a whole number of steps, 0 or more, got {quoted(spec.prune_after)}"
        )
    if spec.time_limit is not None and (type(spec.time_limit) not in (int, float) or not 0 < spec.time_limit < 1e9):
        raise UsageError(f"{where} time_limit must be a number of seconds above 0, got {quoted(spec.time_limit)}")
    if spec.steps is not None and spec.time_limit is not None:
        raise UsageError(f"{where} gives both steps and time_limit; give one budget a run")
    if type(spec.prune) is not bool or not isinstance(spec.config, str) or not isinstance(spec.name, str):
        raise UsageError(f"{where}: prune is true or false, config and name are strings")
    if len(spec.name) > LONGEST_NAME or not spec.name.isprintable():
        raise UsageError(f"{where} name is at most {LONGEST_NAME} printable characters, got {quoted(spec.name)}")
    load_config(spec.config)  # a recipe that is not there is said before anything runs


def key_type(key: str, where: str):
    """The type of a recipe key, or one line saying there is no such key."""
    section, _, name = key.partition(".")
    part = getattr(Config(), section, None) if section in ("model", "train", "sample") else None
    names = {f.name for f in dataclasses.fields(part)} if part is not None else set()
    if name not in names or (section, name) in NOT_SETTABLE or key == "train.seed":
        why = " (each trial's seeds come from [sweep] seeds)" if key == "train.seed" else ""
        raise UsageError(f"{where}: {quoted(key)} is not a recipe key one can set{why}; see docs/configuration.md")
    return type(getattr(part, name))


def checked_value(spec: SweepSpec, key: str, value):
    """A fixed or sampled value, checked as `--set key=value` would be, on top of the spec's recipe."""
    key_type(key, f"{spec.path}: [set]")
    spec.recipe({key: value}, spec.base_seed)
    return value


def dimension(spec: SweepSpec, key: str, table) -> Dimension:
    where = f"{spec.path}: [space] {key}"
    kind = key_type(key, f"{spec.path}: [space]")
    if not isinstance(table, dict) or not (set(table) <= {"low", "high", "log", "choices"}):
        raise UsageError(
            f"{where} must be {{low = ..., high = ...}} (log = true for a log scale) or {{choices = [...]}}"
        )
    if "choices" in table:
        if set(table) != {"choices"} or not isinstance(table["choices"], list) or not table["choices"]:
            raise UsageError(f"{where}: choices is a non-empty list, alone")
        for value in table["choices"]:
            checked_value(spec, key, value)
        return Dimension(key, choices=table["choices"])
    if kind not in (int, float) or {"low", "high"} - set(table):
        raise UsageError(
            f"{where}: "
            + (
                "a range needs low and high"
                if kind in (int, float)
                else f"a {kind.__name__} key takes choices, not a range"
            )
        )
    low, high, log = table["low"], table["high"], table.get("log", False)
    if kind is int and (type(low) is not int or type(high) is not int):
        raise UsageError(
            f"{where} is a whole-number key: low and high must be whole numbers, got {quoted(low)} and {quoted(high)}"
        )
    if type(low) not in (int, float) or type(high) not in (int, float):
        raise UsageError(f"{where}: low and high are numbers, got {quoted(low)} and {quoted(high)}")
    if type(log) is not bool:
        raise UsageError(f"{where}: log is true or false, got {quoted(log)}")
    if not low < high or (log and low <= 0):
        raise UsageError(f"{where}: low must be below high (and above 0 on a log scale), got {low!r} to {high!r}")
    for value in (low, high):
        checked_value(spec, key, value)
    return Dimension(key, low, high, log, whole=kind is int)
