"""Loss curves from a run's metrics.jsonl (files/run_records.py reads it): a PNG with matplotlib, a
sparkline without it."""

from __future__ import annotations

from pathlib import Path

from minigpt.common.text import as_text
from minigpt.errors import UsageError
from minigpt.files.run_records import read_metrics, series
from minigpt.views.plotting import import_pyplot, save_figure

SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 40) -> str:
    """A curve in one line of block characters, resampled to at most `width` points."""
    if not values:
        return ""
    if len(values) > width:
        values = [values[i * len(values) // width] for i in range(width - 1)] + [values[-1]]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return "".join(SPARKS[round((v - low) / span * (len(SPARKS) - 1))] for v in values)


def write_loss_png(run_dir: str | Path, out: str | Path) -> None:
    """Train and validation loss against step; the step axis is logarithmic when the run spans decades."""
    records = read_metrics(run_dir)
    train, val = series(records, "train_loss"), series(records, "val_loss")
    if not train:
        raise UsageError(f"{run_dir}: no losses logged yet")
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(*zip(*train), label="train", color="tab:blue", linewidth=1, alpha=0.8)
    if val:
        ax.plot(*zip(*val), label="validation", color="tab:orange", marker="o", markersize=3)
    if train[0][0] > 0 and train[-1][0] / train[0][0] >= 100:  # a step-0 point would sit at -∞ on a log axis
        ax.set_xscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per character)")
    name = as_text(Path(run_dir).resolve().name)  # a directory name may not be UTF-8
    best = min(val, key=lambda point: point[1]) if val else None
    ax.set_title(f"{name}: best validation {best[1]:.4f}" if best else name)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    about = f"the losses of {name}" + (f", best validation {best[1]:.4f} at step {best[0]:,}" if best else "")
    save_figure(plt, fig, out, about)


def write_overlay_png(curves: list[tuple[str, list[dict]]], out: str | Path, colors: list[int] | None = None) -> None:
    """Several runs' validation losses (their training losses faint behind) on one plot, a line each,
    labelled; runs of one recipe share a colour when `colors` gives each run its group's number."""
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, records) in enumerate(curves):
        color = palette[(colors[i] if colors else i) % len(palette)]
        train, val = series(records, "train_loss"), series(records, "val_loss")
        if train:
            ax.plot(*zip(*train), color=color, linewidth=0.6, alpha=0.25)
        if val:
            ax.plot(
                *zip(*val),
                color=color,
                marker="o",
                markersize=2.5,
                linewidth=1.2,
                label=f"{label}: best {min(v for _, v in val):.4f}",
            )
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per character)")
    ax.set_title("validation loss (lines) and training loss (faint)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    save_figure(plt, fig, out)
