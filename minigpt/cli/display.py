"""What minigpt shows a person: training's panels and samples (on stderr), and `minigpt info`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from tqdm import tqdm

from minigpt.cli.errors import one_line
from minigpt.config import Config


def has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def plain(text) -> str:
    """Text from a file or a path (a name, a path, a checkpoint's notes) as rich should print it: never
    markup (`[link=…]`, `a[/]b`), never raw control characters (escape sequences, right-to-left overrides)."""
    return escape(one_line(str(text)))


def fmt_loss(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def warn(message: str) -> None:
    """A note the user should see even with --quiet or --json (on stderr, like every log)."""
    print(f"minigpt: note: {message}", file=sys.stderr)


def console(quiet: bool = False) -> Console:
    return Console(stderr=True, quiet=quiet, highlight=False)


def start(out: Console, run_dir: Path, device, model, config: Config, data: dict, resumed_at: int | None = None,
          processes: int = 1, notes: list[str] = (), threads: tuple[int, str] | None = None) -> None:
    m, t = config.model, config.train
    table = Table.grid(padding=(0, 2))
    table.add_row("run directory", plain(run_dir))
    table.add_row("device", str(device) if processes == 1 else f"{processes} processes, {device.type}")
    if threads is not None:
        table.add_row("threads", f"{threads[0]} ({threads[1]})")
    table.add_row("model", f"{model.num_params():,} parameters: {plural(m.n_layer, 'layer')}, {plural(m.n_head, 'head')}, "
                  f"{m.n_embd} dims, block {m.block_size}")
    table.add_row("data", f"{plain(data['path'])}: {data['train_names']:,} training names "
                  f"({data['characters']:,} characters, {data['duplicates']:,} repeated), "
                  f"{data['val_names']:,} validation, vocabulary {data['vocab_size']}")
    length = f"{t.time_limit:g} s" if t.time_limit > 0 else plural(t.steps, "step")
    optimizer = f"{t.optimizer} lr {t.lr:g}"
    if t.optimizer == "muon":
        optimizer = f"muon lr {t.muon_lr:g} + adamw lr {t.lr:g}"
    table.add_row("training", f"{length} of {t.batch_size} names, {optimizer} ({t.lr_schedule}), seed {t.seed}")
    table.add_row("", f"dropout {m.dropout:g}, {m.activation}, warmup {t.warmup_steps}, weight decay "
                  f"{t.weight_decay:g}, grad clip {t.grad_clip:g}; all of it in {run_dir / 'config.toml'}")
    for note in notes:
        table.add_row("recipe", note)
    if t.patience:
        table.add_row("stopping", f"early after {plural(t.patience, 'evaluation')} (every {plural(t.eval_interval, 'step')}) "
                      f"without a better validation loss")
    if t.keep_best:
        table.add_row("", "the run ends on its best weights by validation loss, not its last")
    if resumed_at is not None:
        table.add_row("resuming", f"from step {resumed_at:,}")
    out.print(Panel(table, title="minigpt train", expand=False))
    if data["truncated"]:
        warn(f"{data['truncated']} training names are longer than the block size allows "
             f"({m.block_size - 1} characters) and were cut to fit")


def progress_bar(trainer, hidden: bool) -> tqdm:
    """Steps (or seconds, with a time limit) done out of the run's whole, on stderr. Its time left is
    the run's average rate so far (tqdm's smoothing 0), not the last few steps': the evaluations,
    checkpoints and snapshots between steps are spread through a run, and an estimate from the
    steps alone left them out (benchmarks/time_left.py measures how close it comes)."""
    t, timed = trainer.recipe, trainer.recipe.time_limit > 0
    return (notebook_bar() or tqdm)(
        smoothing=0,
        total=round(t.time_limit) if timed else t.steps,
        initial=round(trainer.elapsed) if timed else trainer.step,
        unit="s" if timed else "step",
        desc="train",
        disable=hidden,
        dynamic_ncols=True,
        leave=False,
    )


def notebook_bar():
    """tqdm's notebook bar (a widget that updates in place) inside a Jupyter kernel with ipywidgets, else None:
    there, a terminal's carriage-return bar would print a line per redraw."""
    if not in_notebook():
        return None
    try:
        import ipywidgets  # noqa: F401
        from tqdm.notebook import tqdm as widget_bar
    except ImportError:
        return None
    return widget_bar


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (JupyterLab, VS Code, Colab), where output is HTML and widgets."""
    shell = sys.modules.get("IPython") and getattr(sys.modules["IPython"], "get_ipython", lambda: None)()
    return type(shell).__name__ in ("ZMQInteractiveShell", "Shell")  # Shell: Colab's


def snapshots_bar() -> tuple[tqdm, Callable[[int, int], None]]:
    """A bar for the explorer page's slow part, measuring each training snapshot, and the
    `progress(done, total)` that moves it (the bar appears with the first snapshot)."""
    bar = tqdm(total=0, unit="snapshot", desc="measuring the training snapshots", dynamic_ncols=True, leave=False,
               disable=not sys.stderr.isatty())

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, progress


def show_loss(bar: tqdm, trainer, train_loss: float) -> None:
    bar.set_postfix(loss=f"{train_loss:.4f}", val=fmt_loss(trainer.val_loss),
                    tok_s=f"{trainer.tokens / trainer.seconds / 1000:.1f}k", refresh=False)


def advance(bar: tqdm, trainer) -> None:
    """Move the bar to the trainer's step, or to its elapsed seconds with a time limit."""
    bar.update(round(trainer.elapsed) - bar.n if trainer.recipe.time_limit > 0 else 1)


def progress_line(trainer, train_loss: float | None) -> str:
    """What the progress bar shows, as one line for a log: `step 250/800  loss 2.0312  41,210 tokens/s  6 s`."""
    t = trainer.recipe
    done = f"{trainer.elapsed:.0f}/{t.time_limit:g} s" if t.time_limit > 0 else f"{trainer.elapsed:.0f} s"
    total = "" if t.time_limit > 0 else f"/{t.steps:,}"
    rate = trainer.tokens / trainer.seconds if trainer.seconds else 0.0
    return f"step {trainer.step:,}{total}  loss {fmt_loss(train_loss)}  {rate:,.0f} tokens/s  {done}"


def samples_line(step: int, val_loss: float | None, names: list[tuple[str, bool]]) -> str:
    """One line of samples.txt: `step 250  val 2.1095  pernell valena* ...` (* = a training name)."""
    listed = " ".join(f"{one_line(name)}*" if seen else one_line(name) for name, seen in names)  # no raw escapes in a file
    return f"step {step}  val {fmt_loss(val_loss)}  {listed}"


def samples_table(out: Console, step: int, val_loss: float | None, names: list[tuple[str, bool]]) -> None:
    table = Table(title=f"step {step:,}: val loss {fmt_loss(val_loss)}", title_justify="left", show_edge=False,
                  box=None, padding=(0, 1))
    for name, _ in names:
        table.add_column(plain(name) or "''", justify="center")  # a name may hold "[", which rich reads as markup
    table.add_row(*["[dim]in train[/]" if seen else "[green]new[/]" for _, seen in names])
    with tqdm.external_write_mode(file=sys.stderr):  # above the progress bar, not through it
        out.print(table)


def summary(out: Console, result) -> None:
    from minigpt.views.loss_curve import read_metrics, series, sparkline

    records = read_metrics(result.run_dir)
    train_curve = sparkline([loss for _, loss in series(records, "train_loss")])
    val_curve = sparkline([loss for _, loss in series(records, "val_loss")])
    table = Table.grid(padding=(0, 2))
    table.add_row("steps", f"{result.steps:,}")
    table.add_row("time", f"{result.seconds:.1f} s training, {result.tokens_per_sec:,.0f} tokens/s")
    table.add_row("train loss", fmt_loss(result.train_loss))
    best_at = f" at step {result.best_step:,}" if result.best_step is not None else ""
    table.add_row("val loss", f"{fmt_loss(result.val_loss)} (best {fmt_loss(result.best_val_loss)}{best_at})")
    if result.stopped_early:
        table.add_row("stopped", f"early, at step {result.steps:,}: no better validation loss since step "
                      f"{result.best_step:,} (train.patience)")
    if result.ended_on_best:
        table.add_row("model", f"set back to its best weights (step {result.best_step:,}), which best.pt holds and "
                      f"sample reads; last.pt keeps step {result.steps:,} for --resume")
    table.add_row("train curve", f"[cyan]{train_curve}[/]")
    if val_curve:
        table.add_row("val curve", f"[yellow]{val_curve}[/]")
    table.add_row("run directory", f"{plain(result.run_dir)}: best.pt, last.pt, config.toml, metrics.jsonl, samples.txt"
                  + "".join(f", {name}" for name in ("snapshots.pt", "loss.png") if (result.run_dir / name).exists()))
    if not (result.run_dir / "loss.png").exists() and not has_matplotlib():
        table.add_row("", escape("no loss.png: drawing it needs matplotlib (pip install 'minigpt-names[plot]'); "
                                 "minigpt plot RUN draws it later"))
    samples = ", ".join(f"{plain(name)}*" if seen else f"[bold]{plain(name)}[/]" for name, seen in result.samples)
    new = sum(not seen for _, seen in result.samples)
    table.add_row("samples", f"{samples}  [dim](* = a training name)[/]")
    table.add_row("", f"{new} of {len(result.samples)} are new names, not in the training data")
    out.print(Panel(table, title="done", expand=False))


def checkpoint_info(out: Console, ckpt) -> None:
    """Everything a checkpoint holds, for `minigpt info`."""
    from minigpt.formats.checkpoint import microgpt_weights

    head = Table.grid(padding=(0, 2))
    head.add_row("checkpoint", f"{plain(ckpt.path)} (format minigpt {ckpt.version})")
    head.add_row("step", f"{ckpt.step:,}")
    head.add_row("val loss", f"{fmt_loss(ckpt.val_loss)} (best {fmt_loss(ckpt.best_val_loss)})")
    vocab = "".join(ckpt.tokenizer.chars)
    head.add_row("vocabulary", f"{ckpt.tokenizer.vocab_size} tokens: {plain(repr(vocab))} (ids 0..{len(vocab) - 1}), "
                 f"boundary token {ckpt.tokenizer.bos}")
    data = ckpt.data
    if "train_names" in data:
        head.add_row("data", f"{plain(data.get('path'))}: {data['train_names']:,} training names "
                     f"({data['characters']:,} characters, {data.get('duplicates', 0):,} repeated, "
                     f"{data['truncated']:,} cut to fit), {data['val_names']:,} validation")
    elif "imported_from" in data:
        head.add_row("data", f"imported from {plain(data['imported_from'])}")
    for section, values in ckpt.config.to_dict().items():
        head.add_row(section, plain(", ".join(f"{k} {v}" for k, v in values.items())))
    out.print(Panel(head, title="minigpt info", expand=False))
    tensors = Table(title=f"{ckpt.model.num_params():,} parameters", show_edge=False)
    tensors.add_column("name")
    tensors.add_column("shape", justify="right")
    tensors.add_column("parameters", justify="right")
    for name, tensor in microgpt_weights(ckpt.model).items():
        tensors.add_row(name, " x ".join(map(str, tensor.shape)), f"{tensor.numel():,}")
    out.print(tensors)
