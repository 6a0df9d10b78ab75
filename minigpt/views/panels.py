"""The panels minigpt prints with rich: a run's start and end, its samples, and what a checkpoint holds."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from minigpt.common.failures import warn
from minigpt.common.text import CUT, as_shown, as_text, is_cut, loss_text, markup_safe, natural_width, plural
from minigpt.files.run_records import read_metrics, series
from minigpt.formats.checkpoint import describe_data
from minigpt.model import microgpt_weights
from minigpt.views.loss_curve import sparkline

# what every view of a model trained with model.causal = false says of it
UNMASKED = (
    "trained without the causal mask (model.causal = false): each position reads the whole name, the "
    "character it is to predict too, so its losses are no measure of prediction; and its samples are "
    "garbage, since it learned to copy the next character, which is not there yet when it generates"
)


class Printer(Protocol):
    """Where a panel goes: a rich Console, or the notebook's (views/training_display.py)."""

    @property
    def width(self) -> int: ...

    def print(self, *renderables: Any, **options: Any) -> None: ...


def unmasked_note(config) -> str | None:
    """UNMASKED for a recipe whose model reads ahead, else None."""
    return None if config.model.causal else UNMASKED


def has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def start_panel(
    out: Printer,
    trainer,
    run_dir: Path,
    notes: Sequence[str] = (),
    threads: tuple[int, str] | None = None,
    resumed_at: int | None = None,
) -> None:
    """The panel a run opens with: where it writes, on what, the model, the data and the recipe."""
    config, data, processes, device = trainer.config, trainer.data_info, trainer.dist.world, trainer.dist.device
    m, t = config.model, config.train
    table = Table.grid(padding=(0, 2))
    table.add_row("run directory", markup_safe(run_dir))
    table.add_row("device", str(device) if processes == 1 else f"{processes} processes, {device.type}")
    if threads is not None:
        table.add_row("threads", f"{threads[0]} ({threads[1]})")
    table.add_row(
        "model",
        f"{trainer.model.num_params():,} parameters: {plural(m.n_layer, 'layer')}, "
        f"{plural(m.n_head, 'head')}, {m.n_embd} dims, block {m.block_size}",
    )
    table.add_row("data", markup_safe(f"{describe_data(data)}, vocabulary {data['vocab_size']}"))
    length = f"{t.time_limit:g} s" if t.time_limit > 0 else plural(t.steps, "step")
    optimizer = f"{t.optimizer} lr {t.lr:g}"
    if t.optimizer == "muon":
        optimizer = f"muon lr {t.muon_lr:g} + adamw lr {t.lr:g}"
    table.add_row("training", f"{length} of {t.batch_size} names, {optimizer} ({t.lr_schedule}), seed {t.seed}")
    table.add_row(
        "",
        f"dropout {m.dropout:g}, {m.activation}, warmup {t.warmup_steps}, weight decay "
        f"{t.weight_decay:g}, grad clip {t.grad_clip:g}; all of it in {run_dir / 'config.toml'}",
    )
    for note in notes:
        table.add_row("recipe", note)
    if not m.causal:
        table.add_row("no mask", UNMASKED)
    if not data.get("val_names", 1):  # nothing to stop early on, and no best to end on
        table.add_row(
            "stopping",
            f"none: the file is too small to hold names back for validation, so the run "
            f"trains {length} and ends on its last weights",
        )
    elif t.patience:
        held = ", should its time limit hold them (the recipe's note on it says)" if t.time_limit > 0 else ""
        table.add_row(
            "stopping",
            f"early after {plural(t.patience, 'evaluation')} (every {plural(t.eval_interval, 'step')}) "
            f"without a better validation loss{held}",
        )
    if t.keep_best and data.get("val_names", 1):
        table.add_row("", "the run ends on its best weights by validation loss, not its last")
    if resumed_at is not None:
        table.add_row("resuming", f"from step {resumed_at:,}")
    out.print(Panel(table, title="minigpt train", expand=False))


def note_cut_names(trainer) -> None:
    """The line a run says as it starts, quiet or not, when some of its names do not fit the block size."""
    cut, block_size = trainer.data_info["truncated"], trainer.config.model.block_size
    if cut:
        warn(
            f"{plural(cut, 'training name')} {'is' if cut == 1 else 'are'} longer than the block size allows "
            f"({block_size - 1} characters) and were cut to fit; --set model.block_size=N reads names of up to "
            f"N - 1 characters whole"
        )


def samples_table(
    out: Printer, step: int, val_loss: float | None, names: list[tuple[str, bool]], block_size: int
) -> None:
    """A few names the model makes now, each marked new, in train, or cut (at the block size, marked …): side by
    side, or one a line when side by side they would not fit the console (rich would cut them short)."""
    from tqdm import tqdm

    title = f"step {step:,}: val loss {loss_text(val_loss)}"
    status = [
        "[yellow]cut[/]" if is_cut(name, block_size) else "[dim]in train[/]" if seen else "[green]new[/]"
        for name, seen in names
    ]
    names = [(as_shown(name, block_size), seen) for name, seen in names]
    table = Table(title=title, title_justify="left", show_edge=False, box=None, padding=(0, 1))
    for name, _ in names:
        table.add_column(markup_safe(name) or "''", justify="center")  # a name may hold "[", which rich reads as markup
    table.add_row(*status)
    if natural_width(table) > out.width:
        table = Table(title=title, title_justify="left", show_edge=False, box=None, padding=(0, 1), show_header=False)
        table.add_column(no_wrap=True, overflow="fold")
        table.add_column(no_wrap=True)
        for (name, _), mark in zip(names, status):
            table.add_row(markup_safe(name) or "''", mark)
    with tqdm.external_write_mode(file=sys.stderr):  # above the progress bar, not through it
        out.print(table)


def summary_panel(out: Printer, result) -> None:
    """The panel a finished run ends with (runs/run.py's TrainResult)."""
    records = read_metrics(result.run_dir)
    train_curve = sparkline([loss for _, loss in series(records, "train_loss")])
    val_curve = sparkline([loss for _, loss in series(records, "val_loss")])
    table = Table.grid(padding=(0, 2))
    table.add_row("steps", f"{result.steps:,}")
    table.add_row("time", f"{result.seconds:.1f} s training, {result.tokens_per_sec:,.0f} tokens/s")
    table.add_row("train loss", loss_text(result.train_loss))
    best_at = f" at step {result.best_step:,}" if result.best_step is not None else ""
    table.add_row("val loss", f"{loss_text(result.val_loss)} (best {loss_text(result.best_val_loss)}{best_at})")
    if result.stopped_early:
        table.add_row(
            "stopped",
            f"early, at step {result.steps:,}: no better validation loss since step "
            f"{result.best_step:,} (train.patience)",
        )
    if result.went_back_to_best:
        table.add_row(
            "model",
            f"set back to its best weights (step {result.best_step:,}), which best.pt holds and "
            f"sample reads; last.pt keeps step {result.steps:,} for --resume",
        )
    table.add_row("train curve", f"[cyan]{train_curve}[/]")
    if val_curve:
        table.add_row("val curve", f"[yellow]{val_curve}[/]")
    table.add_row(
        "run directory",
        f"{markup_safe(result.run_dir)}: best.pt, last.pt, config.toml, metrics.jsonl, samples.txt"
        + "".join(f", {name}" for name in ("snapshots.pt", "loss.png") if (result.run_dir / name).exists()),
    )
    if not (result.run_dir / "loss.png").exists() and not has_matplotlib():
        table.add_row(
            "",
            escape(
                "no loss.png: drawing it needs matplotlib (pip install 'minigpt-names[plot]'); "
                "minigpt plot RUN draws it later"
            ),
        )
    samples = ", ".join(
        f"{markup_safe(as_shown(name, result.block_size))}*"
        if seen
        else f"[bold]{markup_safe(as_shown(name, result.block_size))}[/]"
        for name, seen in result.samples
    )
    table.add_row("samples", f"{samples}  [dim](* = a training name)[/]")
    cut = (
        f"; {result.cut_samples} reached the block size ({result.block_size}) before they ended: cut, marked {CUT}, "
        f"and not counted"
        if result.cut_samples
        else ""
    )
    table.add_row("", f"{result.new_samples} of {len(result.samples)} are new names, not in the training data{cut}")
    out.print(Panel(table, title="done", expand=False))


AUTO_SCALE_STORED = (
    "the recipe as the run trained: the file train.auto_scale chose, or the one given, with the keys "
    "given on the command line; auto_scale is stored off so that a resumed run keeps it"
)


def checkpoint_info(out: Printer, ckpt) -> None:
    """Everything a checkpoint holds, for `minigpt info`."""
    head = Table.grid(padding=(0, 2))
    head.add_row("checkpoint", f"{markup_safe(ckpt.path)} (format minigpt {ckpt.version})")
    head.add_row("step", f"{ckpt.step:,}")
    head.add_row("val loss", f"{loss_text(ckpt.val_loss)} (best {loss_text(ckpt.best_val_loss)})")
    vocab = "".join(ckpt.tokenizer.chars)
    # a space shown as ␣: rich breaks a line at a space, which left a lone opening quote at a line's end
    shown, space = repr(vocab).replace(" ", "␣"), " (␣ a space)" if " " in vocab else ""
    head.add_row(
        "vocabulary",
        f"{ckpt.tokenizer.vocab_size} tokens: {markup_safe(shown)}{space} (ids 0..{len(vocab) - 1}), "
        f"boundary token {ckpt.tokenizer.bos}",
    )
    if "train_names" in ckpt.data or "imported_from" in ckpt.data:
        head.add_row("data", markup_safe(describe_data(ckpt.data)))
    if unmasked_note(ckpt.config):
        head.add_row("no mask", UNMASKED)
    for section, values in ckpt.config.to_dict().items():
        head.add_row(section, markup_safe(", ".join(f"{k} {v}" for k, v in values.items())))
    if not ckpt.config.train.auto_scale:
        head.add_row("", AUTO_SCALE_STORED)
    out.print(Panel(head, title="minigpt info", expand=False))
    tensors = Table(title=f"{ckpt.model.num_params():,} parameters", show_edge=False)
    tensors.add_column("name")
    tensors.add_column("shape", justify="right")
    tensors.add_column("parameters", justify="right")
    for name, tensor in microgpt_weights(ckpt.model).items():
        tensors.add_row(name, " x ".join(map(str, tensor.shape)), f"{tensor.numel():,}")
    out.print(tensors)


def checkpoint_json(ckpt) -> dict:
    """Everything `checkpoint_info` shows, for `minigpt info --json`."""
    return {
        "checkpoint": as_text(ckpt.path),
        "format_version": ckpt.version,
        "step": ckpt.step,
        "val_loss": ckpt.val_loss,
        "best_val_loss": ckpt.best_val_loss,
        "parameters": ckpt.model.num_params(),
        "vocabulary": ckpt.tokenizer.chars,
        "boundary_token": ckpt.tokenizer.bos,
        "data": {key: value for key, value in ckpt.data.items()} if isinstance(ckpt.data, dict) else {},
        "config": ckpt.config.to_dict(),
        "tensors": {name: list(tensor.shape) for name, tensor in microgpt_weights(ckpt.model).items()},
    }
