"""The training loop: batches of names, Adam(W) or Muon, warmup then decay, evaluation, checkpoints.

A run can stop and go on again without changing a number: the batch order is a pure
function of (seed, step), and a checkpoint holds the model, the optimizer, the step, the
clock and the random number generators.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from minigpt import report
from minigpt.checkpoint import RESUME_ORDER, read_checkpoint, save_checkpoint
from minigpt.config import Config, TrainConfig, config_from_dict, load_config, scale_to_data
from minigpt.distributed import Distributed, setup as setup_distributed
from minigpt.data import BUNDLED_NAMES, IGNORE, BatchOrder, Tokenizer, TokenizedNames, read_names, split_names
from minigpt.errors import Interrupted, RunError, UsageError, first_line
from minigpt.membership import NameSet, fingerprints
from minigpt.model import GPT
from minigpt.optim import make_optimizer


@dataclass
class TrainResult:
    run_dir: Path
    steps: int
    seconds: float  # time spent in training steps (evaluation and saving excluded)
    tokens: int  # predicted tokens trained on (padding excluded)
    train_loss: float | None
    val_loss: float | None
    best_val_loss: float | None
    samples: list[tuple[str, bool]] = field(default_factory=list)  # (name, seen in training)
    best_step: int | None = None  # the step of the best validation loss
    ended_on_best: bool = False  # the model was set back to its best weights at the end
    stopped_early: bool = False  # train.patience evaluations passed without a better validation loss

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def keep_freed_memory() -> None:
    """Ask glibc to keep large freed blocks for reuse instead of returning them to the OS.

    A training step allocates and frees the same few multi-megabyte activations every time.
    By default glibc serves each with a fresh mmap, and the first touch of every page then
    faults: thousands of faults a step, and ~10-20% of the step's time on 2 CPU cores.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's ceiling for this setting
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    except (OSError, AttributeError):
        pass  # not glibc (macOS, Windows, musl): nothing to tune


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


def resolve_device(name: str) -> torch.device:
    """"auto" is CUDA when there is one, else the CPU; anything else must exist here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UsageError(f"unknown device '{name}' (expected auto, cpu, cuda, cuda:N or mps)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"device '{name}' asked for, but CUDA is not available on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"device '{name}' asked for, but there are {torch.cuda.device_count()} CUDA devices")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError("device 'mps' asked for, but MPS is not available on this machine")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"unsupported device '{name}' (expected auto, cpu, cuda, cuda:N or mps)")
    return device


def lr_at(step: int, progress: float, t: TrainConfig) -> float:
    """Linear warmup over warmup_steps, then constant, linear to 0 (microgpt) or cosine to min_lr.

    `progress` is how much of the run is done, from 0 to 1: by steps, or by time with a time limit.
    """
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    if t.lr_schedule == "constant":
        return t.lr
    if t.lr_schedule == "linear":
        return t.lr * (1 - progress)
    return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


@torch.no_grad()
def evaluate(model: GPT, data: TokenizedNames, batch_size: int = 256, dist: Distributed = Distributed()) -> float:
    """Mean cross-entropy per predicted token over every name in `data` (each rank scores its share)."""
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=data.flat.device)
    for x, y in data.in_order(batch_size, dist.shard):
        logits, _ = model(x)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum")
    model.train(was_training)
    return dist.sum(total).item() / int(data.lengths.sum())


def evaluate_names(model: GPT, tokenizer: Tokenizer, names: list[str], what: str = "names") -> dict:
    """Loss of a trained model on a list of names: {"loss", "tokens", "names", "truncated"}."""
    tokenizer.check("".join(names), what)
    device = model.lm_head.weight.device
    data = TokenizedNames(names, tokenizer, model.config.block_size).to(device)
    return {
        "loss": evaluate(model, data),
        "tokens": int(data.lengths.sum()),
        "names": len(names),
        "truncated": data.truncated,
    }


def compile_failed(e: Exception) -> RunError:
    """torch.compile's failure in one line, with the way round it."""
    reason = first_line(e.inner_exception)
    return RunError(f"torch.compile failed ({reason}); set train.compile=false to train without it")


def new_run_dir() -> Path:
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = Path("runs") / stamp, 1
    while path.exists():
        n += 1
        path = Path("runs") / f"{stamp}_{n}"
    return path


def prepare_run_dir(out_dir: str | Path | None, overwrite: bool) -> Path:
    """Create the run directory; refuse to mix a new run into an old one unless told to."""
    run_dir = Path(out_dir) if out_dir is not None else new_run_dir()
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()) and not overwrite:
        raise UsageError(f"run directory {run_dir} is not empty; pass --overwrite to replace its run")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write to run directory {run_dir}: {e.strerror or e}") from None
    return run_dir


def load_data(config: Config, data_path, val_path):
    """Training and validation names, and the vocabulary of the training file."""
    t = config.train
    names = read_names(data_path)
    tokenizer = Tokenizer.from_names(names)
    if val_path is not None:
        train_names, val_names = names, read_names(val_path)
        tokenizer.check("".join(val_names), f"validation file {val_path}")
    else:
        train_names, val_names = split_names(names, t.val_fraction, t.val_max, t.seed)
    return train_names, val_names, tokenizer


def digest(names: list[str]) -> str:
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()


class Trainer:
    """A training run's state: model, optimizer, data, and how far it has got."""

    def __init__(self, config: Config, train_names, val_names, tokenizer: Tokenizer, device, data_path, val_path=None,
                 dist: Distributed = Distributed()):
        self.config, self.t = config, config.train
        self.tokenizer, self.dist = tokenizer, dist
        torch.manual_seed(self.t.seed)
        self.model = GPT(config.model).to(device)
        self.net = self.model  # what training steps call: the model, or DDP around it
        if dist.enabled:
            if self.t.batch_size % dist.world:
                raise UsageError(f"train.batch_size ({self.t.batch_size}) must be a multiple of the "
                                 f"number of processes ({dist.world})")
            ids = [device.index] if device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
            torch.manual_seed(self.t.seed + 1_000_003 * dist.rank)  # each rank its own dropout masks
        if self.t.compile:
            # dynamic: batches are cut to their longest name, so the length changes from step to step;
            # one graph for every length, rather than one for the first length and then another
            self.net = torch.compile(self.net, dynamic=True)
        self.optimizer = make_optimizer(self.model, self.t)
        on_bf16_gpu = device.type == "cuda" and torch.cuda.is_bf16_supported()
        self.bfloat16 = self.t.precision == "bfloat16" or (self.t.precision == "auto" and on_bf16_gpu)
        block_size = config.model.block_size
        train_data = TokenizedNames(train_names, tokenizer, block_size)
        # one fingerprint per name (on the CPU): repeated names are counted, and large corpora get a Bloom filter
        prints = torch.unique(fingerprints(train_data.flat, train_data.starts + 1, train_data.characters))
        characters = int(train_data.characters.sum())
        self.membership = NameSet.for_corpus(train_names, characters, prints, tokenizer)
        self.train_data = train_data.to(device)
        self.val_data = TokenizedNames(val_names, tokenizer, block_size).to(device) if val_names else None
        self.order = BatchOrder(len(self.train_data), self.t.batch_size, self.t.seed, self.t.shuffle == "epoch",
                                self.train_data.lengths, self.t.length_window)
        self.data_info = {
            "path": str(Path(data_path).resolve()) if data_path else None,
            "val_path": str(Path(val_path).resolve()) if val_path else None,
            "train_names": len(train_names),
            "val_names": len(val_names),
            "characters": characters,
            "duplicates": len(train_names) - len(prints),
            "vocab_size": tokenizer.vocab_size,
            "truncated": self.train_data.truncated,
            "train_digest": digest(train_names),
            "val_digest": digest(val_names),
        }
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

    def start_clock(self) -> None:
        self._clock = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds of training so far, evaluation included, across resumes."""
        return self._elapsed + (time.perf_counter() - self._clock if self._clock is not None else 0.0)

    def progress(self) -> float:
        """How much of the run is done, 0 to 1; the learning-rate schedule follows it."""
        if self.t.time_limit > 0:
            return min(1.0, self.elapsed / self.t.time_limit)
        warmup = min(self.t.warmup_steps, self.step)
        return (self.step - warmup) / max(1, self.t.steps - warmup)

    def done(self) -> bool:
        if self.stopped_early:
            return True
        if self.t.time_limit > 0:
            return self.elapsed >= self.t.time_limit
        return self.step >= self.t.steps

    def train_step(self) -> tuple[torch.Tensor, int]:
        """One optimizer step on the next batch.

        Returns this rank's summed loss (left on the device) and the batch's predicted tokens:
        summed over the ranks and divided, that is the batch's mean loss.
        """
        started = time.perf_counter()
        self.lr = lr_at(self.step, self.progress(), self.t)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr * group.get("lr_scale", 1.0)  # Muon's group has its own peak
        indices = self.order.indices(self.step)
        mine = self.dist.shard(indices)
        batch_tokens, my_tokens = int(self.train_data.lengths[indices].sum()), int(self.train_data.lengths[mine].sum())
        x, y = self.train_data.batch(mine)
        try:
            # with bfloat16, matrix multiplies run in bfloat16; weights, gradients and the loss stay float32
            with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.bfloat16):
                _, loss = self.net(x, y)  # mean over this rank's tokens
            # DDP averages gradients over ranks; weighting by token share makes that the whole batch's mean
            (loss * (my_tokens * self.dist.world / batch_tokens)).backward()
        except torch._dynamo.exc.BackendCompilerFailed as e:  # only with train.compile: no C++ compiler, ...
            raise compile_failed(e) from e
        if self.t.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.t.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens += batch_tokens
        self.seconds += time.perf_counter() - started
        return loss.detach() * my_tokens, batch_tokens

    def evaluate(self) -> bool:
        """Validation loss now; True when it is the best so far (or there is no validation set)."""
        if self.val_data is None:
            return True
        self.val_loss = evaluate(self.model, self.val_data, dist=self.dist)
        if self.best_val_loss is None or self.val_loss < self.best_val_loss:
            self.best_val_loss, self.best_step, self.evals_since_best = self.val_loss, self.step, 0
            if self.t.keep_best:
                self.best_weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            return True
        self.evals_since_best += 1
        return False

    @property
    def stopped_early(self) -> bool:
        """Whether train.patience evaluations have passed without a better validation loss."""
        return 0 < self.t.patience <= self.evals_since_best

    def end_on_best(self, best_checkpoint: Path) -> bool:
        """With train.keep_best, set the model back to its best weights when later steps did worse."""
        if not self.t.keep_best or self.best_step in (None, self.step):
            return False
        weights = self.best_weights
        if weights is None:  # resumed after the best step: its weights are in best.pt
            weights = read_checkpoint(best_checkpoint)[1]["model"]
        self.model.load_state_dict(weights)
        return True

    def samples(self, num: int = 8) -> list[tuple[str, bool]]:
        """A few names from the model now, each with whether it is a training name.

        The same seed every time, so successive evaluations show the same draws getting better.
        """
        from minigpt.sampling import generate

        names = generate(self.model, self.tokenizer, num, temperature=self.config.sample.temperature, seed=self.t.seed)
        return [(name, name in self.membership) for name in names]

    def save(self, path: Path) -> None:
        """Rank 0 writes; every rank must call it, since each hands over its random state."""
        ranks = self.dist.gather(torch.get_rng_state())
        rng = {"torch": ranks[0], "ranks": ranks}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        if not self.dist.main:
            return
        save_checkpoint(path, {
            "model": self.model.state_dict(),
            "config": self.config.to_dict(),
            "vocab": self.tokenizer.chars,
            "step": self.step,
            "val_loss": self.val_loss,
            "best_val_loss": self.best_val_loss,
            "membership": self.membership.to_payload(),
            "optimizer": self.optimizer.state_dict(),
            "data": self.data_info,
            "progress": {"tokens": self.tokens, "seconds": self.seconds, "elapsed": self.elapsed,
                         "best_step": self.best_step, "evals_since_best": self.evals_since_best},
            "rng": rng,
        })

    def restore(self, raw: dict, path: Path) -> None:
        """Continue from a checkpoint of this same run: every number as it was when it was saved."""
        for key in ("train_digest", "val_digest"):
            if raw["data"].get(key) != self.data_info[key]:
                raise UsageError(f"{path}: the names have changed since this run started; resuming needs the same data")
        if "optimizer" not in raw or "rng" not in raw:
            raise UsageError(f"{path}: this checkpoint holds no training state to resume from")
        self.model.load_state_dict(raw["model"])
        try:
            self.optimizer.load_state_dict(raw["optimizer"])
        except (ValueError, KeyError):
            raise UsageError(f"{path}: its optimizer state does not fit train.optimizer = "
                             f"'{self.t.optimizer}'; resume with the optimizer it was trained with") from None
        self.step, self.val_loss, self.best_val_loss = raw["step"], raw["val_loss"], raw["best_val_loss"]
        self.tokens, self.seconds, self._elapsed = (raw["progress"][k] for k in ("tokens", "seconds", "elapsed"))
        self.best_step = raw["progress"].get("best_step")  # absent from checkpoints of earlier versions
        self.evals_since_best = raw["progress"].get("evals_since_best", 0)
        ranks = raw["rng"].get("ranks", [raw["rng"]["torch"]])
        if len(ranks) == self.dist.world:  # the same number of processes: each rank's own state
            torch.set_rng_state(ranks[self.dist.rank])
        elif self.dist.main:
            torch.set_rng_state(raw["rng"]["torch"])
        if "cuda" in raw["rng"] and torch.cuda.is_available() and not self.dist.enabled:
            torch.cuda.set_rng_state_all(raw["rng"]["cuda"])


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


def resume_config(checkpoint: str | Path, overrides: list[str] = ()) -> Config:
    """The recipe a checkpoint was trained with, plus `--set` overrides to its [train] and [sample] keys."""
    path, raw = read_checkpoint(checkpoint, prefer=RESUME_ORDER)
    config = config_from_dict(raw["config"])
    updated = load_config(None, overrides, base=config)
    if updated.model != config.model:
        raise UsageError("the model's shape cannot change when resuming; only [train] and [sample] keys can")
    return updated


def train(
    config: Config,
    data_path: str | Path | None = None,
    val_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    resume_from: str | Path | None = None,
) -> TrainResult:
    """Train a GPT on a names file; write best.pt, last.pt, config.toml and metrics.jsonl to the run directory.

    With `resume_from` (a run directory or checkpoint), continue that run where it stopped,
    in its own directory, on the data it was trained on. Under torchrun, every process
    calls this; rank 0 alone prints and writes.
    """
    t = config.train
    device = resolve_device(t.device)
    if device.type == "cpu":
        keep_freed_memory()
    dist = setup_distributed(device)
    try:
        result = train_on(config, dist, data_path, val_path, out_dir, overwrite, quiet or not dist.main, resume_from)
        dist.barrier()  # no rank tears the group down while rank 0 still writes: gloo may abort the early leaver
        return result
    finally:
        dist.close()


def train_on(config, dist, data_path, val_path, out_dir, overwrite, quiet, resume_from) -> TrainResult:
    raw = None
    if resume_from is not None:
        checkpoint_path, raw = read_checkpoint(resume_from, prefer=RESUME_ORDER)
        data_path = data_path or raw["data"].get("path")
        val_path = val_path or raw["data"].get("val_path")
    train_names, val_names, tokenizer = load_data(config, data_path or BUNDLED_NAMES, val_path)
    # what train.auto_scale changed, for the start panel (a resumed run keeps the recipe it was scaled to)
    scaled = scale_to_data(config, len(train_names)) if raw is None else []
    config.model.vocab_size = tokenizer.vocab_size
    trainer = Trainer(config, train_names, val_names, tokenizer, dist.device, data_path or BUNDLED_NAMES, val_path, dist)
    if raw is not None:
        trainer.restore(raw, checkpoint_path)
        if trainer.done():
            raise UsageError(f"{checkpoint_path}: the run is already complete at step {trainer.step}; "
                             f"raise train.steps, train.time_limit or train.patience to train longer")
    resumed_dir = checkpoint_path.parent if raw is not None else None
    run_dir = dist.broadcast(prepared_run_dir(resumed_dir, out_dir, overwrite) if dist.main else None)
    if isinstance(run_dir, str):  # rank 0 could not prepare it; every rank stops with its reason
        raise UsageError(run_dir)
    console = report.console(quiet)
    report.start(console, run_dir, dist.device, trainer.model, config, trainer.data_info,
                 resumed_at=trainer.step if raw else None, processes=dist.world, notes=scaled)
    train_loss = run_loop(trainer, run_dir, console, quiet, resumed=raw is not None)
    ended_on_best = trainer.end_on_best(run_dir / "best.pt")  # so the summary's samples come from it
    if dist.main:
        write_loss_png_if_possible(run_dir)
    result = TrainResult(
        run_dir=run_dir,
        steps=trainer.step,
        seconds=trainer.seconds,
        tokens=trainer.tokens,
        train_loss=train_loss,
        val_loss=trainer.val_loss,
        best_val_loss=trainer.best_val_loss,
        samples=trainer.samples(10) if dist.main else [],
        best_step=trainer.best_step,
        ended_on_best=ended_on_best,
        stopped_early=trainer.stopped_early,
    )
    if dist.main:
        report.summary(console, result)
    return result


def prepared_run_dir(resumed_dir: Path | None, out_dir, overwrite) -> Path | str:
    """The run directory, ready to write to (the error message instead, to share with other ranks)."""
    if resumed_dir is not None:
        for leftover in resumed_dir.glob(".*.pt.*.tmp"):  # from a process killed while it saved
            leftover.unlink(missing_ok=True)
        return resumed_dir
    try:
        return prepare_run_dir(out_dir, overwrite)
    except UsageError as e:
        return str(e)


def write_loss_png_if_possible(run_dir: Path) -> None:
    """loss.png beside the checkpoints, when matplotlib is installed."""
    from minigpt.plot import write_loss_png

    try:
        write_loss_png(run_dir, run_dir / "loss.png")
    except UsageError:
        pass  # no matplotlib: `minigpt plot` says how to get it


def keep_records_up_to(path: Path, step: int, step_of) -> None:
    """Drop lines logged after `step` (a process killed after its last checkpoint wrote them)."""
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(line for line in lines if step_of(line) <= step), encoding="utf-8")


def run_loop(trainer: Trainer, run_dir: Path, console, quiet: bool, resumed: bool) -> float | None:
    """Step until done, logging every log_interval steps and evaluating and saving every eval_interval."""
    t, dist = trainer.t, trainer.dist
    records = RunRecords(run_dir, trainer, resumed) if dist.main else None
    timed = t.time_limit > 0
    pending: list[tuple[torch.Tensor, int]] = []  # (summed loss, tokens) of steps not yet read from the device
    train_loss = None

    def read_losses() -> float | None:
        """The mean loss of the pending steps: the one wait for the device (and the ranks) per log line."""
        if not pending:
            return train_loss
        sums = dist.sum(torch.stack([loss for loss, _ in pending]).double())
        values = [total / tokens for total, (_, tokens) in zip(sums.tolist(), pending)]
        first = trainer.step - len(values) + 1
        pending.clear()
        for i, value in enumerate(values):
            if not math.isfinite(value):
                kept = f"; the last good checkpoint is {run_dir / 'last.pt'}" if (run_dir / "last.pt").exists() else ""
                raise RunError(f"training stopped: the loss became {value} at step {first + i}{kept}")
        return sum(values) / len(values)

    # a log file or a pipe gets no carriage-return redraws: a plain line at each evaluation instead
    plain = not quiet and not sys.stderr.isatty()
    bar = tqdm(
        total=round(t.time_limit) if timed else t.steps,
        initial=round(trainer.elapsed) if timed else trainer.step,
        unit="s" if timed else "step",
        desc="train",
        disable=quiet or plain,
        dynamic_ncols=True,
        leave=False,
    )
    with StopSignals() as signals, bar:
        trainer.start_clock()
        while True:
            pending.append(trainer.train_step())
            # every rank stops at the same step: when any rank's clock runs out or any rank is signalled
            done, stop = dist.max([float(trainer.done()), float(signals.requested or 0)])
            finished, stop = bool(done), int(stop)
            at_eval = trainer.step % t.eval_interval == 0 or finished
            if len(pending) == t.log_interval or at_eval or stop:
                train_loss = read_losses()
                if records:
                    records.log(train_loss=train_loss, lr=trainer.lr,
                                tokens_per_sec=round(trainer.tokens / trainer.seconds, 1))
                bar.set_postfix(loss=f"{train_loss:.4f}", val=report.fmt_loss(trainer.val_loss),
                                tok_s=f"{trainer.tokens / trainer.seconds / 1000:.1f}k", refresh=False)
            bar.update(round(trainer.elapsed) - bar.n if timed else 1)
            if at_eval:
                if plain and dist.main:
                    console.print(report.progress_line(trainer, t, train_loss), soft_wrap=True)
                if trainer.evaluate():
                    trainer.save(run_dir / "best.pt")
                trainer.save(run_dir / "last.pt")
                if records:
                    records.evaluation(console, quiet)
                if trainer.stopped_early:  # every rank saw the same validation loss, so all stop here
                    return train_loss
            if stop and not finished:
                trainer.save(run_dir / "last.pt")
                raise Interrupted(
                    f"interrupted at step {trainer.step}; saved {run_dir / 'last.pt'}. "
                    f"Resume with: minigpt train --resume {run_dir}",
                    stop,
                )
            if finished:
                return train_loss


class RunRecords:
    """The run directory's records, kept by rank 0: config.toml, metrics.jsonl and samples.txt."""

    def __init__(self, run_dir: Path, trainer: Trainer, resumed: bool):
        self.trainer = trainer
        (run_dir / "config.toml").write_text(report.config_toml(trainer.config), encoding="utf-8")
        if resumed:
            keep_records_up_to(run_dir / "metrics.jsonl", trainer.step, lambda line: json.loads(line)["step"])
            keep_records_up_to(run_dir / "samples.txt", trainer.step, lambda line: int(line.split()[1]))
        mode = "a" if resumed else "w"
        self.metrics = (run_dir / "metrics.jsonl").open(mode, encoding="utf-8")
        self.samples = (run_dir / "samples.txt").open(mode, encoding="utf-8")

    def log(self, **values) -> None:
        record = {"step": self.trainer.step, **values, "elapsed": round(self.trainer.elapsed, 3)}
        self.metrics.write(json.dumps(record) + "\n")
        self.metrics.flush()

    def evaluation(self, console, quiet: bool) -> None:
        """After an evaluation: its loss in the metrics, and samples in samples.txt and on screen."""
        trainer = self.trainer
        if trainer.val_loss is not None:
            self.log(val_loss=trainer.val_loss)
        names = trainer.samples()
        self.samples.write(report.samples_line(trainer.step, trainer.val_loss, names) + "\n")
        self.samples.flush()
        if not quiet:
            with tqdm.external_write_mode(file=sys.stderr):
                report.samples_table(console, trainer.step, trainer.val_loss, names)
