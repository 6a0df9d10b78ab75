"""Experiments in the terminal: `minigpt compare` (a table of the groups, what differs, a sparkline a run,
samples side by side, the verdicts in words) and `minigpt sweep` (its trials, the best, each key's importance)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from minigpt.common.text import as_text, markup_safe, range_text
from minigpt.files.run_records import series
from minigpt.runs.statistics import sd
from minigpt.runs.sweep import IMPORTANCE_TRIALS, SweepResult, compute_note, state_of
from minigpt.views.loss_curve import sparkline

if TYPE_CHECKING:  # a name for the reader: compare.py imports torch, which a sweep's table does not need
    from minigpt.runs.compare import Comparison


def show_comparison(out: Console, comparison: Comparison) -> None:
    table = Table(
        title=f"{comparison.scored}, mean ± sd over seeds; baseline {markup_safe(comparison.baseline.label)} "
        f"(the first run given; --baseline RUN names another)",
        show_edge=False,
    )
    for heading in ("group (its steps)", "seeds", "loss ± sd", "Δ", "p", "Δ 95%"):
        table.add_column(
            heading, justify="left" if heading.startswith("group") else "right", no_wrap=not heading.startswith("group")
        )
    base = comparison.baseline.mean
    for i, g in enumerate(comparison.groups):
        spread = f" ± {g.sd:.4f}" if g.sd is not None else ""
        steps = "" if g.label.endswith(" steps)") else f" ({range_text([r.steps for r in g.runs])} steps)"
        table.add_row(
            markup_safe(g.label + steps),
            str(len(g.runs)),
            f"{g.mean:.4f}{spread}",
            f"{g.mean - base:+.4f}" if i else "",
            f"{g.p:.3g}" if g.p is not None else "",
            interval_text(g.interval),
        )
    out.print(table)
    if comparison.differs:
        out.print("\n[bold]what differs[/bold]")
        for key, values in comparison.differs.items():
            out.print(f"  {key}: " + " | ".join(markup_safe(repr(v)) for v in values))
    out.print(
        "\n[bold]validation loss per run[/bold] (its curve, best, and the compute it had: steps, tokens, threads, time)"
    )
    width = max(len(as_text(r.path)) for g in comparison.groups for r in g.runs)
    for g in comparison.groups:
        for r in g.runs:
            curve = [v for _, v in series(r.curve, "val_loss")]
            out.print(
                f"  {markup_safe(as_text(r.path)):<{width}}  {sparkline(curve, 20)}  {r.score:.4f}  {r.compute_text()}"
            )
    out.print("\n[bold]samples[/bold] (each group's first run, seed 0; the share of 200 that are new names)")
    for g in comparison.groups:
        out.print(f"  {markup_safe(g.label)}: {markup_safe(', '.join(g.samples))}  ({g.new_share:.0%} new)")
    out.print("\n(Δ 95%: the interval of Welch's test over seeds, the verdict's)")
    names_only = [
        f"{markup_safe(g.label)} {interval_text(g.names_only)}" for g in comparison.groups[1:] if g.names_only
    ]
    if names_only:
        out.print(
            "names only, a bootstrap over the validation names with the seeds fixed (narrower, and no verdict): "
            + "; ".join(names_only)
        )
    if comparison.no_interval:
        out.print(f"\nno names-only interval: {markup_safe(comparison.no_interval)}")
    for note in comparison.notes:
        out.print(f"\nnote: {markup_safe(note)}")
    for line in comparison.verdicts():
        out.print(f"\n{markup_safe(line)}")


def interval_text(interval) -> str:
    return f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else ""


def show_sweep_result(out: Console, result: SweepResult) -> None:
    keys = [d.key for d in result.spec.space]
    short = {key: key.split(".", 1)[1] for key in keys}
    if len(set(short.values())) < len(keys):
        short = {key: key for key in keys}
    again = sum("run_again_from" in t.user_attrs for t in result.trials)
    rerun = f" ({again} of its rows a stopped trial run again)" if again else ""
    table = Table(
        title=f"study {result.spec.name}: {result.spec.trials} trials{rerun}, each run DIR/trial-N-seed-S",
        show_edge=False,
    )
    for heading in ("trial", "state", "loss", "sd", "steps", *short.values()):
        table.add_column(heading, justify="left" if heading == "state" else "right")
    for t in result.trials:
        table.add_row(*trial_row(t, keys))
    out.print(table)
    if result.best is None:
        unranked = [t.number for t in result.trials if t.state.name == "COMPLETE"]
        out.print(
            f"no finished trial has a loss to rank: trial {unranked[0]}'s value is not a number (its record was "
            f"edited?)"
            if unranked
            else "no trial has finished yet"
        )
        return
    note = compute_note(result.trials)
    if note:
        out.print(f"note: {markup_safe(note)}")
    best = result.best
    losses = best.user_attrs.get("losses", [])
    spread = f" ± {sd(losses):.4f}" if len(losses) > 1 else ""
    title = "lowest loss, which may follow the compute (note above)" if note else "best"
    out.print(
        f"\n[bold]{title}[/bold]: trial {best.number}, {best.value:.4f}{spread} over {len(losses)} "
        f"seed{'s' * (len(losses) > 1)}: " + ", ".join(f"{k} = {value_text(v)}" for k, v in best.params.items())
    )
    finished = sum(t.state.name == "COMPLETE" for t in result.trials)
    if finished < IMPORTANCE_TRIALS:
        out.print(
            f"importance: not meaningful yet ({finished} finished trial{'s' * (finished != 1)}; it needs "
            f"{IMPORTANCE_TRIALS})"
        )
    elif result.importance:
        out.print(
            "[bold]importance[/bold] (Optuna's fANOVA: each key's share of how the loss varies): "
            + ", ".join(f"{k} {v:.2f}" for k, v in result.importance.items())
        )
    if result.best_toml is not None:
        what = "the recipe of the lowest loss" if note else "the best recipe"
        out.print(f"{what}: {markup_safe(result.best_toml)} (minigpt train --config {markup_safe(result.best_toml)})")


def value_text(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def trial_row(t, keys: list[str]) -> list[str]:
    losses = t.user_attrs.get("losses", [])
    state = state_of(t)
    if "run_again_from" in t.user_attrs:
        state += f" (trial {t.user_attrs['run_again_from']} again)"
    if "pruned_at" in t.user_attrs:
        state += f" at {t.user_attrs['pruned_at']:,}"
    if t.user_attrs.get("error"):
        state += f": {markup_safe(t.user_attrs['error'])}"
    return [
        str(t.number),
        state,
        f"{t.value:.4f}" if type(t.value) in (int, float) else markup_safe(repr(t.value)[:20]) if t.value else "",
        f"{sd(losses):.4f}" if len(losses) > 1 else "",
        range_text(t.user_attrs.get("steps", [])),
        *(value_text(t.params[k]) if k in t.params else "" for k in keys),
    ]
