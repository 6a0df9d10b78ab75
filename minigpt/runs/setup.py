"""Setting a run up before its first step: signals, the device and its threads, the processes,
the Trainer of a new or resumed run, and its recipe fitted to the data and the budget."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import torch

from minigpt.common.bundled import BUNDLED_NAMES
from minigpt.common.failures import warn
from minigpt.common.text import plural
from minigpt.config import Config
from minigpt.errors import Interrupted, UsageError
from minigpt.files.corpus import load_data, tokenize_corpus
from minigpt.files.names_file import available_memory
from minigpt.formats.checkpoint import read_resume_state, refuse_to_go_back
from minigpt.formats.recipes import Recipe, fit_recipe_to_data
from minigpt.formats.trainer_state import restore_trainer
from minigpt.machine.processes import Processes, resolve_device
from minigpt.machine.processes import setup as setup_distributed
from minigpt.machine.threads import keep_freed_memory, use_free_cores
from minigpt.machine.torchrun import launched_by_torchrun
from minigpt.runs.code_version import code_record
from minigpt.training import SHARED_FROM, Trainer


class StopSignals:
    """The first SIGINT or SIGTERM asks training to stop after this step; a second stops it at once. Before the
    first step of `trainer` has ended (a first batch, compiling, can take minutes) the first stops it at once, with
    `before_first_step` said: there is no step to save yet, and `timeout` sends one signal."""

    def __init__(self, trainer: Trainer, before_first_step: str):
        self.requested: int | None = None
        self.trainer, self.first_step, self.before_first_step = trainer, trainer.step, before_first_step
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.trainer.step == self.first_step:
            # asked too, should a library swallow the raise (tqdm starting its monitor thread catches any
            # Exception): the run then stops after its first step, saved, as after any first signal
            self.requested = signum
            raise Interrupted(self.before_first_step, signum)
        if self.requested is not None:
            raise Interrupted("stopped at once by a second signal; the checkpoints already written are intact", signum)
        self.requested = signum

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def why_complete(trainer: Trainer) -> str:
    """What ended a complete run, and every setting that holds it back, said at once."""
    t = trainer.recipe
    why, settings = [], []
    if trainer.stopped_early:
        why.append(f"{t.patience} evaluations passed without a better validation loss (train.patience)")
        settings.append(f"--set train.patience={trainer.evals_since_best + t.patience}")
    if trainer.budget_spent() and t.time_limit > 0:
        why.append(f"its time limit of {t.time_limit:g} s is spent")
        settings.append(f"--time-limit {2 * t.time_limit:g}")
    elif trainer.budget_spent():
        why.append(f"it has taken its {t.steps:,} steps")
        settings.append(f"--steps {2 * t.steps}")
    never = " (train.patience=0 never stops early)" if trainer.stopped_early else ""
    return f"{' and '.join(why)}; resume with {' '.join(settings)} to train on{never}"


def start_processes(device_name: str) -> tuple[Processes, tuple[int, str] | None]:
    """The device, this process's place among torchrun's (one process without it), and on a CPU the
    threads torch was given (how many, and why) when minigpt chose them."""
    device = resolve_device(device_name)
    threads = None
    if device.type == "cpu":
        keep_freed_memory()
        if not launched_by_torchrun():  # torchrun's processes share the cores by OMP_NUM_THREADS already
            threads = use_free_cores()
    return setup_distributed(device), threads


def start_run(
    config: Recipe, dist: Processes, data_path, val_path, resume_from, overwrite_later: bool = False
) -> tuple[Trainer, Path | None, list[str]]:
    """The Trainer of a new run, or of a resumed one with its state restored.

    Returns it with the checkpoint it resumed from (or None) and the recipe notes: what train.auto_scale changed.
    """
    resumed_from, state = read_resume_state(resume_from) if resume_from is not None else (None, None)
    if resumed_from is not None and state is not None and not overwrite_later:
        refuse_to_go_back(resumed_from, state.step)
    if state is not None:  # the names the run was trained on, unless given again
        data_path, val_path = data_path or state.data.get("path"), val_path or state.data.get("val_path")
    data_path = data_path or BUNDLED_NAMES
    recipe = config.train
    train_names, val_names, tokenizer = load_data(
        data_path, val_path, recipe.val_fraction, recipe.val_max, recipe.split_seed
    )
    # a resumed run keeps the recipe it was fitted to
    scaled = fit_to_data(config, train_names) if state is None else []
    config.model.vocab_size = tokenizer.vocab_size
    check_step_memory(config, train_names)
    check_length_window(config.train, len(train_names))
    say_compiling(config, dist.device)
    corpus = tokenize_corpus(
        train_names, val_names, tokenizer, config.model.block_size, dist.device, data_path, val_path
    )
    trainer = Trainer(config, tokenizer, corpus.train, corpus.val, dist, corpus.membership, corpus.info)
    trainer.code.update(code_record())  # the version and commit beside the core's digest
    scaled += time_limit_note(trainer) if state is None else []
    if resumed_from is not None and state is not None:
        restore_trainer(trainer, state, resumed_from)  # every number as it was when it was saved
        if trainer.done():
            raise UsageError(
                f"{resumed_from}: the run is already complete at step {trainer.step:,}: {why_complete(trainer)}"
            )
    return trainer, resumed_from, scaled


def first_batch_pass(trainer: Trainer, bfloat16: bool) -> None:
    """A forward and backward pass of the run's first batch that leaves no trace: the random state (dropout's)
    and the gradients are as they were, so the run's numbers are those of a run that did not measure."""
    cuda = [trainer.dist.device] if trainer.dist.device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        trainer.batch_loss(trainer.order.indices(0), trainer.model, bfloat16).backward()
    trainer.model.zero_grad(set_to_none=True)


LOGIT_COPIES = 5  # a step's [batch, positions, vocabulary] tensors: logits, log-softmax, and their gradients, measured


def time_limit_note(trainer: Trainer) -> list[str]:
    """A time-limited run trains for its seconds, however many steps they hold: said as it starts, since
    train.steps stays in its recipe (config.toml says at the end which step the time ended it at), with what
    the time allows at the pace of a pass of the first batch: about how many steps, and evaluations."""
    t = trainer.recipe
    if t.time_limit <= 0:
        return []
    first_batch_pass(trainer, trainer.bfloat16)  # the first pass also warms up
    started = time.perf_counter()
    first_batch_pass(trainer, trainer.bfloat16)
    steps = int(t.time_limit / (time.perf_counter() - started))
    evaluations = steps // t.eval_interval
    shared = [step for step in (SHARED_FROM * 2**i for i in range(40)) if step <= steps]
    at = ", ".join(f"{s:,}" for s in shared)
    allows = (
        f"evaluations at step{'s' * (len(shared) > 1)} {at} and at its end" if shared else "an evaluation at its end"
    )
    allows += (
        f", {plural(evaluations, 'evaluation')} of its every {t.eval_interval:,} steps"
        if evaluations
        else f", none of its every {t.eval_interval:,} steps"
    )
    patience = (
        ""
        if not t.patience
        else f"; too few for train.patience ({t.patience}) to stop it early"
        if evaluations < t.patience
        else f"; enough for train.patience ({t.patience}) to stop it early"
    )
    return [
        f"train.time_limit {t.time_limit:g} s ends this run, not train.steps ({t.steps:,}): the learning "
        f"rate follows the clock. At the pace of a forward and backward pass of its first batch it holds "
        f"about {steps:,} steps (as many as the machine gives it): {allows}{patience}"
    ]


def check_step_memory(config: Config, names: list[str]) -> None:
    """A step's logits grow with the batch, the positions and the vocabulary: refused before the first step when
    they could not fit in the memory there is (a vocabulary of 200,000 characters at batch 256 needs gigabytes),
    rather than failing in the allocator mid-run."""
    available = available_memory()
    positions = min(config.model.block_size, max(map(len, names), default=0) + 1)
    needed = config.train.batch_size * positions * config.model.vocab_size * 4 * LOGIT_COPIES
    if available is not None and needed > available:
        raise UsageError(
            f"a step of {config.train.batch_size:,} names × {positions} positions × a vocabulary of "
            f"{config.model.vocab_size:,} needs about {needed / 1e9:.1f} GB for its logits, and "
            f"{available / 1e9:.1f} GB is available: lower train.batch_size (or model.block_size)"
        )


def say_compiling(config: Config, device: torch.device) -> None:
    """train.compile on a CPU: the first steps wait minutes for the compiler, said before they start."""
    if config.train.compile and device.type == "cpu":
        warn(
            "train.compile: torch.compile compiles the training step during its first steps, which on a CPU "
            "takes minutes before the first step ends"
        )


LARGEST_WINDOW = 1 << 20  # names in one window of train.length_window's, whatever the file's size


def check_length_window(t, n_train: int) -> None:
    """A window of train.length_window batches sorts that many names by length at once: more names than the
    file holds (or LARGEST_WINDOW) buy nothing, and a window of 10^8 batches was built for minutes before it
    ran out of memory. Refused at once."""
    most = max(LARGEST_WINDOW, n_train)
    if t.length_window * t.batch_size > most:
        raise UsageError(
            f"train.length_window {t.length_window:,} groups {t.length_window * t.batch_size:,} names "
            f"a window, more than the {n_train:,} training names can use: at most "
            f"{max(1, most // t.batch_size):,} at batch size {t.batch_size:,}"
        )


LONGEST_FITTED = 128  # characters train.auto_scale lets the block size grow to: attention's cost grows with its square


def fit_to_data(config: Recipe, names: list[str]) -> list[str]:
    """train.auto_scale: the bundled recipe for this many names and this time limit, when none was named, and a
    block size that reads the longest name whole; then auto_scale is off, so that a resumed run or a reread
    config.toml is not fitted again. Says what it chose."""
    notes = fit_recipe_to_data(config, len(names)) + fit_block_size(config, names)
    config.train.auto_scale = False
    return notes


def fit_block_size(config: Recipe, names: list[str]) -> list[str]:
    """With train.auto_scale, a block size that reads the longest training name whole (up to LONGEST_FITTED
    characters), unless model.block_size was given or written in the recipe named: a name cut at the block size
    would be learned, and generated, cut. Only ever larger than the recipe's. Says what it changed."""
    m = config.model
    if not config.train.auto_scale or "model.block_size" in config.given | config.written or not names:
        return []
    longest = max(map(len, names))
    wanted = min(longest, LONGEST_FITTED) + 1  # the boundary token, then every character
    if wanted <= m.block_size:
        return []
    was, m.block_size = m.block_size, wanted
    cut = f"; names longer than {LONGEST_FITTED} characters are still cut" if longest > LONGEST_FITTED else ""
    return config.change(
        f"the longest training name has {longest:,} characters, so train.auto_scale set "
        f"block_size {wanted} (was {was}){cut}"
    )
