"""Recipes: a model, a training run and sampling defaults, every key declared once with its
default, its description and the values it may take (configs/default.toml and
docs/configuration.md's tables are made from them). A recipe (a TOML file in configs/, or
`--set section.key=value`) has three sections, [model], [train] and [sample], each optional;
formats/recipes.py reads it, and `check_recipe` below checks it for the core and the command
line alike."""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError


@dataclass(frozen=True)
class Range:
    """The values a key may take beyond its type, and how a refusal says so."""

    holds: Callable[[Any], bool]
    says: str  # "must be positive": the refusal reads "train.lr must be positive, got -1"


POSITIVE = Range(lambda v: v > 0, "must be positive")
NOT_NEGATIVE = Range(lambda v: v >= 0, "must not be negative")
# a probability, or a decay that must stay below 1
A_FRACTION = Range(lambda v: 0 <= v < 1, "must be in [0, 1)")
UP_TO_ONE = Range(lambda v: 0 < v <= 1, "must be in (0, 1]")


def from_to(low: int, high: int, what: str = "") -> Range:
    return Range(lambda v: low <= v <= high, f"must be {what}from {low:,} to {high:,}")


LARGEST_INTEGER = 2**63 - 1  # every whole-number key: what a checkpoint and torch hold
SEEDS = LARGEST_INTEGER + 1  # a seed: 0 up to LARGEST_INTEGER, what torch's generators take
SEED = from_to(0, SEEDS - 1, "a whole number ")
MAX_BATCH_SIZE = 65_536  # names a step: past this, a step outgrows any machine's memory
MAX_SNAPSHOTS = 256  # copies of the weights: the explorer's slider, not a history


def setting(default: Any, about: str, *ranges: Range, choices: tuple[str, ...] = ()) -> Any:
    metadata = {"about": about, "ranges": ranges, "choices": choices}
    return field(default=default, metadata=metadata)


@dataclass
class GPTConfig:
    """The model's shape. `vocab_size` comes from the data, not from a recipe."""

    n_layer: int = setting(4, "transformer blocks", POSITIVE)
    n_head: int = setting(4, "attention heads per block", POSITIVE)
    n_embd: int = setting(64, "residual stream width; each head gets n_embd / n_head", POSITIVE)
    block_size: int = setting(16, "the boundary and up to block_size - 1 characters", POSITIVE)
    causal: bool = setting(True, "the causal mask: a position reads itself and those before it")
    dropout: float = setting(0.1, "on the attention and MLP outputs", A_FRACTION)
    attn_dropout: float = setting(0.0, "on the attention weights", A_FRACTION)
    init_std: float = setting(0.02, "every matrix starts from N(0, init_std)", POSITIVE)
    zero_init_out: bool = setting(False, "attn_wo and mlp_fc2 start at zero (as in microgpt)")
    activation: str = setting("relu", '"relu" (as microgpt) or "gelu"', choices=("relu", "gelu"))
    final_norm: bool = setting(True, "an RMSNorm before lm_head (microgpt has none)")
    norm_scale: bool = setting(False, "learned RMSNorm gains (microgpt has none)")
    norm_eps: float = setting(1e-5, "added to the mean square in RMSNorm", POSITIVE)
    vocab_size: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


# far beyond any model of names (docs/recipes.md gives the recipes' sizes); a stored config past it
# is refused before anything is allocated, so a small crafted file cannot claim gigabytes
MAX_PARAMETERS = 100_000_000


def as_float32(value: float) -> float:
    """The value as a float32 holds it, the precision the model's arithmetic uses (past its
    range: ±inf)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def check(value: Any, allowed: Range, name: str) -> None:
    """One line naming the key (or option) and the value when `value` is outside `allowed`: a
    number that is not finite says so, and a float is checked as given and as the float32 it
    becomes where it is used (1e-50 is 0)."""
    # nan and inf pass or fail comparisons by accident
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value}")
    if not allowed.holds(value):
        got = f"{value:,}" if "from" in allowed.says and isinstance(value, int) else f"{value}"
        raise UsageError(f"{name} {allowed.says}, got {got}")
    single = as_float32(value) if isinstance(value, float) else None
    if single is not None and not (math.isfinite(single) and allowed.holds(single)):
        says = allowed.says if math.isfinite(single) else "must be a finite number"
        raise UsageError(
            f"{name} {says}, got {value}, which is {single:g} as the float32 "
            f"the model computes with"
        )


def parameter_count(m: GPTConfig) -> int:
    """The parameters of a model of this shape, by arithmetic (nothing is built)."""
    c = m.n_embd
    per_layer = 12 * c * c + (2 * c if m.norm_scale else 0)  # attention 4 C^2, MLP 8 C^2, the gains
    final = c if m.final_norm and m.norm_scale else 0
    return (2 * m.vocab_size + m.block_size) * c + m.n_layer * per_layer + final


def check_model_size(m: GPTConfig, where: str | None = None) -> None:
    if parameter_count(m) > MAX_PARAMETERS:
        shape = (
            f"n_layer {m.n_layer:,}, n_embd {m.n_embd:,}, block_size {m.block_size:,}, "
            f"vocab_size {m.vocab_size:,}"
        )
        raise UsageError(
            f"{where + ': ' if where else ''}a model of {shape} would have "
            f"{parameter_count(m):,} parameters; minigpt builds at most "
            f"{MAX_PARAMETERS:,}"
        )


def check_64_bits(value: Any, name: str) -> None:
    """A whole number past 64 bits (a recipe key or a command's option) can mean nothing: one
    line says so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise UsageError(f"{name} must be at most {LARGEST_INTEGER:,} (64 bits), got {value}")


def check_declared(part: Any, section: str) -> None:
    """Every key of a recipe's section (a GPTConfig, TrainConfig or SampleConfig) as its
    declaration allows: its type, its choices, its ranges, 64 bits; one line naming the first
    that does not hold."""
    for f in dataclasses.fields(part):
        value, name = getattr(part, f.name), f"{section}.{f.name}"
        expected = type(f.default)
        if type(value) is not expected and not (expected is float and type(value) is int):
            shown = f"{type(value).__name__} {value!r}"[:80]
            raise UsageError(f"{name} must be {expected.__name__}, got {shown}")
        if isinstance(value, float) and not math.isfinite(value):  # nan passes every comparison
            raise UsageError(f"{name} must be a finite number, got {value}")
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            raise UsageError(f"{name} must be one of {', '.join(choices)}, got '{value}'")
        for allowed in f.metadata.get("ranges", ()):
            check(value, allowed, name)
        check_64_bits(value, name)  # after the ranges, which name narrower bounds


def checked_shape(config: Any) -> GPTConfig:
    """A model that can be built: every key as declared above, its shape whole, its size within
    reach (formats/recipes.py validates a whole recipe)."""
    if not isinstance(config, GPTConfig):
        raise UsageError(f"a GPT is built from a GPTConfig, got {type(config).__name__}")
    for key in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
        least = 2 if key == "vocab_size" else 1  # the vocabulary: a character and the boundary
        value = getattr(config, key)
        if type(value) is not int or value < least:
            raise UsageError(
                f"model.{key} must be a whole number from {least:,}, got {value!r:.60}"
            )
    check_declared(config, "model")  # dropout 2.0, init_std nan, activation "evil": each refused
    if config.n_embd % config.n_head:
        raise UsageError(
            f"model.n_embd ({config.n_embd}) must be divisible by model.n_head ({config.n_head})"
        )
    check_model_size(config)  # n_layer 10**9 would be allocated for minutes before it failed
    return config


def check_tokens(idx: Any, config: GPTConfig) -> None:
    """What GPT.forward reads: a [batch, positions] tensor of token ids, at most block_size
    positions, each id from 0 to vocab_size - 1. torch's own errors for these come from deep
    in the embedding; the ids' range is read back on a CPU alone, where it costs nothing (on
    a GPU it would stop the GPU every step, and torch's embedding asserts it there)."""
    if str(getattr(idx, "dtype", "")) not in ("torch.int64", "torch.int32") or idx.dim() != 2:
        raise UsageError(
            f"a GPT reads token ids: a [batch, positions] tensor of whole numbers "
            f"(torch.long), got {type(idx).__name__} "
            f"{getattr(idx, 'dtype', '')}".rstrip()
        )
    if idx.size(1) > config.block_size:
        raise UsageError(
            f"the model reads at most {config.block_size} positions "
            f"(model.block_size), got {idx.size(1)}"
        )
    if idx.device.type == "cpu" and idx.numel():
        low, high = int(idx.min()), int(idx.max())
        if low < 0 or high >= config.vocab_size:
            raise UsageError(
                f"a token id is a whole number from 0 to {config.vocab_size - 1}, "
                f"got {low if low < 0 else high}"
            )


@dataclass
class TrainConfig:
    steps: int = setting(800, "optimizer steps (unless time_limit is set)", POSITIVE)
    batch_size: int = setting(256, "names per step", POSITIVE, from_to(1, MAX_BATCH_SIZE))
    optimizer: str = setting(
        "muon",
        '"muon" (Muon for the hidden matrices, AdamW for the rest), "adamw" or "adam"',
        choices=("adam", "adamw", "muon"),
    )
    lr: float = setting(3e-3, "peak learning rate of AdamW (or Adam)", POSITIVE)
    muon_lr: float = setting(0.01, "with muon: the hidden matrices' peak learning rate", POSITIVE)
    embedding_lr_scale: float = setting(1.0, "wte's and wpe's learning rate, times lr", POSITIVE)
    muon_momentum: float = setting(0.95, "with muon: its momentum", A_FRACTION)
    lr_schedule: str = setting(
        "cosine",
        '"cosine" (to min_lr), "linear" (to 0) or "constant", after the warmup',
        choices=("constant", "linear", "cosine"),
    )
    warmup_steps: int = setting(100, "steps of linear warmup from 0", NOT_NEGATIVE)
    min_lr: float = setting(1e-4, "where the cosine schedule ends", NOT_NEGATIVE)
    weight_decay: float = setting(0.1, "decoupled weight decay, on matrices only", NOT_NEGATIVE)
    beta1: float = setting(0.9, "Adam's first-moment decay", A_FRACTION)
    beta2: float = setting(0.99, "Adam's second-moment decay", A_FRACTION)
    eps: float = setting(1e-8, "Adam's epsilon", POSITIVE)
    grad_clip: float = setting(1.0, "the gradients' largest norm; 0: no clipping", NOT_NEGATIVE)
    shuffle: str = setting(
        "epoch", '"epoch": a new order each pass; "once": microgpt\'s', choices=("epoch", "once")
    )
    length_window: int = setting(32, "batches grouped by their names' length; 1: none", POSITIVE)
    seed: int = setting(1337, "seeds the weights, the batch order and dropout", SEED)
    split_seed: int = setting(1337, "seeds which names are held out (not train.seed's)", SEED)
    device: str = setting("auto", '"auto" (CUDA if there is one), "cpu", "cuda", "cuda:N" or "mps"')
    compile: bool = setting(False, "torch.compile the training step (needs a C++ compiler)")
    precision: str = setting(
        "auto",
        '"auto" (float32 on every device, by rule), "float32" or '
        '"bfloat16" (matrix multiplies only)',
        choices=("auto", "float32", "bfloat16"),
    )
    eval_interval: int = setting(250, "steps between evaluations and checkpoints", POSITIVE)
    # three keys of the run around the core (runs/), which its loop never reads
    auto_scale: bool = setting(
        True,
        "minigpt train with no --config: train on the bundled "
        "recipe that fits the data and the time limit (docs/recipes.md); "
        "fit block_size to the longest name",
    )
    patience: int = setting(4, "evaluations with no new best, then stop; 0: never", NOT_NEGATIVE)
    keep_best: bool = setting(
        True, "minigpt train ends on the best weights (by validation loss), not the last"
    )
    log_interval: int = setting(10, "steps per line of metrics.jsonl", POSITIVE)
    time_limit: float = setting(0.0, "seconds to train, scheduled; 0: by steps", NOT_NEGATIVE)
    val_fraction: float = setting(
        0.1, "share of the names held out (without --val-data)", A_FRACTION
    )
    val_max: int = setting(1000, "at most this many held-out names", POSITIVE)
    snapshots: int = setting(
        16,
        "minigpt train keeps the weights at a few steps, to watch "
        "attention form (RUN/snapshots.pt); 0 keeps none",
        from_to(0, MAX_SNAPSHOTS),
    )


def check_recipe(config: Any) -> None:
    """A whole recipe as every key's declaration allows, then what no one key can say alone: one
    line naming the first that does not hold. The core's Trainer checks its recipe with it, and
    the command line every recipe it reads, so both refuse the same values in the same words."""
    if not isinstance(config, Config):
        raise UsageError(f"a recipe is a Config, got {type(config).__name__}")
    for section in ("model", "train", "sample"):
        check_declared(getattr(config, section), section)
    checked_shape(dataclasses.replace(config.model, vocab_size=2))  # vocab_size: from the data
    if config.train.min_lr > config.train.lr:
        raise UsageError(
            f"train.min_lr ({config.train.min_lr}) must not exceed train.lr ({config.train.lr})"
        )
    check_model_size(config.model)  # with its vocabulary, where it has one


def held_out_count(n: int, fraction: float, at_most: int) -> int:
    """How many of n names are held out for validation (train.val_fraction, train.val_max):
    `fraction` of them, at most `at_most`, and one at least from ten names on."""
    count = min(at_most, int(n * fraction))
    return 1 if fraction > 0 and count == 0 and n >= 10 else count


@dataclass
class SampleConfig:
    temperature: float = setting(1.0, "<1: safer names; >1: wilder; 0: the likeliest", NOT_NEGATIVE)
    top_k: int = setting(0, "sample from the k likeliest characters; 0: every one", NOT_NEGATIVE)
    top_p: float = setting(1.0, "the likeliest characters up to this probability", UP_TO_ONE)


@dataclass(eq=False)
class Config:
    """A whole recipe: the model, its training and its sampling defaults. Two are equal when
    every key is (formats/recipes.py's Recipe, a Config read by the command line, too)."""

    model: GPTConfig = field(default_factory=GPTConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        sections = dataclasses.fields(self)
        return {f.name: dataclasses.asdict(getattr(self, f.name)) for f in sections}

    @classmethod
    def from_dict(cls, sections: dict[str, dict[str, Any]]) -> Config:
        """The recipe `to_dict` wrote (a checkpoint's "config"), as it is; formats/recipes.py's
        config_from_dict reads one from anyone's file, every key checked."""
        return cls(
            GPTConfig(**sections["model"]),
            TrainConfig(**sections["train"]),
            SampleConfig(**sections["sample"]),
        )
