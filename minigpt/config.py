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
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from minigpt.bundled import config_dir, recipe_names
from minigpt.errors import UsageError
from minigpt.formats.bounded import read_bytes


def key(default, about: str):
    """A config key: its default, and its description, written here once (docs/configuration.md lists them)."""
    return field(default=default, metadata={"about": about})


@dataclass
class GPTConfig:
    """The model's shape. `vocab_size` comes from the data, not from a config file."""

    n_layer: int = key(4, "transformer blocks")
    n_head: int = key(4, "attention heads per block")
    n_embd: int = key(64, "width of the residual stream; each head gets n_embd / n_head of it")
    block_size: int = key(16, "positions the model reads: the boundary token and up to block_size - 1 characters "
                              "(longer names are cut, and training says how many)")
    dropout: float = key(0.1, "on the attention and MLP outputs, before they join the residual stream")
    attn_dropout: float = key(0.0, "on the attention weights")
    init_std: float = key(0.02, "every matrix starts from N(0, init_std)")
    zero_init_out: bool = key(False, "attn_wo and mlp_fc2 start at zero (as in microgpt): each block starts as the identity")
    activation: str = key("relu", '"relu" (as microgpt) or "gelu"')
    final_norm: bool = key(True, "an RMSNorm before lm_head (microgpt has none)")
    norm_scale: bool = key(False, "learned RMSNorm gains (microgpt has none)")
    norm_eps: float = key(1e-5, "added to the mean square in RMSNorm")
    vocab_size: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass
class TrainConfig:
    steps: int = key(800, "optimizer steps (unless time_limit is set)")
    batch_size: int = key(256, "names per step")
    optimizer: str = key("muon", '"muon" (Muon for the hidden matrices, AdamW for the rest; see optimizer.py), '
                                 '"adamw" or "adam"')
    lr: float = key(3e-3, "peak learning rate of AdamW (or Adam)")
    muon_lr: float = key(0.01, "with muon: the hidden matrices' peak learning rate (one schedule scales both)")
    muon_momentum: float = key(0.95, "with muon: its momentum")
    lr_schedule: str = key("cosine", '"cosine" (to min_lr), "linear" (to 0) or "constant", after the warmup')
    warmup_steps: int = key(100, "steps of linear warmup from 0")
    min_lr: float = key(1e-4, "where the cosine schedule ends")
    weight_decay: float = key(0.1, "AdamW's decoupled weight decay, on matrices only")
    beta1: float = key(0.9, "Adam's first-moment decay")
    beta2: float = key(0.99, "Adam's second-moment decay")
    eps: float = key(1e-8, "Adam's epsilon")
    grad_clip: float = key(1.0, "clip the gradients' global norm to this; 0 turns clipping off")
    shuffle: str = key("epoch", '"epoch" (a new order every pass) or "once" (microgpt)')
    length_window: int = key(32, "batches whose names are grouped by length (less padding); 1 = no grouping")
    seed: int = key(1337, "seeds the weights, the batch order and dropout")
    split_seed: int = key(1337, "seeds which names are held out for validation, apart from train.seed: runs with "
                                "different seeds are scored on the same names")
    device: str = key("auto", '"auto" (CUDA when there is one, else the CPU), "cpu", "cuda", "cuda:N" or "mps"')
    compile: bool = key(False, "torch.compile the training step's model (needs a C++ compiler; see docs/speed.md)")
    precision: str = key("auto", '"auto" (bfloat16 autocast on GPUs that have it, else float32), "float32" or "bfloat16"')
    eval_interval: int = key(250, "steps between evaluations, each writing last.pt (and best.pt when better)")
    auto_scale: bool = key(True, "on a file of under 20,000 training names, adapt batch, steps, evaluations and "
                                 "dropout (SMALL_DATA_RECIPE) for each key not given with --set")
    patience: int = key(4, "stop after this many evaluations without a better validation loss; 0 never stops early")
    keep_best: bool = key(True, "the run ends on its best weights (by validation loss), not its last")
    log_interval: int = key(10, "steps per line of metrics.jsonl (and per read of the loss from the device)")
    time_limit: float = key(0.0, "seconds; when set, train until then, with the schedule laid over the time")
    val_fraction: float = key(0.1, "share of --data held out for validation (when no --val-data)")
    val_max: int = key(1000, "at most this many held-out names")
    snapshots: int = key(16, "weights kept at steps spaced evenly in log(step), in RUN/snapshots.pt, to watch attention "
                             "form in the explorer page; 0 keeps none, at most 256")


@dataclass
class SampleConfig:
    temperature: float = key(1.0, "below 1: safer names; above 1: wilder")
    top_k: int = key(0, "sample only from the k likeliest characters; 0 keeps every one")
    top_p: float = key(1.0, "sample from the likeliest characters up to this probability mass")


NOT_SETTABLE = {("model", "vocab_size")}
# far beyond any model of names (the recipes have 200k to 300k parameters); a stored config past it
# is refused before anything is allocated, so a small crafted file cannot claim gigabytes
MAX_PARAMETERS = 100_000_000
MAX_SNAPSHOTS = 256  # a run's snapshots, each a copy of the weights: the explorer's slider, not a history


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


CHOICES = {
    ("model", "activation"): ("relu", "gelu"),
    ("train", "optimizer"): ("adam", "adamw", "muon"),
    ("train", "lr_schedule"): ("constant", "linear", "cosine"),
    ("train", "shuffle"): ("epoch", "once"),
    ("train", "precision"): ("auto", "float32", "bfloat16"),
}


def resolve_config_path(name: str | Path) -> Path:
    """A path to a TOML file, or the bare name of a bundled recipe ("microgpt")."""
    path = Path(name)
    if not path.exists() and path.suffix == "" and (config_dir() / f"{name}.toml").exists():
        path = config_dir() / f"{name}.toml"
    if not path.exists():
        raise UsageError(f"config file not found: {name} (bundled recipes: {', '.join(recipe_names())})")
    if path.is_dir():
        raise UsageError(f"config path is a directory, not a TOML file: {name}")
    return path


def parse_override(item: str) -> tuple[str, str, object]:
    """`model.dropout=0` -> ("model", "dropout", 0); the value is read as TOML, else as a string."""
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


LARGEST_INTEGER = 2**63 - 1  # every whole-number key: what a checkpoint and torch hold
SEEDS = LARGEST_INTEGER + 1  # a seed is a whole number from 0 up to LARGEST_INTEGER: what torch's generators take
MAX_BATCH_SIZE = 65_536  # names a step: past this one step's activations outgrow any machine's memory


def check_64_bits(value, name: str) -> None:
    """A whole number past 64 bits (a recipe key or a command's option) can mean nothing: one line says so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise UsageError(f"{name} must be at most {LARGEST_INTEGER:,} (64 bits), got {value}")


def check_seed(seed: int | None, name: str) -> None:
    if seed is not None and not 0 <= seed < SEEDS:
        raise UsageError(f"{name} must be a whole number from 0 to {SEEDS - 1:,}, got {seed}")


def check_sampling(temperature: float, top_k: int | None, top_p: float, name=lambda key: f"sample.{key}") -> None:
    """The sampling options' ranges, for a recipe's [sample] keys and for sample's options alike.

    top_k None keeps every token (a recipe says 0); `name` spells a key as the user wrote it.
    """
    if not math.isfinite(temperature) or temperature <= 0:
        raise UsageError(f"{name('temperature')} must be positive, got {temperature}")
    if top_k is not None and top_k < 1:
        raise UsageError(f"{name('top_k')} must be at least 1, got {top_k}")
    if not 0 < top_p <= 1:
        raise UsageError(f"{name('top_p')} must be in (0, 1], got {top_p}")


def validate(config: Config) -> None:
    """Range checks that a type check cannot make."""
    m, t, s = config.model, config.train, config.sample
    for section, values in config.to_dict().items():  # nan and inf pass every comparison below
        for key, value in values.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise UsageError(f"{section}.{key} must be a finite number, got {value}")
    for (section, key), allowed in CHOICES.items():
        value = getattr(getattr(config, section), key)
        if value not in allowed:
            raise UsageError(f"{section}.{key} must be one of {', '.join(allowed)}, got '{value}'")
    positive = {
        "model.n_layer": m.n_layer, "model.n_head": m.n_head, "model.n_embd": m.n_embd,
        "model.block_size": m.block_size, "model.init_std": m.init_std, "model.norm_eps": m.norm_eps,
        "train.steps": t.steps, "train.batch_size": t.batch_size, "train.lr": t.lr,
        "train.muon_lr": t.muon_lr, "train.eps": t.eps, "train.eval_interval": t.eval_interval, "train.val_max": t.val_max,
        "train.log_interval": t.log_interval, "train.length_window": t.length_window,
    }
    for name, value in positive.items():
        if value <= 0:
            raise UsageError(f"{name} must be positive, got {value}")
    non_negative = {
        "train.warmup_steps": t.warmup_steps, "train.min_lr": t.min_lr,
        "train.weight_decay": t.weight_decay, "train.grad_clip": t.grad_clip, "sample.top_k": s.top_k,
        "train.time_limit": t.time_limit, "train.patience": t.patience,
    }
    for name, value in non_negative.items():
        if value < 0:
            raise UsageError(f"{name} must not be negative, got {value}")
    if m.n_embd % m.n_head:
        raise UsageError(f"model.n_embd ({m.n_embd}) must be divisible by model.n_head ({m.n_head})")
    for name, value in (("model.dropout", m.dropout), ("model.attn_dropout", m.attn_dropout)):
        if not 0 <= value < 1:
            raise UsageError(f"{name} must be in [0, 1), got {value}")
    for name, value in (("train.beta1", t.beta1), ("train.beta2", t.beta2), ("train.muon_momentum", t.muon_momentum)):
        if not 0 <= value < 1:
            raise UsageError(f"{name} must be in [0, 1), got {value}")
    if not 0 <= t.val_fraction < 1:
        raise UsageError(f"train.val_fraction must be in [0, 1), got {t.val_fraction}")
    if t.min_lr > t.lr:
        raise UsageError(f"train.min_lr ({t.min_lr}) must not exceed train.lr ({t.lr})")
    if t.batch_size > MAX_BATCH_SIZE:
        raise UsageError(f"train.batch_size must be from 1 to {MAX_BATCH_SIZE:,}, got {t.batch_size:,}")
    if not 0 <= t.snapshots <= MAX_SNAPSHOTS:
        raise UsageError(f"train.snapshots must be from 0 to {MAX_SNAPSHOTS}, got {t.snapshots}")
    check_seed(t.seed, "train.seed")
    check_seed(t.split_seed, "train.split_seed")
    check_sampling(s.temperature, s.top_k or None, s.top_p)
    for section, values in config.to_dict().items():  # after the checks that name a narrower range
        for key, value in values.items():
            check_64_bits(value, f"{section}.{key}")
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


SMALL_DATA = 20_000  # training names below which train.auto_scale adapts the recipe
SMALL_DATA_RECIPE = {  # chosen by runs on the bundled names: docs/recipes.md
    "train.batch_size": 64,
    "train.steps": 2000,
    "train.eval_interval": 100,
    "model.dropout": 0.35,
    "model.attn_dropout": 0.1,
}


def shown(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def scale_to_data(config: Config, n_train: int) -> list[str]:
    """With train.auto_scale, adapt the recipe to a small names file; say what changed and why.

    A model that reads a few thousand names 256 at a time sees each one often before it
    learns much, and then learns them by heart: smaller batches (more steps per pass) and
    more dropout let it generalise first. Keys given on the command line are left alone,
    and the changed recipe is what config.toml and the checkpoints record.
    """
    if not config.train.auto_scale or n_train >= SMALL_DATA:
        return []
    changed = []
    for name, value in SMALL_DATA_RECIPE.items():
        section, key = name.split(".")
        part = getattr(config, section)
        if name in config.given or getattr(part, key) == value:
            continue
        changed.append(f"{key} {shown(value)} (was {shown(getattr(part, key))})")
        setattr(part, key, value)
    config.train.auto_scale = False  # done: a resumed run or a reread config.toml must not scale again
    if not changed:
        return []
    return [f"{n_train:,} training names is a small file (under {SMALL_DATA:,}), so train.auto_scale set "
            + ", ".join(changed)]


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
