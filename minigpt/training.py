"""The training loop. Read `train_loop` first: one `while True:` that takes a step, logs,
evaluates and saves, and stops. `Trainer` holds what it works on (the model, the optimizer,
the data, how far the run has got) and takes one step. The loop tells a `Reporter` what
happens; runs/run.py sets a run up around it (`minigpt.train`). A run can stop and go on
without changing a number: the batch order is a function of (seed, step), and a checkpoint
holds the rest."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from minigpt.common.errors import Interrupted, RunError
from minigpt.config import Config
from minigpt.data import BatchOrder, Tokenizer, plain_batch
from minigpt.files.corpus import IGNORE, TokenizedNames, tokenize_corpus
from minigpt.formats.trainer_state import save_trainer
from minigpt.machine.processes import Distributed, PendingLosses, model_for_steps
from minigpt.model import GPT, eval_mode
from minigpt.optimizer import lr_at, make_optimizer
from minigpt.sampling import generate


class Reporter:
    """What the loop tells as a run goes; each method does nothing unless overridden.

        start       before the first step of this stretch (a resumed run starts again here)
        step        after every optimizer step
        log         every log_interval steps, with the mean training loss since the last log
        saving      just before last.pt is written, for what a resumed run reads beside it
        evaluation  after each evaluation (trainer.val_loss), with Trainer.samples()
        end         once, however the run ends: with runs/run.py's TrainResult, or None on
                    an error
    """

    def start(self, trainer: Trainer) -> None: ...
    def step(self, trainer: Trainer) -> None: ...
    def log(self, trainer: Trainer, train_loss: float) -> None: ...
    def saving(self, trainer: Trainer, run_dir: Path) -> None: ...
    def evaluation(self, trainer: Trainer, samples: list[tuple[str, bool]]) -> None: ...
    def end(self, trainer: Trainer, result) -> None: ...


@dataclass
class Clock:
    """Wall-clock seconds of training, evaluation included, across resumes."""

    before: float = 0.0  # seconds before this stretch of the run
    started: float | None = None  # when it began (time.perf_counter)

    @property
    def elapsed(self) -> float:
        return self.before + (time.perf_counter() - self.started if self.started else 0.0)


class Trainer:
    """A run's state (its model, optimizer and data, and how far it has got), and its step."""

    def __init__(self, config: Config, train_names, val_names, tokenizer: Tokenizer, device,
                 data_path, val_path=None, dist: Distributed = Distributed(),
                 make_optimizer=make_optimizer):  # runs/setup.py passes a faster build of the same
        self.config, self.recipe = config, config.train
        self.tokenizer, self.dist = tokenizer, dist
        torch.manual_seed(self.recipe.seed)
        self.model = GPT(config.model).to(device)
        self.make_batch = plain_batch  # a name a row; runs/setup.py may swap in packed rows
        self.model_for_steps = model_for_steps(self.model, self.recipe, dist)  # DDP, compile
        self.optimizer = make_optimizer(self.model, self.recipe)
        # "auto" is measured as a run starts (runs/setup.py)
        self.bfloat16 = self.recipe.precision == "bfloat16"
        corpus = tokenize_corpus(train_names, val_names, tokenizer, config.model.block_size,
                                 device, data_path, val_path)
        self.train_data, self.val_data, self.membership, self.data_info = corpus
        self.order = BatchOrder(len(self.train_data), self.recipe.batch_size, self.recipe.seed,
                                self.recipe.shuffle == "epoch", self.train_data.lengths,
                                self.recipe.length_window)
        self.step, self.lr = 0, 0.0  # optimizer steps taken; the latest step's learning rate
        self.tokens, self.seconds = 0, 0.0  # predicted tokens trained on; seconds in steps
        self.clock = Clock()
        self.val_loss = self.best_val_loss = None  # the latest and the best validation loss
        self.best_step: int | None = None
        self.evals_since_best = 0  # evaluations since the best one, for train.patience

    def progress(self) -> float:
        """How much of the run is done, 0 to 1; the learning-rate schedule follows it."""
        if self.recipe.time_limit > 0:
            return min(1.0, self.clock.elapsed / self.recipe.time_limit)
        warmup = min(self.recipe.warmup_steps, self.step)
        return (self.step - warmup) / max(1, self.recipe.steps - warmup)

    @property
    def stopped_early(self) -> bool:
        """Whether train.patience evaluations have passed without a better validation loss."""
        return 0 < self.recipe.patience <= self.evals_since_best

    def budget_spent(self) -> bool:
        """Whether the run has taken its steps (or spent its time limit)."""
        if self.recipe.time_limit > 0:
            return self.clock.elapsed >= self.recipe.time_limit
        return self.step >= self.recipe.steps

    def done(self) -> bool:
        return self.stopped_early or self.budget_spent()

    def batch_loss(self, rows, model, bfloat16: bool) -> torch.Tensor:
        """Rows `rows`' mean loss by `model`; bfloat16: only matrix multiplies in bfloat16."""
        x, y, positions, attend = self.make_batch(self.train_data, rows, self.model)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bfloat16):
            return model(x, y, positions=positions, attend=attend)[1]

    def train_step(self) -> tuple[torch.Tensor, int]:
        """One optimizer step. Returns this process's summed loss (left on the device) and
        the batch's predicted tokens: summed over the processes and divided, the batch's
        mean loss."""
        started = time.perf_counter()
        self.lr = lr_at(self.step, self.progress(), self.recipe)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr * group["lr_scale"]  # Muon's matrices have their own peak
        rows = self.order.indices(self.step)  # the batch: rows of the training names
        my_rows = self.dist.my_share(rows)  # every row, in one process
        batch_tokens = int(self.train_data.lengths[rows].sum())
        my_tokens = int(self.train_data.lengths[my_rows].sum())
        loss = self.batch_loss(my_rows, self.model_for_steps, self.bfloat16)  # a mean
        self.dist.weighted_for_whole_batch(loss, my_tokens, batch_tokens).backward()
        if self.recipe.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens += batch_tokens
        self.seconds += time.perf_counter() - started
        return loss.detach() * my_tokens, batch_tokens

    def validate(self) -> bool:
        """Measure the validation loss; True when it is the best so far (or there is none)."""
        if self.val_data is None:
            return True
        self.val_loss = evaluate(self.model, self.val_data, dist=self.dist)
        if self.best_val_loss is None or self.val_loss < self.best_val_loss:
            self.best_val_loss = self.val_loss
            self.best_step = self.step
            self.evals_since_best = 0
            return True
        self.evals_since_best += 1
        return False

    def samples(self, num: int = 8) -> list[tuple[str, bool]]:
        """Names the model makes now (the same draws each time), and which are training
        names."""
        names = generate(self.model, self.tokenizer, num,
                         temperature=self.config.sample.temperature, seed=self.recipe.seed)
        return [(name, name in self.membership) for name in names]


@torch.no_grad()
def evaluate(model: GPT, data: TokenizedNames, batch_size: int = 256,
             dist: Distributed = Distributed()) -> float:
    """Mean cross-entropy per predicted token (each character and the end) over every name in
    `data`, without dropout. With several processes, each scores its share and the sums are
    added up."""
    total = torch.zeros((), dtype=torch.float64, device=data.flat.device)
    with eval_mode(model):
        for x, y in data.in_order(batch_size, dist.my_share, model.config.vocab_size):
            logits, _ = model(x)
            total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE,
                                     reduction="sum")
    return dist.sum(total).item() / int(data.lengths.sum())


def finite_mean(losses: list[float], step: int, run_dir: Path) -> float:
    """The mean loss of the steps up to `step`; a loss that is nan or inf stops the run."""
    for at, loss in enumerate(losses, start=step - len(losses) + 1):
        if not math.isfinite(loss):
            kept = f"; the last good checkpoint is {run_dir / 'last.pt'}"
            raise RunError(f"training stopped: the loss became {loss} at step {at}"
                           f"{kept if (run_dir / 'last.pt').exists() else ''}")
    return sum(losses) / len(losses)


def train_loop(trainer: Trainer, run_dir: Path, report: Reporter, signals) -> float | None:
    """Step until done, telling `report`; stop on a signal (`signals.requested`,
    runs/setup.py). Returns the training loss of the last steps logged."""
    recipe, dist = trainer.recipe, trainer.dist
    losses, train_loss = PendingLosses(dist), None  # losses not yet read from the device
    report.start(trainer)
    trainer.clock.started = time.perf_counter()
    while True:
        # one step: the scheduled learning rate, the next batch, forward, backward, update
        losses.add(*trainer.train_step())

        # every rank stops at the same step: when any rank's clock runs out or is signalled
        finished, signalled = dist.agree_to_stop(trainer.done(), signals.requested)
        at_eval = trainer.step % recipe.eval_interval == 0 or finished

        # log: the one wait for the device per log_interval steps
        if len(losses) == recipe.log_interval or at_eval or signalled:
            train_loss = finite_mean(losses.read(), trainer.step, run_dir)
            report.log(trainer, train_loss)
        report.step(trainer)

        # evaluate and save: best.pt when the validation loss is the best yet, last.pt always
        if at_eval:
            if trainer.validate():
                # written by rank 0, with every rank's state
                save_trainer(trainer, run_dir / "best.pt")
            report.saving(trainer, run_dir)
            save_trainer(trainer, run_dir / "last.pt")
            report.evaluation(trainer, trainer.samples() if dist.main else [])
            if trainer.stopped_early:  # every rank saw the same validation loss: all stop here
                return train_loss

        # stop: at the end, or after a signal with a checkpoint to resume from
        if signalled and not finished:
            report.saving(trainer, run_dir)
            save_trainer(trainer, run_dir / "last.pt")
            saved = run_dir / "last.pt"
            raise Interrupted(f"interrupted at step {trainer.step}; saved {saved}. "
                              f"Resume with: minigpt train --resume {run_dir}", signalled)
        if finished:
            return train_loss
