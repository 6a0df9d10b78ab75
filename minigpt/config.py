"""Recipes: a model, a training run and sampling defaults, read from TOML and `--set` overrides.

A config file has three sections, each optional, each key validated:

    [model]   n_layer, n_head, n_embd, block_size, dropout, init_std, activation, ...
    [train]   steps, batch_size, lr, lr_schedule, warmup_steps, weight_decay, seed, ...
    [sample]  temperature, top_k, top_p

The dataclass defaults are the recommended recipe and equal `configs/default.toml`.
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


@dataclass
class GPTConfig:
    """The model's shape. `vocab_size` comes from the data, not from a config file."""

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 16
    dropout: float = 0.1  # on the attention and MLP outputs, before they join the residual stream
    attn_dropout: float = 0.0  # on the attention weights
    init_std: float = 0.02
    zero_init_out: bool = False  # attn_wo and mlp_fc2 start at zero (as in microgpt): each block starts as the identity
    activation: str = "relu"  # "relu" (as microgpt) or "gelu"
    final_norm: bool = True  # RMSNorm before lm_head (microgpt has none)
    norm_scale: bool = False  # learned RMSNorm gains (microgpt has none)
    norm_eps: float = 1e-5
    vocab_size: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass
class TrainConfig:
    steps: int = 800
    batch_size: int = 256
    optimizer: str = "muon"  # "muon" (hidden matrices; AdamW for the rest, see optim.py), "adamw" or "adam"
    lr: float = 3e-3
    muon_lr: float = 0.01  # with optimizer "muon": the hidden matrices' peak learning rate (lr is AdamW's)
    muon_momentum: float = 0.95
    lr_schedule: str = "cosine"  # "constant", "linear" (to 0) or "cosine" (to min_lr)
    warmup_steps: int = 100
    min_lr: float = 1e-4
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    grad_clip: float = 1.0  # 0 turns clipping off
    shuffle: str = "epoch"  # "epoch" (new order every pass) or "once" (microgpt)
    length_window: int = 32  # batches whose names are grouped by length (less padding); 1 = no grouping
    seed: int = 1337
    device: str = "auto"
    compile: bool = False  # torch.compile the training step's model (CPU: ~35 s to compile, then ~20% faster)
    precision: str = "auto"  # "auto" (bfloat16 autocast on GPUs that have it, else float32), "float32", "bfloat16"
    eval_interval: int = 250
    auto_scale: bool = True  # on a small names file, adapt batch, length and regularisation (scale_to_data)
    patience: int = 4  # stop after this many evaluations without a better validation loss; 0 never stops early
    keep_best: bool = True  # the run ends on its best weights (by validation loss), not its last
    log_interval: int = 10  # steps per line of metrics.jsonl (and per read of the loss from the device)
    time_limit: float = 0.0  # seconds; when set, train until then, with the schedule laid over the time
    val_fraction: float = 0.1
    val_max: int = 1000


@dataclass
class SampleConfig:
    temperature: float = 1.0
    top_k: int = 0  # 0 keeps every token
    top_p: float = 1.0


@dataclass
class Config:
    model: GPTConfig = field(default_factory=GPTConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self):
        self.given: set[str] = set()  # "section.key" set on the command line: auto_scale leaves these alone

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


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


CHOICES = {
    ("model", "activation"): ("relu", "gelu"),
    ("train", "optimizer"): ("adam", "adamw", "muon"),
    ("train", "lr_schedule"): ("constant", "linear", "cosine"),
    ("train", "shuffle"): ("epoch", "once"),
    ("train", "precision"): ("auto", "float32", "bfloat16"),
}
NOT_SETTABLE = {("model", "vocab_size")}


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


def load_config(path: str | Path | None = None, overrides: list[str] = (), base: Config | None = None) -> Config:
    """The defaults (or `base`), then the TOML file at `path`, then `section.key=value` overrides."""
    config = copy.deepcopy(base) if base is not None else Config()
    if path is not None:
        path = resolve_config_path(path)
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
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
    validate(config)
    return config


# keys that came later, and the value that keeps a checkpoint written before them training as it did
LATER_KEYS = {("train", "auto_scale"): False, ("train", "patience"): 0}


def config_from_dict(data: dict) -> Config:
    """Rebuild a Config saved with `Config.to_dict()` (as in a checkpoint)."""
    config = Config()
    for (section, key), value in LATER_KEYS.items():
        if key not in data.get(section, {}):
            setattr(getattr(config, section), key, value)
    for section, values in data.items():
        for key, value in values.items():
            if hasattr(getattr(config, section, None), key):
                setattr(getattr(config, section), key, value)
    return config


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
        "sample.temperature": s.temperature,
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
    if not 0 < s.top_p <= 1:
        raise UsageError(f"sample.top_p must be in (0, 1], got {s.top_p}")


def default_config_path() -> Path:
    """The bundled default recipe, which the dataclass defaults above equal."""
    return config_dir() / "default.toml"


SMALL_DATA = 20_000  # training names below which train.auto_scale adapts the recipe
SMALL_DATA_RECIPE = {  # measured on the bundled 4,647 names: see the README's recipes
    "train.batch_size": 64,
    "train.steps": 1800,
    "train.eval_interval": 100,
    "model.dropout": 0.35,
    "model.attn_dropout": 0.1,
}


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


def shown(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"
