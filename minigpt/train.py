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


def train(
    config: Config,
    data_path: str | Path | None = None,
    val_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    overwrite: bool = False,
    quiet: bool = False,
) -> TrainResult:
    """Train a GPT on a names file and write `best.pt` and `last.pt` into the run directory."""
    t = config.train
    device = resolve_device(t.device)
    train_names, val_names, tokenizer = load_data(config, data_path, val_path)
    config.model.vocab_size = tokenizer.vocab_size
    run_dir = prepare_run_dir(out_dir, overwrite)
    (run_dir / "config.toml").write_text(report.config_toml(config), encoding="utf-8")

    torch.manual_seed(t.seed)
    model = GPT(config.model).to(device)
    optimizer = make_optimizer(model, t, device)
    train_data = TokenizedNames(train_names, tokenizer, config.model.block_size).to(device)
    val_data = TokenizedNames(val_names, tokenizer, config.model.block_size).to(device) if val_names else None
    order = BatchOrder(len(train_data), t.batch_size, t.seed, reshuffle=t.shuffle == "epoch")
    data_info = {
        "path": str(data_path or BUNDLED_NAMES),
        "train_names": len(train_names),
        "val_names": len(val_names),
        "characters": sum(map(len, train_names)),
        "vocab_size": tokenizer.vocab_size,
        "truncated": train_data.truncated,
    }
    console = report.console(quiet)
    report.start(console, run_dir, device, model, config, data_info)

    def checkpoint(path: Path, step: int, val_loss: float | None) -> None:
        save_checkpoint(path, {
            "model": model.state_dict(),
            "config": config.to_dict(),
            "vocab": tokenizer.chars,
            "step": step,
            "val_loss": val_loss,
            "best_val_loss": best_val,
            "train_names": "\n".join(train_names),
            "optimizer": optimizer.state_dict(),
            "data": data_info,
        })

    metrics = (run_dir / "metrics.jsonl").open("w", encoding="utf-8")

    def log(step: int, **values) -> None:
        record = {"step": step, **values, "elapsed": round(time.perf_counter() - t0, 3)}
        metrics.write(json.dumps(record) + "\n")
        metrics.flush()

    model.train()
    best_val, val_loss, train_loss = None, None, None
    tokens, seconds, t0 = 0, 0.0, time.perf_counter()
    loss_sum, loss_count = torch.zeros((), device=device), 0
    bar = tqdm(total=t.steps, desc="train", unit="step", disable=quiet, dynamic_ncols=True, leave=False)
    for step in range(t.steps):
        started = time.perf_counter()
        lr = lr_at(step, t)
        for group in optimizer.param_groups:
            group["lr"] = lr
        indices = order.indices(step)
        x, y = train_data.batch(indices)
        _, loss = model(x, y)
        loss.backward()
        if t.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_sum += loss.detach()
        loss_count += 1
        tokens += int(train_data.lengths[indices].sum())
        last_step = step + 1 == t.steps
        if loss_count == LOG_EVERY or last_step:
            train_loss = loss_sum.item() / loss_count  # the one sync with the device per LOG_EVERY steps
            if not math.isfinite(train_loss):
                bar.close()
                raise RunError(f"training stopped: the loss became {train_loss} by step {step + 1}")
            log(step + 1, train_loss=train_loss, lr=lr, tokens_per_sec=round(tokens / seconds, 1) if seconds else None)
            loss_sum.zero_()
            loss_count = 0
            bar.set_postfix(loss=f"{train_loss:.4f}", val=report.fmt_loss(val_loss), refresh=False)
        seconds += time.perf_counter() - started
        bar.update(1)
        if (step + 1) % t.eval_interval == 0 or last_step:
            if val_data is not None:
                val_loss = evaluate(model, val_data)
                log(step + 1, val_loss=val_loss)
            if val_data is None or best_val is None or val_loss < best_val:
                best_val = val_loss
                checkpoint(run_dir / "best.pt", step + 1, val_loss)
            checkpoint(run_dir / "last.pt", step + 1, val_loss)
    bar.close()
    metrics.close()

    from minigpt.sample import generate

    seen = set(train_names)
    names = generate(model, tokenizer, num=10, temperature=config.sample.temperature, seed=t.seed)
    result = TrainResult(
        run_dir=run_dir,
        steps=t.steps,
        seconds=seconds,
        tokens=tokens,
        train_loss=train_loss,
        val_loss=val_loss,
        best_val_loss=best_val,
        samples=[(name, name in seen) for name in names],
    )
    report.summary(console, result)
    return result
