"""Setting a run up before its first step: signals, the device and its threads, the processes,
and the Trainer of a new or resumed run."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from minigpt.config import Config, scale_to_data
from minigpt.data import BUNDLED_NAMES, load_data
from minigpt.errors import Interrupted, UsageError
from minigpt.formats.checkpoint import read_resume_state, refuse_to_go_back
from minigpt.scaling.processes import Distributed, keep_freed_memory, resolve_device, setup as setup_distributed
from minigpt.scaling.threads import use_free_cores
from minigpt.scaling.torchrun import launched_by_torchrun
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

    Returns it with the checkpoint it resumed from (or None) and what train.auto_scale changed.
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
    scaled = scale_to_data(config, len(train_names)) if state is None else []
    config.model.vocab_size = tokenizer.vocab_size
    trainer = Trainer(config, train_names, val_names, tokenizer, dist.device, data_path, val_path, dist)
    if state is not None:
        trainer.restore(state, resumed_from)
        if trainer.done():
            raise UsageError(f"{resumed_from}: the run is already complete at step {trainer.step}; "
                             f"raise train.steps, train.time_limit or train.patience to train longer")
    return trainer, resumed_from, scaled
