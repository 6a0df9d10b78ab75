"""Recipes: a model, a training run and sampling defaults, every key declared once with its
default, its description (docs/configuration.md is made from them) and the values it may
take. A recipe (a TOML file in configs/, or `--set section.key=value`) has three sections,
[model], [train] and [sample], each optional; formats/recipes.py reads and checks it. The
defaults are the recommended recipe and equal configs/default.toml."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from minigpt.common.arguments import kind_of, whole_number_within
from minigpt.common.errors import UsageError
from minigpt.common.ranges import (A_FRACTION, MAX_BATCH_SIZE, MAX_SNAPSHOTS, NOT_NEGATIVE,
                                   POSITIVE, check_declared, check_model_size)
from minigpt.common.ranges import SEED, UP_TO_ONE, Range, from_to


def setting(default, about: str, *ranges: Range, choices: tuple[str, ...] = ()):
    metadata = {"about": about, "ranges": ranges, "choices": choices}
    return field(default=default, metadata=metadata)


@dataclass
class GPTConfig:
    """The model's shape. `vocab_size` comes from the data, not from a recipe."""

    n_layer: int = setting(4, "transformer blocks", POSITIVE)
    n_head: int = setting(4, "attention heads per block", POSITIVE)
    n_embd: int = setting(64, "residual stream width; each head gets n_embd / n_head",
                          POSITIVE)
    block_size: int = setting(16, "the boundary and up to block_size - 1 characters", POSITIVE)
    causal: bool = setting(True, "the causal mask: a position reads itself and those "
                                 "before it")
    dropout: float = setting(0.1, "on the attention and MLP outputs", A_FRACTION)
    attn_dropout: float = setting(0.0, "on the attention weights", A_FRACTION)
    init_std: float = setting(0.02, "every matrix starts from N(0, init_std)", POSITIVE)
    zero_init_out: bool = setting(False, "attn_wo and mlp_fc2 start at zero (as in microgpt)")
    activation: str = setting("relu", '"relu" (as microgpt) or "gelu"',
                              choices=("relu", "gelu"))
    final_norm: bool = setting(True, "an RMSNorm before lm_head (microgpt has none)")
    norm_scale: bool = setting(False, "learned RMSNorm gains (microgpt has none)")
    norm_eps: float = setting(1e-5, "added to the mean square in RMSNorm", POSITIVE)
    vocab_size: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


def checked_shape(config) -> GPTConfig:
    """A model that can be built: every key as declared above, its shape whole, its size within
    reach (formats/recipes.py validates a whole recipe)."""
    if not isinstance(config, GPTConfig):
        raise UsageError(f"a GPT is built from a GPTConfig, got {kind_of(config)}")
    for key in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
        least = 2 if key == "vocab_size" else 1  # the vocabulary: a character and the boundary
        whole_number_within(getattr(config, key), f"model.{key}", least)
    check_declared(config, "model")  # dropout 2.0, init_std nan, activation "evil": each refused
    if config.n_embd % config.n_head:
        raise UsageError(f"model.n_embd ({config.n_embd}) must be divisible by model.n_head "
                         f"({config.n_head})")
    check_model_size(config)  # n_layer 10**9 would be allocated for minutes before it failed
    return config


def check_tokens(idx, config: GPTConfig) -> None:
    """What GPT.forward reads: a [batch, positions] tensor of token ids, at most block_size
    positions, each id from 0 to vocab_size - 1. torch's own errors for these come from deep
    in the embedding; the ids' range is read back on a CPU alone, where it costs nothing (on
    a GPU it would stop the GPU every step, and torch's embedding asserts it there)."""
    if str(getattr(idx, "dtype", "")) not in ("torch.int64", "torch.int32") or idx.dim() != 2:
        raise UsageError(f"a GPT reads token ids: a [batch, positions] tensor of whole numbers "
                         f"(torch.long), got {kind_of(idx)} {getattr(idx, 'dtype', '')}".rstrip())
    if idx.size(1) > config.block_size:
        raise UsageError(f"the model reads at most {config.block_size} positions "
                         f"(model.block_size), got {idx.size(1)}")
    if idx.device.type == "cpu" and idx.numel():
        low, high = int(idx.min()), int(idx.max())
        if low < 0 or high >= config.vocab_size:
            raise UsageError(f"a token id is a whole number from 0 to {config.vocab_size - 1}, "
                             f"got {low if low < 0 else high}")


@dataclass
class TrainConfig:
    steps: int = setting(800, "optimizer steps (unless time_limit is set)", POSITIVE)
    batch_size: int = setting(256, "names per step", POSITIVE, from_to(1, MAX_BATCH_SIZE))
    optimizer: str = setting("muon", '"muon" (Muon for the hidden matrices, AdamW for the '
                             'rest), "adamw" or "adam"', choices=("adam", "adamw", "muon"))
    lr: float = setting(3e-3, "peak learning rate of AdamW (or Adam)", POSITIVE)
    muon_lr: float = setting(0.01, "with muon: the hidden matrices' peak learning rate",
                             POSITIVE)
    embedding_lr_scale: float = setting(1.0, "wte's and wpe's learning rate, times lr",
                                        POSITIVE)
    muon_momentum: float = setting(0.95, "with muon: its momentum", A_FRACTION)
    lr_schedule: str = setting("cosine", '"cosine" (to min_lr), "linear" (to 0) or '
                               '"constant", after the warmup',
                               choices=("constant", "linear", "cosine"))
    warmup_steps: int = setting(100, "steps of linear warmup from 0", NOT_NEGATIVE)
    min_lr: float = setting(1e-4, "where the cosine schedule ends", NOT_NEGATIVE)
    weight_decay: float = setting(0.1, "decoupled weight decay, on matrices only",
                                  NOT_NEGATIVE)
    beta1: float = setting(0.9, "Adam's first-moment decay", A_FRACTION)
    beta2: float = setting(0.99, "Adam's second-moment decay", A_FRACTION)
    eps: float = setting(1e-8, "Adam's epsilon", POSITIVE)
    grad_clip: float = setting(1.0, "the gradients' largest norm; 0: no clipping",
                               NOT_NEGATIVE)
    shuffle: str = setting("epoch", '"epoch": a new order each pass; "once": microgpt\'s',
                           choices=("epoch", "once"))
    length_window: int = setting(32, "batches grouped by their names' length; 1: none",
                                 POSITIVE)
    pack_names: bool = setting(False, "short names packed in rows: the same gradients, "
                                      "fewer rows")
    seed: int = setting(1337, "seeds the weights, the batch order and dropout", SEED)
    split_seed: int = setting(1337, "seeds which names are held out (not train.seed's)", SEED)
    device: str = setting("auto", '"auto" (CUDA if there is one), "cpu", "cuda", "cuda:N" '
                                  'or "mps"')
    compile: bool = setting(False, "torch.compile the training step (needs a C++ compiler)")
    precision: str = setting("auto", '"auto" (bfloat16 where it measures faster, else '
                             'float32), "float32" or "bfloat16"',
                             choices=("auto", "float32", "bfloat16"))
    eval_interval: int = setting(250, "steps between evaluations and checkpoints", POSITIVE)
    auto_scale: bool = setting(True, "with no --config, train on the bundled recipe that "
                               "fits the data and the time limit (docs/recipes.md); fit "
                               "block_size to the longest name")
    patience: int = setting(4, "evaluations with no new best, then stop; 0: never",
                            NOT_NEGATIVE)
    keep_best: bool = setting(True, "end on the best weights (by validation loss), not the "
                                    "last")
    log_interval: int = setting(10, "steps per line of metrics.jsonl", POSITIVE)
    time_limit: float = setting(0.0, "seconds to train, scheduled; 0: by steps", NOT_NEGATIVE)
    val_fraction: float = setting(0.1, "share of --data held out (without --val-data)",
                                  A_FRACTION)
    val_max: int = setting(1000, "at most this many held-out names", POSITIVE)
    snapshots: int = setting(16, "weights kept at a few steps, to watch attention form (RUN/"
                             "snapshots.pt); 0 keeps none", from_to(0, MAX_SNAPSHOTS))


@dataclass
class SampleConfig:
    temperature: float = setting(1.0, "<1: safer names; >1: wilder; 0: the likeliest",
                                 NOT_NEGATIVE)
    top_k: int = setting(0, "sample from the k likeliest characters; 0: every one",
                         NOT_NEGATIVE)
    top_p: float = setting(1.0, "the likeliest characters up to this probability", UP_TO_ONE)


@dataclass
class Config:
    model: GPTConfig = field(default_factory=GPTConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self):
        # "section.key" set on the command line: a recipe auto_scale picks keeps them
        self.given: set[str] = set()
        self.notes: list[str] = []  # what was changed because of them, for the start panel
        self.recipe = None  # the recipe file it was read from (None: the defaults)
        # no recipe named: train.auto_scale picks the bundled one that fits the data
        self.fits_data = True
        self.why = ""  # why train.auto_scale chose the recipe it did

    def to_dict(self) -> dict:
        sections = dataclasses.fields(self)
        return {f.name: dataclasses.asdict(getattr(self, f.name)) for f in sections}
