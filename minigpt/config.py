"""Recipes: a model, a training run and sampling defaults, read from TOML and `--set` overrides.

A config file has three sections, each optional, each key validated:

    [model]   n_layer, n_head, n_embd, block_size, dropout, init_std, activation, ...
    [train]   steps, batch_size, lr, lr_schedule, warmup_steps, weight_decay, seed, ...
    [sample]  temperature, top_k, top_p

Every key is described once, where it is declared below; `keys_markdown()` turns those
descriptions into docs/configuration.md. The defaults are the recommended recipe and
equal `configs/default.toml`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import struct
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from minigpt.bundled import config_dir, recipe_names
from minigpt.errors import UsageError
from minigpt.formats.bounded import read_bytes
from minigpt.formats.sniffing import NOT_NAMES, identify, wrong_kind


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


def setting(default, about: str, *ranges: Range, choices: tuple[str, ...] = ()):
    """A config key: its default, its description (docs/configuration.md lists them) and the values it may take,
    written here once."""
    return field(default=default, metadata={"about": about, "ranges": ranges, "choices": choices})


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


@dataclass
class GPTConfig:
    """The model's shape. `vocab_size` comes from the data, not from a config file."""

    n_layer: int = setting(4, "transformer blocks", POSITIVE)
    n_head: int = setting(4, "attention heads per block", POSITIVE)
    n_embd: int = setting(64, "width of the residual stream; each head gets n_embd / n_head of it", POSITIVE)
    block_size: int = setting(16, "positions the model reads: the boundary token and up to block_size - 1 characters "
                              "(longer names are cut, and training says how many; train.auto_scale raises it to "
                              "fit the longest training name)", POSITIVE)
    dropout: float = setting(0.1, "on the attention and MLP outputs, before they join the residual stream", A_FRACTION)
    attn_dropout: float = setting(0.0, "on the attention weights", A_FRACTION)
    init_std: float = setting(0.02, "every matrix starts from N(0, init_std)", POSITIVE)
    zero_init_out: bool = setting(False, "attn_wo and mlp_fc2 start at zero (as in microgpt): each block starts as the identity")
    activation: str = setting("relu", '"relu" (as microgpt) or "gelu"', choices=("relu", "gelu"))
    final_norm: bool = setting(True, "an RMSNorm before lm_head (microgpt has none)")
    norm_scale: bool = setting(False, "learned RMSNorm gains (microgpt has none)")
    norm_eps: float = setting(1e-5, "added to the mean square in RMSNorm", POSITIVE)
    vocab_size: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass
class TrainConfig:
    steps: int = setting(800, "optimizer steps (unless time_limit is set)", POSITIVE)
    batch_size: int = setting(256, "names per step", POSITIVE, from_to(1, MAX_BATCH_SIZE))
    optimizer: str = setting("muon", '"muon" (Muon for the hidden matrices, AdamW for the rest; see optimizer.py), '
                                 '"adamw" or "adam"', choices=("adam", "adamw", "muon"))
    lr: float = setting(3e-3, "peak learning rate of AdamW (or Adam)", POSITIVE)
    muon_lr: float = setting(0.01, "with muon: the hidden matrices' peak learning rate (one schedule scales both)",
                             POSITIVE)
    muon_momentum: float = setting(0.95, "with muon: its momentum", A_FRACTION)
    lr_schedule: str = setting("cosine", '"cosine" (to min_lr), "linear" (to 0) or "constant", after the warmup',
                                choices=("constant", "linear", "cosine"))
    warmup_steps: int = setting(100, "steps of linear warmup from 0", NOT_NEGATIVE)
    min_lr: float = setting(1e-4, "where the cosine schedule ends", NOT_NEGATIVE)
    weight_decay: float = setting(0.1, "AdamW's decoupled weight decay, on matrices only", NOT_NEGATIVE)
    beta1: float = setting(0.9, "Adam's first-moment decay", A_FRACTION)
    beta2: float = setting(0.99, "Adam's second-moment decay", A_FRACTION)
    eps: float = setting(1e-8, "Adam's epsilon", POSITIVE)
    grad_clip: float = setting(1.0, "clip the gradients' global norm to this; 0 turns clipping off", NOT_NEGATIVE)
    shuffle: str = setting("epoch", '"epoch" (a new order every pass) or "once" (microgpt)', choices=("epoch", "once"))
    length_window: int = setting(32, "batches whose names are grouped by length (less padding); 1 = no grouping",
                                 POSITIVE)
    pack_names: bool = setting(False, "several short names a row: the same losses and gradients, in fewer and longer "
                                      "rows (docs/speed.md measures when that is faster)")
    seed: int = setting(1337, "seeds the weights, the batch order and dropout", SEED)
    split_seed: int = setting(1337, "seeds which names are held out for validation, apart from train.seed: runs with "
                                "different seeds are scored on the same names", SEED)
    device: str = setting("auto", '"auto" (CUDA when there is one, else the CPU), "cpu", "cuda", "cuda:N" or "mps"')
    compile: bool = setting(False, "torch.compile the training step's model (needs a C++ compiler; see docs/speed.md)")
    precision: str = setting("auto", '"auto" (bfloat16 autocast on GPUs that have it, else float32), "float32" or "bfloat16"',
                             choices=("auto", "float32", "bfloat16"))
    eval_interval: int = setting(250, "steps between evaluations, each writing last.pt (and best.pt when better)",
                                 POSITIVE)
    auto_scale: bool = setting(True, "on a file of under 20,000 training names, adapt batch, steps, evaluations and "
                                 "dropout (SMALL_DATA_RECIPE) for each key not given with --set")
    patience: int = setting(4, "stop after this many evaluations without a better validation loss; 0 never stops early",
                            NOT_NEGATIVE)
    keep_best: bool = setting(True, "the run ends on its best weights (by validation loss), not its last")
    log_interval: int = setting(10, "steps per line of metrics.jsonl (and per read of the loss from the device)",
                                POSITIVE)
    time_limit: float = setting(0.0, "seconds; when set, train until then, with the schedule laid over the time",
                                NOT_NEGATIVE)
    val_fraction: float = setting(0.1, "share of --data held out for validation (when no --val-data)", A_FRACTION)
    val_max: int = setting(1000, "at most this many held-out names", POSITIVE)
    snapshots: int = setting(16, "weights kept at steps spaced evenly in log(step + warmup_steps), in RUN/snapshots.pt, to watch attention "
                             "form in the explorer page; 0 keeps none, at most 256", from_to(0, MAX_SNAPSHOTS))


@dataclass
class SampleConfig:
    temperature: float = setting(1.0, "below 1: safer names; above 1: wilder; 0 always takes the likeliest character", NOT_NEGATIVE)
    top_k: int = setting(0, "sample only from the k likeliest characters; 0 keeps every one", NOT_NEGATIVE)
    top_p: float = setting(1.0, "sample from the likeliest characters up to this probability mass", UP_TO_ONE)


NOT_SETTABLE = {("model", "vocab_size")}
# far beyond any model of names (the recipes have 200k to 300k parameters); a stored config past it
# is refused before anything is allocated, so a small crafted file cannot claim gigabytes
MAX_PARAMETERS = 100_000_000


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


@dataclass
class Config:
    model: GPTConfig = field(default_factory=GPTConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self):
        self.given: set[str] = set()  # "section.key" set on the command line: auto_scale leaves these alone
        self.notes: list[str] = []  # what was changed because of them, for the start panel

    def to_dict(self) -> dict:
        return {section: dataclasses.asdict(getattr(self, section)) for section in ("model", "train", "sample")}

    def to_toml(self) -> str:
        """The whole recipe as a TOML file that `--config` reads back (a run's config.toml)."""
        lines = []
        for section, values in self.to_dict().items():
            lines.append(f"[{section}]")
            lines += [f"{key} = {toml_value(value)}" for key, value in values.items() if (section, key) not in NOT_SETTABLE]
            lines.append("")
        return "\n".join(lines)


def resolve_config_path(name: str | Path) -> Path:
    """A path to a TOML file, or the bare name of a bundled recipe ("microgpt")."""
    path = Path(name)
    if not path.exists() and path.suffix == "" and (config_dir() / f"{name}.toml").exists():
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
        raise UsageError(f"--set expects section.key=value, got '{item}'")
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    return section, key.strip(), value


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
        raise UsageError(
            f"{where}: {section}.{key} must be {expected.__name__}, got {type(value).__name__} {value!r}"
        )
    if expected is float and not math.isfinite(value):
        raise UsageError(f"{where}: {section}.{key} must be a finite number, got {value}")
    setattr(part, key, value)


def parameter_count(m: GPTConfig) -> int:
    """The parameters of a model of this shape, by arithmetic (nothing is built)."""
    c = m.n_embd
    per_layer = 12 * c * c + (2 * c if m.norm_scale else 0)  # attention 4 C^2, MLP 8 C^2, the gains
    final = c if m.final_norm and m.norm_scale else 0
    return (2 * m.vocab_size + m.block_size) * c + m.n_layer * per_layer + final


def check_model_size(m: GPTConfig, where: str | None = None) -> None:
    if parameter_count(m) > MAX_PARAMETERS:
        shape = f"n_layer {m.n_layer:,}, n_embd {m.n_embd:,}, block_size {m.block_size:,}, vocab_size {m.vocab_size:,}"
        raise UsageError(f"{where + ': ' if where else ''}a model of {shape} would have {parameter_count(m):,} "
                         f"parameters; minigpt builds at most {MAX_PARAMETERS:,}")


def check_64_bits(value, name: str) -> None:
    """A whole number past 64 bits (a recipe key or a command's option) can mean nothing: one line says so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise UsageError(f"{name} must be at most {LARGEST_INTEGER:,} (64 bits), got {value}")


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
        part = getattr(config, section)
        for f in dataclasses.fields(part):
            value, name = getattr(part, f.name), f"{section}.{f.name}"
            if isinstance(value, float) and not math.isfinite(value):  # nan and inf pass every comparison
                raise UsageError(f"{name} must be a finite number, got {value}")
            if f.metadata.get("choices") and value not in f.metadata["choices"]:
                raise UsageError(f"{name} must be one of {', '.join(f.metadata['choices'])}, got '{value}'")
            for allowed in f.metadata.get("ranges", ()):
                check(value, allowed, name)
            check_64_bits(value, name)  # after the ranges, which name narrower bounds
    if m.n_embd % m.n_head:
        raise UsageError(f"model.n_embd ({m.n_embd}) must be divisible by model.n_head ({m.n_head})")
    if t.min_lr > t.lr:
        raise UsageError(f"train.min_lr ({t.min_lr}) must not exceed train.lr ({t.lr})")
    check_model_size(m)


def load_config(path: str | Path | None = None, overrides: list[str] = (), base: Config | None = None) -> Config:
    """The defaults (or `base`), then the TOML file at `path`, then `section.key=value` overrides."""
    config = copy.deepcopy(base) if base is not None else Config()
    if path is not None:
        path = resolve_config_path(path)
        try:
            # a byte-order mark (an editor's) is not part of the recipe, nor NUL padding at its end
            table = tomllib.loads(read_bytes(path, "recipe").rstrip(b"\0").decode("utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"{path}: not valid TOML: {e}") from None
        for section, values in table.items():
            if not isinstance(values, dict):
                raise UsageError(f"{path}: '{section}' must be a [section], one of model, train, sample")
            for key, value in values.items():
                set_value(config, section, key, value, where=str(path))
    for item in overrides:
        section, key, value = parse_override(item)
        set_value(config, section, key, value, where="--set")
        config.given.add(f"{section}.{key}")
    steps_or_time_limit(config)
    validate(config)
    return config


def steps_or_time_limit(config: Config) -> None:
    """Steps given on the command line win over a recipe's time limit; both given is an error."""
    t, given = config.train, config.given
    if "train.steps" not in given or t.time_limit <= 0:
        return
    if "train.time_limit" in given:
        raise UsageError(f"--steps ({t.steps:,}) and --time-limit ({t.time_limit:g} s) both say how long to train; "
                         f"give one of them")
    config.notes.append(f"train.steps {t.steps:,} was given, so the recipe's time limit of {t.time_limit:g} s is off")
    t.time_limit = 0.0


# keys that came later, and the value that keeps a checkpoint written before them training as it did
LATER_KEYS = {("train", "auto_scale"): False, ("train", "patience"): 0, ("train", "snapshots"): 0}


def config_from_dict(data, where: str = "the stored recipe") -> Config:
    """Rebuild a Config saved with `Config.to_dict()` (as in a checkpoint), checked as a TOML recipe is.

    A stored file may come from anyone: every key is type-checked and the whole validated,
    the model's size included (with the stored vocab_size, when there is one), before
    anything is built. Keys this version does not know are skipped.
    """
    if not isinstance(data, dict) or not all(isinstance(values, dict) for values in data.values()):
        raise UsageError(f"{where}: the recipe is not a table of sections")
    config = Config()
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
        validate(config)
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None
    return config


def default_config_path() -> Path:
    """The bundled default recipe, which the dataclass defaults above equal."""
    return config_dir() / "default.toml"


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
