"""What training shows a person: a panel at the start and a summary at the end, on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from minigpt.config import NOT_SETTABLE, Config


def console(quiet: bool = False) -> Console:
    return Console(stderr=True, quiet=quiet, highlight=False)


def config_toml(config: Config) -> str:
    """The resolved config as a TOML file that `--config` reads back."""
    lines = []
    for section, values in config.to_dict().items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if (section, key) not in NOT_SETTABLE:
                lines.append(f"{key} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def start(out: Console, run_dir: Path, device, model, config: Config, data: dict, resumed_at: int | None = None) -> None:
    m, t = config.model, config.train
    table = Table.grid(padding=(0, 2))
    table.add_row("run directory", str(run_dir))
    table.add_row("device", str(device))
    table.add_row("model", f"{model.num_params():,} parameters: {plural(m.n_layer, 'layer')}, {plural(m.n_head, 'head')}, "
                  f"{m.n_embd} dims, block {m.block_size}")
    table.add_row("data", f"{data['path']}: {data['train_names']:,} training names "
                  f"({data['characters']:,} characters, {data['duplicates']:,} repeated), "
                  f"{data['val_names']:,} validation, vocabulary {data['vocab_size']}")
    length = f"{t.time_limit:g} s" if t.time_limit > 0 else f"{t.steps:,} steps"
    table.add_row("training", f"{length} of {t.batch_size} names, {t.optimizer} lr {t.lr:g} "
                  f"({t.lr_schedule}), seed {t.seed}")
    if resumed_at is not None:
        table.add_row("resuming", f"from step {resumed_at:,}")
    out.print(Panel(table, title="minigpt train", expand=False))
    if data["truncated"]:
        warn(f"{data['truncated']} training names are longer than the block size allows "
             f"({m.block_size - 1} characters) and were cut to fit")


def warn(message: str) -> None:
    """A note the user should see even with --quiet or --json (on stderr, like every log)."""
    print(f"minigpt: note: {message}", file=sys.stderr)


def summary(out: Console, result) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_row("steps", f"{result.steps:,}")
    table.add_row("time", f"{result.seconds:.1f} s training, {result.tokens_per_sec:,.0f} tokens/s")
    table.add_row("train loss", fmt_loss(result.train_loss))
    table.add_row("val loss", f"{fmt_loss(result.val_loss)} (best {fmt_loss(result.best_val_loss)})")
    table.add_row("checkpoints", f"{result.run_dir / 'best.pt'}, {result.run_dir / 'last.pt'}")
    samples = ", ".join(name if seen else f"[bold]{name}[/]" for name, seen in result.samples)
    table.add_row("samples", f"{samples}  [dim](bold: not in the training names)[/]")
    out.print(Panel(table, title="done", expand=False))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def fmt_loss(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
