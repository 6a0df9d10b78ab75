"""The training loop. Read `train_loop` first: one `while True:` that takes a step, logs,
evaluates and saves, and stops. `Trainer` holds what it works on (the model, the optimizer,
the data, how far the run has got) and takes one step. The loop tells a `Reporter` what
happens; runs/run.py sets a run up around it (`minigpt.train`). A run can stop and go on
without changing a number: the batch order is a function of (seed, step), and a checkpoint
holds the rest.

With this folder's files and torch alone (the README's "Map of the code" runs it):

    config = Config(model=GPTConfig(n_layer=2), train=TrainConfig(steps=200, eval_interval=50))
    trainer = Trainer.from_names(config, names)  # a tenth held out (train.val_fraction)
    train_loop(trainer, Path("out"), Reporter())      # writes out/best.pt and out/last.pt
    print(trainer.samples())"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import Config, check_recipe
from .data import IGNORE, BatchOrder, TokenizedNames, Tokenizer, check_names, split_names
from .errors import Interrupted, RunError, UsageError
from .model import GPT, eval_mode, load_microgpt_weights, microgpt_weights
from .optimizer import lr_at, make_optimizer
from .sampling import generate


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
    def end(self, trainer: Trainer, result: Any) -> None: ...


class OneProcess:
    """What the loop asks of the processes a run spans, answered for one: each call hands back
    what it was given. machine/processes.py's Distributed answers the same calls for several
    (torchrun, DDP), where each process trains on its share of every batch."""

    rank, world, main, enabled = 0, 1, True, False

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)

    def my_share(self, items: torch.Tensor) -> torch.Tensor:
        return items

    def weighted_for_whole_batch(
        self, loss: torch.Tensor, my_tokens: int, batch_tokens: int
    ) -> torch.Tensor:
        return loss

    def agree_to_stop(self, done: bool, signal: int | None) -> tuple[bool, int]:
        return done, signal or 0

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def gather(self, item: Any) -> list[Any]:
        return [item]

    def barrier(self) -> None: ...

    def wrap(self, model: nn.Module, batch_size: int, seed: int) -> nn.Module:
        return model


class PendingLosses:
    """The summed losses of steps not yet read from the device. Reading a loss waits for the
    device (and for every process), so the loop reads them once per log line, not every step."""

    def __init__(self, dist: OneProcess) -> None:
        self.dist = dist
        self.steps: list[tuple[torch.Tensor, int]] = []  # (summed loss, tokens) per step

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, loss_sum: torch.Tensor, tokens: int) -> None:
        self.steps.append((loss_sum, tokens))

    def read(self) -> list[float]:
        """The mean loss per token of each pending step, summed over the processes."""
        sums = self.dist.sum(torch.stack([loss for loss, _ in self.steps]).double())
        values = [total / tokens for total, (_, tokens) in zip(sums.tolist(), self.steps)]
        self.steps.clear()
        return values


@dataclass
class Clock:
    """Wall-clock seconds of training, evaluation included, across resumes."""

    before: float = 0.0  # seconds before this stretch of the run
    started: float | None = None  # when it began (time.perf_counter)

    @property
    def elapsed(self) -> float:
        return self.before + (time.perf_counter() - self.started if self.started else 0.0)


CORE = ("config", "errors", "model", "attention", "data", "optimizer", "sampling", "training")


def core_digest() -> str:
    """The sha256 of the core's files as they are now, in a copied-out folder too: which code
    trained a model. An edited core (a new activation, say) trains other models under the same
    recipe, and `minigpt compare` keeps its runs apart by this."""
    digest = hashlib.sha256()
    for name in CORE:
        digest.update(Path(__file__).with_name(f"{name}.py").read_bytes())
    return digest.hexdigest()


def resolved_precision(precision: str) -> str:
    """train.precision "auto" by a fixed rule: float32, on every device. A rule, never a timing,
    so that one command trains one model on one machine; and at these sizes bfloat16's casts
    cost more than its multiplies save, on CPUs and GPUs alike (docs/speed.md measures both)."""
    return "float32" if precision == "auto" else precision


SHARED_FROM = 64  # the first step of a time-limited run's shared evaluations, then every doubling


class Trainer:
    """A run's state (its model, optimizer and data, and how far it has got), and its step."""

    def __init__(
        self,
        config: Config,
        tokenizer: Tokenizer,
        train_data: TokenizedNames,
        val_data: TokenizedNames | None = None,
        dist: OneProcess | None = None,
        membership: Any = None,
        data_info: dict[str, Any] | None = None,
    ):
        """`train_data`, `val_data`: the names as ids, on the device the run trains on;
        `dist`: the processes the run spans (OneProcess()); `membership`: "is this a training
        name?" (`in`), for the samples; `data_info`: what the run records of its names."""
        check_recipe(config)  # the same refusals, in the same words, as the command line's
        self.config, self.recipe = config, config.train
        self.tokenizer, self.dist = tokenizer, dist or OneProcess(train_data.flat.device)
        torch.manual_seed(self.recipe.seed)
        self.model = GPT(config.model).to(self.dist.device)
        self.model_for_steps: Callable[..., Any] = self.dist.wrap(
            self.model, self.recipe.batch_size, self.recipe.seed
        )
        if self.recipe.compile:  # dynamic: one graph for every batch width, not one a width
            self.model_for_steps = torch.compile(self.model_for_steps, dynamic=True)
        self.optimizer = make_optimizer(self.model, self.recipe)
        self.recipe.precision = resolved_precision(self.recipe.precision)  # recorded as resolved
        self.bfloat16 = self.recipe.precision == "bfloat16"
        self.train_data, self.val_data = train_data, val_data
        self.membership = membership if membership is not None else set()
        self.data_info = data_info or {}
        self.order = BatchOrder(
            len(self.train_data),
            self.recipe.batch_size,
            self.recipe.seed,
            self.recipe.shuffle == "epoch",
            self.train_data.lengths,
            self.recipe.length_window,
        )
        self.step, self.lr = 0, 0.0  # optimizer steps taken; the latest step's learning rate
        self.tokens, self.seconds = 0, 0.0  # predicted tokens trained on; seconds in steps
        self.clock = Clock()
        # the latest and the best validation loss
        self.val_loss: float | None = None
        self.best_val_loss: float | None = None
        self.best_step: int | None = None
        self.evals_since_best = 0  # evaluations since the best one, for train.patience
        self.code = {"core": core_digest()}  # which code trains it (a run adds its version, commit)

    @classmethod
    def from_names(
        cls,
        config: Config,
        names: list[str],
        val_names: list[str] | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> Trainer:
        """A Trainer for lists of names, the vocabulary theirs unless `tokenizer` is given. With
        no `val_names`, train.val_fraction of `names` (at most train.val_max) are held out,
        chosen by train.split_seed; the run is on train.device ("auto": CUDA where there is one)."""
        t = config.train
        names = check_names(names, "the training names", at_least=1)
        if val_names is None:
            names, val_names = split_names(names, t.val_fraction, t.val_max, t.split_seed)
        val_names = check_names(val_names, "the validation names")
        tokenizer = tokenizer or Tokenizer.from_names(names)
        config.model.vocab_size = tokenizer.vocab_size
        auto = "cuda" if torch.cuda.is_available() else "cpu"
        device = torch.device(auto if t.device == "auto" else t.device)
        block = config.model.block_size
        train = TokenizedNames(names, tokenizer, block).to(device)
        val = TokenizedNames(val_names, tokenizer, block).to(device) if val_names else None
        return cls(config, tokenizer, train, val, membership=set(names))

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

    def batch_loss(
        self, rows: torch.Tensor, model: Callable[..., Any], bfloat16: bool
    ) -> torch.Tensor:
        """Rows `rows`' mean loss by `model`; bfloat16: only matrix multiplies in bfloat16."""
        x, y = self.train_data.batch(rows)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bfloat16):
            return model(x, y)[1]

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

    def shared_step(self) -> bool:
        """Whether a time-limited run is at step 64, 128, 256, ...: it takes as many steps as the
        machine gives it, so it also evaluates where any two such runs meet, and their losses
        compare at equal steps (minigpt compare); patience counts only its eval_interval."""
        step = self.step
        return self.recipe.time_limit > 0 and step >= SHARED_FROM and step & (step - 1) == 0

    def validate(self, counts: bool = True) -> bool:
        """Measure the validation loss; True when it is the best so far (or there is none).
        `counts`: an evaluation that counts toward train.patience."""
        if self.val_data is None:
            return True
        self.val_loss = evaluate(self.model, self.val_data, dist=self.dist)
        if self.best_val_loss is None or self.val_loss < self.best_val_loss:
            self.best_val_loss = self.val_loss
            self.best_step = self.step
            self.evals_since_best = 0
            return True
        self.evals_since_best += 1 if counts else 0
        return False

    def samples(self, num: int = 8) -> list[tuple[str, bool]]:
        """Names the model makes now (the same draws each time), and which are training
        names."""
        names = generate(
            self.model,
            self.tokenizer,
            num,
            temperature=self.config.sample.temperature,
            seed=self.recipe.seed,
        )
        return [(name, name in self.membership) for name in names]

    def checkpoint(self) -> dict[str, Any]:
        """The run as the one checkpoint every command reads (`checkpoint_dict`), with what resuming
        needs: the optimizer, the progress and every process's random state (each process calls
        this: it hands over its generator's state)."""
        ranks = self.dist.gather(torch.get_rng_state())
        rng = {"torch": ranks[0], "ranks": ranks}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        progress = {
            "tokens": self.tokens,
            "seconds": self.seconds,
            "elapsed": self.clock.elapsed,
            "best_step": self.best_step,
            "evals_since_best": self.evals_since_best,
        }
        training = {"optimizer": self.optimizer.state_dict(), "progress": progress, "rng": rng}
        return checkpoint_dict(
            self.model,
            self.config,
            self.tokenizer.chars,
            self.step,
            self.val_loss,
            self.best_val_loss,
            self.membership,
            self.data_info,
            training,
            self.code,
        )


FORMAT, VERSION = "minigpt", 1  # what every minigpt checkpoint says it is


def checkpoint_dict(
    model: GPT,
    config: Config,
    vocab: list[str],
    step: int = 0,
    val_loss: float | None = None,
    best_val_loss: float | None = None,
    names: Any = (),
    data: dict[str, Any] | None = None,
    training: dict[str, Any] | None = None,
    code: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A checkpoint: the weights under microgpt's names (wte, layer0.attn_wq, ...), the recipe,
    the vocabulary, how far training got, the training names (`names`: a set, or anything with
    a `to_payload()`, as files/membership.py's Bloom filter), where they came from (`data`) and,
    for a run that may be resumed, `training`, and which `code` trained it (the core's digest at
    least). formats/checkpoint.py reads it back."""
    membership = (
        names.to_payload()
        if hasattr(names, "to_payload")
        else {"kind": "exact", "names": "\n".join(sorted(names))}
    )
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": microgpt_weights(model),
        "config": config.to_dict(),
        "vocab": list(vocab),
        "step": step,
        "val_loss": val_loss,
        "best_val_loss": best_val_loss,
        "membership": membership,
        "data": data or {},
        "code": {"core": core_digest()} if code is None else code,
        **(training or {}),
    }


@torch.no_grad()
def evaluate(
    model: GPT, data: TokenizedNames, batch_size: int = 256, dist: OneProcess = OneProcess()
) -> float:
    """Mean cross-entropy per predicted token (each character and the end) over every name in
    `data`, without dropout. With several processes, each scores its share and the sums are
    added up."""
    total = torch.zeros((), dtype=torch.float64, device=data.flat.device)
    with eval_mode(model):
        for x, y in data.in_order(batch_size, dist.my_share, model.config.vocab_size):
            logits, _ = model(x)
            total += F.cross_entropy(
                logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum"
            )
    return dist.sum(total).item() / int(data.lengths.sum())


def finite_mean(losses: list[float], step: int, run_dir: Path) -> float:
    """The mean loss of the steps up to `step`; a loss that is nan or inf stops the run."""
    for at, loss in enumerate(losses, start=step - len(losses) + 1):
        if not math.isfinite(loss):
            kept = f"; the last good checkpoint is {run_dir / 'last.pt'}"
            raise RunError(
                f"training stopped: the loss became {loss} at step {at}"
                f"{kept if (run_dir / 'last.pt').exists() else ''}"
            )
    return sum(losses) / len(losses)


def from_checkpoint(
    checkpoint: dict[str, Any], device: str | torch.device = "cpu"
) -> tuple[GPT, Tokenizer]:
    """The model and vocabulary of a checkpoint (`torch.load(path, weights_only=True)`), ready to
    sample. minigpt's commands read one through formats/checkpoint.py, which checks every field."""
    config = Config.from_dict(checkpoint["config"])
    tokenizer = Tokenizer(checkpoint["vocab"])
    config.model.vocab_size = tokenizer.vocab_size
    model = GPT(config.model)
    load_microgpt_weights(model, checkpoint["model"])
    return model.to(device).eval(), tokenizer


def save_checkpoint(
    trainer: Trainer, path: Path, write: Callable[[Any, Path], None] = torch.save
) -> None:
    """`write(checkpoint, path)` in the first process, once every process has handed over its
    state; formats/checkpoint.py's write_checkpoint writes it atomically."""
    checkpoint = trainer.checkpoint()
    if trainer.dist.main:
        write(checkpoint, path)
    trainer.dist.barrier()  # no process goes on (or stops) while the first still writes


class NoSignals:
    requested = None


def train_loop(
    trainer: Trainer,
    run_dir: Path,
    report: Reporter,
    signals: Any = NoSignals(),
    save: Callable[[Trainer, Path], None] = save_checkpoint,
) -> float | None:
    """Step until done, telling `report`; stop on a signal (`signals.requested`,
    runs/setup.py). `save(trainer, path)` writes best.pt and last.pt into `run_dir`. Returns the
    training loss of the last steps logged."""
    recipe, dist = trainer.recipe, trainer.dist
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"{run_dir} is a file: the checkpoints go into a folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    losses, train_loss = PendingLosses(dist), None  # losses not yet read from the device
    report.start(trainer)
    trainer.clock.started = time.perf_counter()
    while True:
        # one step: the scheduled learning rate, the next batch, forward, backward, update
        losses.add(*trainer.train_step())

        # every rank stops at the same step: when any rank's clock runs out or is signalled
        finished, signalled = dist.agree_to_stop(trainer.done(), signals.requested)
        scheduled = trainer.step % recipe.eval_interval == 0 or finished
        at_eval = scheduled or trainer.shared_step()

        # log: the one wait for the device per log_interval steps
        if len(losses) == recipe.log_interval or at_eval or signalled:
            train_loss = finite_mean(losses.read(), trainer.step, run_dir)
            report.log(trainer, train_loss)
        report.step(trainer)

        # evaluate and save: best.pt when the validation loss is the best yet, last.pt always
        if at_eval:
            if trainer.validate(counts=scheduled):
                # written by rank 0, with every rank's state
                save(trainer, run_dir / "best.pt")
            report.saving(trainer, run_dir)
            save(trainer, run_dir / "last.pt")
            report.evaluation(trainer, trainer.samples() if dist.main else [])
            if trainer.stopped_early:  # every rank saw the same validation loss: all stop here
                return train_loss

        # stop: at the end, or after a signal with a checkpoint to resume from
        if signalled and not finished:
            report.saving(trainer, run_dir)
            save(trainer, run_dir / "last.pt")
            saved = run_dir / "last.pt"
            raise Interrupted(f"interrupted at step {trainer.step}; saved {saved}", signalled)
        if finished:
            return train_loss
