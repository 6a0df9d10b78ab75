"""The training loop: batches of names, Muon or AdamW, warmup then decay, evaluation, checkpoints.

Read `train_loop` first: one `while True:` that takes a step, logs, evaluates and saves,
and stops. `Trainer` above it holds what the loop works on (the model, the optimizer, the
data and how far the run has got) and takes one step. The loop tells a `Reporter` what
happens (the run's records, the progress bar and a notebook's own code are reporters), and
runs/run.py sets a run up around it (`minigpt.train`).

A run can stop and go on again without changing a number: the batch order is a pure
function of (seed, step), and a checkpoint holds the model, the optimizer, the step, the
clock and the random number generators.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.nn.functional as F

from minigpt.config import Config
from minigpt.data import IGNORE, Batch, BatchOrder, Tokenizer, TokenizedNames
from minigpt.errors import Interrupted, RunError, first_line
from minigpt.formats.checkpoint import load_microgpt_weights, read_model_weights
from minigpt.formats.trainer_state import save_trainer
from minigpt.formats.snapshots import RunSnapshots, run_identity
from minigpt.model import GPT, eval_mode
from minigpt.optimizer import lr_at, make_optimizer
from minigpt.sampling import generate, rows_at_once
from minigpt.scaling.corpus import tokenize_corpus
from minigpt.scaling.fast_dropout import use_fast_dropout
from minigpt.scaling.processes import Distributed, PendingLosses, model_for_steps


@torch.no_grad()
def evaluate(model: GPT, data: TokenizedNames, batch_size: int = 256, dist: Distributed = Distributed()) -> float:
    """Mean cross-entropy per predicted token (each character and the end) over every name in `data`.

    With several processes, each scores its share and the sums are added up.
    """
    total = torch.zeros((), dtype=torch.float64, device=data.flat.device)
    batch_size = rows_at_once(batch_size, model.config.block_size, model.config.vocab_size)
    with eval_mode(model):
        for x, y in data.in_order(batch_size, dist.my_share):
            logits, _ = model(x)
            total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum")
    return dist.sum(total).item() / int(data.lengths.sum())


class Reporter:
    """What the training loop tells about a run as it goes; each method does nothing unless overridden.

    The run's records (runs/records.py) and the progress display (views/training_display.py) are
    reporters; so is a notebook's own, handed to `minigpt.train(..., report=...)` (docs/development.md
    has one that keeps the losses).
    """

    def start(self, trainer: Trainer) -> None:
        """Before the first step of this stretch of the run (a resumed run starts again here)."""

    def step(self, trainer: Trainer) -> None:
        """After every optimizer step."""

    def log(self, trainer: Trainer, train_loss: float) -> None:
        """Every train.log_interval steps, with the mean training loss of the steps since the last log."""

    def evaluation(self, trainer: Trainer, samples: list[tuple[str, bool]]) -> None:
        """After each evaluation and its checkpoints: trainer.val_loss, and a few names the model makes
        now, each with whether it is a training name (the same draws each time)."""

    def end(self, trainer: Trainer, result) -> None:
        """Once, however the run ends: with what it sums up to (runs/run.py's TrainResult), or None when
        it stopped on an error or a signal."""


class Trainer:
    """A training run's state: model, optimizer, data, and how far it has got; and its one step."""

    def __init__(self, config: Config, train_names, val_names, tokenizer: Tokenizer, device, data_path, val_path=None,
                 dist: Distributed = Distributed()):
        self.config, self.recipe, self.tokenizer, self.dist = config, config.train, tokenizer, dist
        torch.manual_seed(self.recipe.seed)
        self.model = GPT(config.model).to(device)
        if device.type == "cpu":
            use_fast_dropout(self.model)
        self.model_for_steps = model_for_steps(self.model, self.recipe, dist)  # DDP and torch.compile, when asked for
        self.optimizer = make_optimizer(self.model, self.recipe)
        on_bf16_gpu = device.type == "cuda" and torch.cuda.is_bf16_supported()
        self.bfloat16 = self.recipe.precision == "bfloat16" or (self.recipe.precision == "auto" and on_bf16_gpu)
        corpus = tokenize_corpus(train_names, val_names, tokenizer, config.model.block_size, device, data_path, val_path)
        self.train_data, self.val_data, self.membership, self.data_info = corpus
        self.order = BatchOrder(len(self.train_data), self.recipe.batch_size, self.recipe.seed,
                                self.recipe.shuffle == "epoch", self.train_data.lengths, self.recipe.length_window)
        self.step = 0  # optimizer steps taken
        self.lr = 0.0  # the learning rate of the latest step
        self.tokens = 0  # predicted tokens trained on
        self.seconds = 0.0  # time spent in training steps
        self.val_loss: float | None = None
        self.best_val_loss: float | None = None
        self.best_step: int | None = None
        self.evals_since_best = 0  # evaluations since the best one, for train.patience
        self.best_weights: dict | None = None  # a copy of the best model's weights, with train.keep_best
        self._elapsed = 0.0  # wall-clock time of the run before the clock was last started
        self._clock: float | None = None
        # the weights at a few steps, to watch attention form (formats/snapshots.py)
        self.snapshots = (RunSnapshots(run_identity(self.data_info, config), self.recipe.steps, self.recipe.snapshots,
                                       self.model, self.recipe.warmup_steps) if self.recipe.snapshots else None)

    def start_clock(self) -> None:
        self._clock = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds of training so far, evaluation included, across resumes."""
        return self._elapsed + (time.perf_counter() - self._clock if self._clock is not None else 0.0)

    def progress(self) -> float:
        """How much of the run is done, 0 to 1; the learning-rate schedule follows it."""
        if self.recipe.time_limit > 0:
            return min(1.0, self.elapsed / self.recipe.time_limit)
        warmup = min(self.recipe.warmup_steps, self.step)
        return (self.step - warmup) / max(1, self.recipe.steps - warmup)

    @property
    def stopped_early(self) -> bool:
        """Whether train.patience evaluations have passed without a better validation loss."""
        return 0 < self.recipe.patience <= self.evals_since_best

    def done(self) -> bool:
        if self.stopped_early:
            return True
        if self.recipe.time_limit > 0:
            return self.elapsed >= self.recipe.time_limit
        return self.step >= self.recipe.steps

    def train_step(self) -> tuple[torch.Tensor, int]:
        """One optimizer step: the scheduled learning rate, the next batch, forward, backward, update.

        Returns this process's summed loss (left on the device) and the batch's predicted tokens:
        summed over the processes and divided, that is the batch's mean loss.
        """
        started = time.perf_counter()
        self.lr = lr_at(self.step, self.progress(), self.recipe)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr * group["lr_scale"]  # Muon's matrices have their own peak
        rows = self.order.indices(self.step)  # the batch: rows of the training names
        my_rows = self.dist.my_share(rows)  # every row, in one process
        batch_tokens, my_tokens = int(self.train_data.lengths[rows].sum()), int(self.train_data.lengths[my_rows].sum())
        x, y, name_length = (self.train_data.packed(my_rows) if self.recipe.pack_names  # short names several a row
                             else Batch(*self.train_data.batch(my_rows), None))
        try:
            # with bfloat16, matrix multiplies run in bfloat16; weights, gradients and the loss stay float32
            with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.bfloat16):
                _, loss = self.model_for_steps(x, y, name_length=name_length)  # the mean over the batch's predicted tokens
            self.dist.weighted_for_whole_batch(loss, my_tokens, batch_tokens).backward()
        except torch._dynamo.exc.BackendCompilerFailed as e:  # only with train.compile: no C++ compiler, ...
            raise RunError(f"torch.compile failed ({first_line(e.inner_exception)}); "
                           f"set train.compile=false to train without it") from e
        if self.recipe.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens += batch_tokens
        self.seconds += time.perf_counter() - started
        if self.snapshots:
            self.snapshots.after_step(self.step, self.model)
        return loss.detach() * my_tokens, batch_tokens

    def validate(self) -> bool:
        """Measure the validation loss; True when it is the best so far (or there is no validation set)."""
        if self.val_data is None:
            return True
        self.val_loss = evaluate(self.model, self.val_data, dist=self.dist)
        if self.best_val_loss is None or self.val_loss < self.best_val_loss:
            self.best_val_loss, self.best_step, self.evals_since_best = self.val_loss, self.step, 0
            if self.recipe.keep_best:
                self.best_weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            return True
        self.evals_since_best += 1
        return False

    def end_on_best(self, best_checkpoint: Path) -> bool:
        """With train.keep_best, set the model back to its best weights when later steps did worse."""
        if not self.recipe.keep_best or self.best_step in (None, self.step):
            return False
        if self.best_weights is not None:
            self.model.load_state_dict(self.best_weights)
        else:  # resumed after the best step, the run has no copy: best.pt holds them
            load_microgpt_weights(self.model, read_model_weights(best_checkpoint))
        return True

    def samples(self, num: int = 8) -> list[tuple[str, bool]]:
        """A few names from the model now, each with whether it is a training name.

        The same seed every time, so successive evaluations show the same draws getting better.
        """
        names = generate(self.model, self.tokenizer, num, temperature=self.config.sample.temperature, seed=self.recipe.seed)
        return [(name, name in self.membership) for name in names]

    def save(self, path: Path) -> None:
        """Rank 0 writes; every rank must call it, since each hands over its random state."""
        save_trainer(self, path)

    def save_snapshots(self, run_dir: Path) -> None:
        """Rank 0 writes the snapshots so far (before last.pt, when one was taken since they were last written)."""
        if self.snapshots and self.dist.main:
            self.snapshots.write(run_dir)

    def finish(self, run_dir: Path) -> bool:
        """End the run: its last step among the snapshots, back to its best weights (with train.keep_best),
        its best step among the snapshots, and the snapshots written. True when it went back."""
        if self.snapshots:
            self.snapshots.keep(self.step, self.model)
        ended_on_best = self.end_on_best(run_dir / "best.pt")
        if ended_on_best and self.snapshots:
            self.snapshots.keep(self.best_step, self.model)
        self.save_snapshots(run_dir)
        return ended_on_best


def train_loop(trainer: Trainer, run_dir: Path, report: Reporter, signals) -> float | None:
    """Step until done: log every log_interval steps, evaluate and save every eval_interval, stop when told.

    `report` hears of each (on rank 0; the other ranks pass a bare Reporter). `signals.requested` is the
    number of a signal asking the run to stop (runs/setup.py's StopSignals), or None.
    Returns the training loss of the last steps logged.
    """
    recipe, dist = trainer.recipe, trainer.dist
    losses = PendingLosses(dist, run_dir)
    train_loss = None
    report.start(trainer)
    trainer.start_clock()
    while True:
        # one step: the scheduled learning rate, the next batch, forward, backward, update
        losses.add(*trainer.train_step())

        # every rank stops at the same step: when any rank's clock runs out or any rank is signalled
        finished, signalled = dist.agree_to_stop(trainer.done(), signals.requested)
        at_eval = trainer.step % recipe.eval_interval == 0 or finished

        # log: the one wait for the device per log_interval steps
        if len(losses) == recipe.log_interval or at_eval or signalled:
            train_loss = losses.mean(trainer.step)
            report.log(trainer, train_loss)
        report.step(trainer)

        # evaluate and save: best.pt when the validation loss is the best yet, last.pt always
        if at_eval:
            if trainer.validate():
                trainer.save(run_dir / "best.pt")
            trainer.save_snapshots(run_dir)  # first: a resumed run finds every snapshot up to last.pt's step
            trainer.save(run_dir / "last.pt")
            report.evaluation(trainer, trainer.samples() if dist.main else [])
            if trainer.stopped_early:  # every rank saw the same validation loss, so all stop here
                return train_loss

        # stop: at the end, or after a signal with a checkpoint to resume from
        if signalled and not finished:
            trainer.save_snapshots(run_dir)  # first: a resumed run finds every snapshot up to last.pt's step
            trainer.save(run_dir / "last.pt")
            raise Interrupted(f"interrupted at step {trainer.step}; saved {run_dir / 'last.pt'}. "
                              f"Resume with: minigpt train --resume {run_dir}", signalled)
        if finished:
            return train_loss
