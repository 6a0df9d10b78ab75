"""Recipes: a model, a training run and sampling defaults, every key declared once.

A recipe (a TOML file in configs/, or `--set section.key=value`) has three sections, each optional:

    [model]   n_layer, n_head, n_embd, block_size, dropout, init_std, activation, ...
    [train]   steps, batch_size, lr, lr_schedule, warmup_steps, weight_decay, seed, ...
    [sample]  temperature, top_k, top_p

Each key is declared below with its default, its description and the values it may take;
recipes/loading.py reads a recipe into these classes and recipes/checks.py holds each value to its
declaration, and `keys_markdown()` there turns the descriptions into docs/configuration.md. The
defaults are the recommended recipe and equal `configs/default.toml`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from minigpt.recipes.ranges import A_FRACTION, MAX_BATCH_SIZE, MAX_SNAPSHOTS, NOT_NEGATIVE, POSITIVE, SEED, UP_TO_ONE
from minigpt.recipes.ranges import Range, from_to


def setting(default, about: str, *ranges: Range, choices: tuple[str, ...] = ()):
    """A config key: its default, its description (docs/configuration.md lists them) and the values it may take,
    written here once."""
    return field(default=default, metadata={"about": about, "ranges": ranges, "choices": choices})


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
