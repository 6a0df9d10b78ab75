"""The training loop: batches of names, Adam(W), warmup then decay, evaluation, checkpoints."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from minigpt import report
from minigpt.checkpoint import save_checkpoint
from minigpt.config import Config, TrainConfig
from minigpt.data import BUNDLED_NAMES, IGNORE, BatchOrder, Tokenizer, TokenizedNames, read_names, split_names
from minigpt.errors import RunError, UsageError
from minigpt.model import GPT

LOG_EVERY = 10  # steps between reading the loss back from the device


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

    @property
    def tokens_per_sec(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


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


def lr_at(step: int, t: TrainConfig) -> float:
    """Linear warmup over warmup_steps, then constant, linear to 0 (microgpt) or cosine to min_lr."""
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    if t.lr_schedule == "constant":
        return t.lr
    if t.lr_schedule == "linear":
        return t.lr * (1 - step / t.steps)
    progress = (step - t.warmup_steps) / max(1, t.steps - t.warmup_steps)
    return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1 + math.cos(math.pi * progress))


def make_optimizer(model: GPT, t: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """Weight decay on matrices only; norm gains are not pulled towards zero."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": t.weight_decay}, {"params": others, "weight_decay": 0.0}]
    kind = torch.optim.AdamW if t.optimizer == "adamw" else torch.optim.Adam
    return kind(groups, lr=t.lr, betas=(t.beta1, t.beta2), eps=t.eps, fused=device.type == "cuda")


@torch.no_grad()
def evaluate(model: GPT, data: TokenizedNames, batch_size: int = 1024) -> float:
    """Mean cross-entropy per predicted token over every name in `data`."""
    was_training = model.training
    model.eval()
    total = torch.zeros((), device=data.x.device)
    for x, y in data.in_order(batch_size):
        logits, _ = model(x)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE, reduction="sum")
    model.train(was_training)
    return total.item() / int(data.lengths.sum())


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
    names = read_names(data_path or BUNDLED_NAMES)
    tokenizer = Tokenizer.from_names(names)
    if val_path is not None:
        train_names, val_names = names, read_names(val_path)
        tokenizer.check("".join(val_names), f"validation file {val_path}")
    else:
        train_names, val_names = split_names(names, t.val_fraction, t.val_max, t.seed)
    return train_names, val_names, tokenizer


class Trainer:
    """A training run's state: model, optimizer, data, and how far it has got."""

    def __init__(self, config: Config, train_names, val_names, tokenizer: Tokenizer, device, data_path):
        self.config, self.t = config, config.train
        self.tokenizer, self.device, self.train_names = tokenizer, device, train_names
        torch.manual_seed(self.t.seed)
        self.model = GPT(config.model).to(device)
        self.optimizer = make_optimizer(self.model, self.t, device)
        block_size = config.model.block_size
        self.train_data = TokenizedNames(train_names, tokenizer, block_size).to(device)
        self.val_data = TokenizedNames(val_names, tokenizer, block_size).to(device) if val_names else None
        self.order = BatchOrder(len(self.train_data), self.t.batch_size, self.t.seed, self.t.shuffle == "epoch")
        self.data_info = {
            "path": str(data_path or BUNDLED_NAMES),
            "train_names": len(train_names),
            "val_names": len(val_names),
            "characters": sum(map(len, train_names)),
            "vocab_size": tokenizer.vocab_size,
            "truncated": self.train_data.truncated,
        }
        self.step = 0  # optimizer steps taken
        self.tokens = 0  # predicted tokens trained on
        self.seconds = 0.0  # time spent in training steps
        self.val_loss: float | None = None
        self.best_val_loss: float | None = None

    def train_step(self) -> torch.Tensor:
        """One optimizer step on the next batch. Returns the loss, left on the device."""
        started = time.perf_counter()
        lr = lr_at(self.step, self.t)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        indices = self.order.indices(self.step)
        x, y = self.train_data.batch(indices)
        _, loss = self.model(x, y)
        loss.backward()
        if self.t.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.t.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens += int(self.train_data.lengths[indices].sum())
        self.seconds += time.perf_counter() - started
        return loss.detach()

    def evaluate(self) -> bool:
        """Validation loss now; True when it is the best so far (or there is no validation set)."""
        if self.val_data is None:
            return True
        self.val_loss = evaluate(self.model, self.val_data)
        if self.best_val_loss is None or self.val_loss < self.best_val_loss:
            self.best_val_loss = self.val_loss
            return True
        return False

    def save(self, path: Path) -> None:
        save_checkpoint(path, {
            "model": self.model.state_dict(),
            "config": self.config.to_dict(),
            "vocab": self.tokenizer.chars,
            "step": self.step,
            "val_loss": self.val_loss,
            "best_val_loss": self.best_val_loss,
            "train_names": "\n".join(self.train_names),
            "optimizer": self.optimizer.state_dict(),
            "data": self.data_info,
        })


def train(
    config: Config,
    data_path: str | Path | None = None,
    val_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    overwrite: bool = False,
    quiet: bool = False,
) -> TrainResult:
    """Train a GPT on a names file; write best.pt, last.pt, config.toml and metrics.jsonl to the run directory."""
    t = config.train
    device = resolve_device(t.device)
    train_names, val_names, tokenizer = load_data(config, data_path, val_path)
    config.model.vocab_size = tokenizer.vocab_size
    run_dir = prepare_run_dir(out_dir, overwrite)
    (run_dir / "config.toml").write_text(report.config_toml(config), encoding="utf-8")
    trainer = Trainer(config, train_names, val_names, tokenizer, device, data_path)
    console = report.console(quiet)
    report.start(console, run_dir, device, trainer.model, config, trainer.data_info)

    train_loss = None
    loss_sum, loss_count = torch.zeros((), device=device), 0
    started = time.perf_counter()
    bar = tqdm(total=t.steps, desc="train", unit="step", disable=quiet, dynamic_ncols=True, leave=False)
    with bar, (run_dir / "metrics.jsonl").open("w", encoding="utf-8") as metrics:

        def log(**values) -> None:
            record = {"step": trainer.step, **values, "elapsed": round(time.perf_counter() - started, 3)}
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()

        while trainer.step < t.steps:
            loss_sum += trainer.train_step()
            loss_count += 1
            last = trainer.step == t.steps
            if loss_count == LOG_EVERY or last:
                train_loss = loss_sum.item() / loss_count  # the one wait for the device every LOG_EVERY steps
                if not math.isfinite(train_loss):
                    raise RunError(f"training stopped: the loss became {train_loss} by step {trainer.step}")
                log(train_loss=train_loss, lr=lr_at(trainer.step - 1, t),
                    tokens_per_sec=round(trainer.tokens / trainer.seconds, 1))
                loss_sum.zero_()
                loss_count = 0
                bar.set_postfix(loss=f"{train_loss:.4f}", val=report.fmt_loss(trainer.val_loss), refresh=False)
            bar.update(1)
            if trainer.step % t.eval_interval == 0 or last:
                if trainer.evaluate():
                    trainer.save(run_dir / "best.pt")
                if trainer.val_loss is not None:
                    log(val_loss=trainer.val_loss)
                trainer.save(run_dir / "last.pt")

    from minigpt.sampling import generate

    seen = set(train_names)
    names = generate(trainer.model, tokenizer, num=10, temperature=config.sample.temperature, seed=t.seed)
    result = TrainResult(
        run_dir=run_dir,
        steps=trainer.step,
        seconds=trainer.seconds,
        tokens=trainer.tokens,
        train_loss=train_loss,
        val_loss=trainer.val_loss,
        best_val_loss=trainer.best_val_loss,
        samples=[(name, name in seen) for name in names],
    )
    report.summary(console, result)
    return result
