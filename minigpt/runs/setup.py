"""Setting a run up before its first step: signals, the device and its threads, the processes,
the Trainer of a new or resumed run, its recipe fitted to the data and the budget, and its precision."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import torch

from minigpt.config import Config
from minigpt.common.bundled import BUNDLED_NAMES
from minigpt.data import load_data
from minigpt.files.names_file import available_memory
from minigpt.common.errors import Interrupted, UsageError
from minigpt.common.text import plural
from minigpt.formats.checkpoint import read_resume_state, refuse_to_go_back
from minigpt.formats.trainer_state import restore_trainer
from minigpt.machine.processes import Distributed, resolve_device, setup as setup_distributed
from minigpt.machine.memory import keep_freed_memory
from minigpt.machine.threads import use_free_cores
from minigpt.machine.torchrun import launched_by_torchrun
from minigpt.machine.precision import bfloat16_hardware, measure_bfloat16
from minigpt.training import Trainer


class StopSignals:
    """The first SIGINT or SIGTERM asks training to stop after this step; a second stops it at once."""

    def __init__(self):
        self.requested: int | None = None
        self._previous = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested is not None:
            raise Interrupted("stopped at once by a second signal; the checkpoints already written are intact", signum)
        self.requested = signum

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def why_complete(trainer: Trainer) -> str:
    """What ended a complete run, and the setting that lets it go on (the first that holds it back)."""
    t = trainer.recipe
    if trainer.stopped_early:
        return (f"it stopped early, {t.patience} evaluations without a better validation loss (train.patience); "
                f"resume with --set train.patience={trainer.evals_since_best + t.patience} to train on, or "
                f"--set train.patience=0 never to stop early")
    if t.time_limit > 0:
        return f"its time limit of {t.time_limit:g} s is spent; resume with --time-limit {2 * t.time_limit:g} to train longer"
    return f"it has taken its {t.steps:,} steps; resume with --steps {2 * t.steps} to train longer"


def start_processes(device_name: str) -> tuple[Distributed, tuple[int, str] | None]:
    """The device, this process's place among torchrun's (one process without it), and on a CPU the
    threads torch was given (how many, and why) when minigpt chose them."""
    device = resolve_device(device_name)
    threads = None
    if device.type == "cpu":
        keep_freed_memory()
        if not launched_by_torchrun():  # torchrun's processes share the cores by OMP_NUM_THREADS already
            threads = use_free_cores()
    return setup_distributed(device), threads


def start_run(config: Config, dist: Distributed, data_path, val_path, resume_from,
              overwrite_later: bool = False) -> tuple[Trainer, Path | None, list[str]]:
    """The Trainer of a new run, or of a resumed one with its state restored.

    Returns it with the checkpoint it resumed from (or None) and the recipe notes: what train.auto_scale changed,
    what precision "auto" measured.
    """
    resumed_from, state = read_resume_state(resume_from) if resume_from is not None else (None, None)
    if state is not None and not overwrite_later:
        refuse_to_go_back(resumed_from, state.step)
    if state is not None:  # the names the run was trained on, unless given again
        data_path, val_path = data_path or state.data.get("path"), val_path or state.data.get("val_path")
    data_path = data_path or BUNDLED_NAMES
    recipe = config.train
    train_names, val_names, tokenizer = load_data(data_path, val_path, recipe.val_fraction, recipe.val_max, recipe.split_seed)
    # a resumed run keeps the recipe it was scaled to
    scaled = fit_block_size(config, train_names) + scale_to_data(config, len(train_names)) if state is None else []
    config.model.vocab_size = tokenizer.vocab_size
    check_step_memory(config, train_names)
    trainer = Trainer(config, train_names, val_names, tokenizer, dist.device, data_path, val_path, dist)
    scaled += choose_precision(trainer)
    if state is not None:
        restore_trainer(trainer, state, resumed_from)  # every number as it was when it was saved
        if trainer.done():
            raise UsageError(f"{resumed_from}: the run is already complete at step {trainer.step:,}: {why_complete(trainer)}")
    return trainer, resumed_from, scaled


def choose_precision(trainer: Trainer) -> list[str]:
    """train.precision "auto": where the device has bfloat16 arithmetic, bfloat16 only if a few passes of the
    run's first batch measure it clearly faster (machine/precision.py), every process taking rank 0's
    choice; the choice becomes the run's recipe. Says what it measured, when it did."""
    recipe, device = trainer.recipe, trainer.dist.device
    if recipe.precision != "auto" or not bfloat16_hardware(device):
        return []  # "auto" is float32 there: nothing to measure
    measured = measure_bfloat16(lambda bfloat16: first_batch_pass(trainer, bfloat16), device)
    faster, speed = trainer.dist.broadcast(measured)
    trainer.bfloat16, recipe.precision = faster, "bfloat16" if faster else "float32"
    return [f"precision {recipe.precision}: bfloat16 measured {speed:.2f}× as fast as float32 on this {device.type} "
            f"(train.precision auto)"]


def first_batch_pass(trainer: Trainer, bfloat16: bool) -> None:
    """A forward and backward pass of the run's first batch that leaves no trace: the random state (dropout's)
    and the gradients are as they were, so the run's numbers are those of a run that did not measure."""
    cuda = [trainer.dist.device] if trainer.dist.device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        trainer.batch_loss(trainer.order.indices(0), trainer.model, bfloat16).backward()
    trainer.model.zero_grad(set_to_none=True)


LOGIT_COPIES = 5  # a step's [batch, positions, vocabulary] tensors: logits, log-softmax, and their gradients, measured


def check_step_memory(config: Config, names: list[str]) -> None:
    """A step's logits grow with the batch, the positions and the vocabulary: refused before the first step when
    they could not fit in the memory there is (a vocabulary of 200,000 characters at batch 256 needs gigabytes),
    rather than failing in the allocator mid-run."""
    available = available_memory()
    positions = min(config.model.block_size, max(map(len, names), default=0) + 1)
    needed = config.train.batch_size * positions * config.model.vocab_size * 4 * LOGIT_COPIES
    if available is not None and needed > available:
        raise UsageError(f"a step of {config.train.batch_size:,} names × {positions} positions × a vocabulary of "
                         f"{config.model.vocab_size:,} needs about {needed / 1e9:.1f} GB for its logits, and "
                         f"{available / 1e9:.1f} GB is available: lower train.batch_size (or model.block_size)")


SMALL_DATA = 20_000  # training names below which train.auto_scale adapts the recipe
SMALL_DATA_RECIPE = {  # the names speedrun's recipe, each change kept by minigpt compare: docs/speed.md
    "model.n_layer": 2,
    "train.batch_size": 64,
    "train.steps": 700,
    "train.eval_interval": 100,
    "model.dropout": 0.0,
    "train.lr": 0.006,
    "train.muon_lr": 0.02,
    "train.lr_schedule": "linear",
    "train.warmup_steps": 10,
}
SHORT_BUDGET = 60  # seconds of time limit at most: a run on a large file is then short of steps too
# the small file's batch and rates, and no dropout (a short run sees too few names to learn them by heart),
# each kept by minigpt compare at 15 to 60 s on makemore's names: docs/speed.md
SHORT_BUDGET_RECIPE = {key: SMALL_DATA_RECIPE[key] for key in ("train.batch_size", "train.lr", "train.muon_lr",
                                                               "model.dropout")}
SHALLOW_BUDGET = 45  # seconds at most: two layers take twice the steps and learn more in them than four do
# the short run's recipe in two layers, kept by minigpt compare at 15 to 45 s on makemore's names: docs/speed.md
SHALLOW_BUDGET_RECIPE = SHORT_BUDGET_RECIPE | {"model.n_layer": 2}
HALF_MINUTE = 30  # seconds at most: the rate straight down to 0 after 10 warm-up steps (100 are a sixth of a
# 15-s run), kept at 15 and 30 s by minigpt compare, within seed noise at 45 and 60 s (docs/speed.md)
HALF_MINUTE_RECIPE = SHALLOW_BUDGET_RECIPE | {"train.lr_schedule": "linear", "train.warmup_steps": 10}
QUARTER_MINUTE = 15  # seconds at most: the embeddings at a tenth of the rate and no weight decay, kept at 15 s
# by minigpt compare, within seed noise at 30 and 45 s (docs/speed.md)
QUARTER_MINUTE_RECIPE = HALF_MINUTE_RECIPE | {"train.embedding_lr_scale": 0.1, "train.weight_decay": 0.0}
SHORT_RUN_RECIPES = ((QUARTER_MINUTE, QUARTER_MINUTE_RECIPE), (HALF_MINUTE, HALF_MINUTE_RECIPE),  # shortest first
                     (SHALLOW_BUDGET, SHALLOW_BUDGET_RECIPE), (SHORT_BUDGET, SHORT_BUDGET_RECIPE))


TINY_DATA = 2_500  # training names below which the schedule is fitted to the file too: docs/recipes.md
EPOCHS_TO_BEST = 25  # on files of 200 to 2,000 names the best validation loss came after 20 to 30 passes
TINY_DATA_RECIPE = {  # a few hundred names are learned by heart soon: more dropout, the default's rates
    "train.batch_size": 64,
    "model.dropout": 0.35,
    "model.attn_dropout": 0.1,
}


def tiny_data_schedule(n_train: int) -> dict:
    """For a very small file, a schedule about as long as the model needs before it learns the names by heart
    (EPOCHS_TO_BEST passes at batch 64, at least 300 steps), warmed up over its first tenth and evaluated often
    enough to catch its best: 2,000 steps overfit 200 names from the end of their warm-up on."""
    steps = max(300, min(2000, round(EPOCHS_TO_BEST * n_train / TINY_DATA_RECIPE["train.batch_size"] / 50) * 50))
    return {"train.steps": steps, "train.warmup_steps": steps // 10, "train.eval_interval": max(10, steps // 150 * 10)}


def shown(value: int | float | str) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else value


def short_run(limit: float, budget: int) -> str:
    return f"in a time limit of {limit:g} s ({budget} s or less) is a short run"


def scale_to_data(config: Config, n_train: int) -> list[str]:
    """With train.auto_scale, adapt the recipe to a small names file or a short time limit; say what changed
    and why.

    A model that reads a few thousand names 256 at a time sees each one often before it
    learns much, and then learns them by heart: smaller batches (more steps per pass), at
    higher rates, learn them sooner, and two layers, whose step costs about two thirds of four's,
    learn more in the same time; a run that short needs neither dropout nor a long warm-up, and
    its rate goes straight down to zero. A file of a few hundred names keeps four layers and
    needs more dropout. A run of under a minute on a large file is short of steps in the same
    way, and too short to learn its names by heart, so it needs no dropout; in 45 s or less two
    layers, twice as fast a step, learn more than four; in 30 s or less 100 steps of warm-up are
    too many, and the rate goes straight down to zero.
    Keys given on the command line are left alone, and the changed recipe is what
    config.toml and the checkpoints record.
    """
    if not config.train.auto_scale:
        return []
    if n_train < TINY_DATA:
        recipe, why = {**TINY_DATA_RECIPE, **tiny_data_schedule(n_train)}, f"is a small file (under {TINY_DATA:,})"
    elif n_train < SMALL_DATA:
        recipe, why = SMALL_DATA_RECIPE, f"is a small file (under {SMALL_DATA:,})"
    elif 0 < config.train.time_limit <= SHORT_BUDGET:
        budget, recipe = next((b, r) for b, r in SHORT_RUN_RECIPES if config.train.time_limit <= b)
        why = short_run(config.train.time_limit, budget)
    else:
        return []
    changed = []
    for name, value in recipe.items():
        section, key = name.split(".")
        part = getattr(config, section)
        if name in config.given or getattr(part, key) == value:
            continue
        changed.append(f"{key} {shown(value)} (was {shown(getattr(part, key))})")
        setattr(part, key, value)
    config.train.auto_scale = False  # done: a resumed run or a reread config.toml must not scale again
    if not changed:
        return []
    return [f"{plural(n_train, 'training name')} {why}, so train.auto_scale set " + ", ".join(changed)]


LONGEST_FITTED = 128  # characters train.auto_scale lets the block size grow to: attention's cost grows with its square


def fit_block_size(config: Config, names: list[str]) -> list[str]:
    """With train.auto_scale, a block size that reads the longest training name whole (up to LONGEST_FITTED
    characters), unless model.block_size was given: a name cut at the block size would be learned, and
    generated, cut. Only ever larger than the recipe's. Says what it changed."""
    m = config.model
    if not config.train.auto_scale or "model.block_size" in config.given or not names:
        return []
    longest = max(map(len, names))
    wanted = min(longest, LONGEST_FITTED) + 1  # the boundary token, then every character
    if wanted <= m.block_size:
        return []
    was, m.block_size = m.block_size, wanted
    cut = f"; names longer than {LONGEST_FITTED} characters are still cut" if longest > LONGEST_FITTED else ""
    return [f"the longest training name has {longest:,} characters, so train.auto_scale set block_size {wanted} "
            f"(was {was}){cut}"]
