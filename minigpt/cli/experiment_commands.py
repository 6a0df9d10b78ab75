"""The commands of experiments: compare runs, sweep a recipe's keys. Options, then one call into
minigpt/runs/ (compare.py, sweep.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from minigpt.cli.app import ends_as_written, on_free_cores, wrote
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.atomic_file import refuse_existing


def compare(
    runs: list[Path] = typer.Argument(..., metavar="RUN", help="Run directories: seeds of one recipe are grouped."),
    baseline: Path | None = typer.Option(
        None, "--baseline", help="The run whose group every other is measured against \\[default: the first]."
    ),
    data: Path | None = typer.Option(
        None, "--data", help="Score every run on this names file (for runs validated on different names)."
    ),
    png: Path | None = typer.Option(None, "--png", help="Draw the runs' loss curves on one plot (needs matplotlib)."),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Write the page of two models: the first run of the "
        "baseline's group beside the first run of the other group.",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", metavar="", help="Replace the --png or --html file if it exists."
    ),
    pool: bool = typer.Option(
        False,
        "--pool",
        metavar="",
        help="Pool a recipe's runs as seeds of one group even where "
        "their steps lie more than 1.5x apart (split by their compute otherwise).",
    ),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the comparison as JSON."),
) -> None:
    """Compare runs: each recipe's best validation loss over its seeds, the difference to a baseline with
    Welch's test and its interval, the answer at equal steps, what differs, curves and samples side by side."""
    from rich.console import Console

    from minigpt.runs.compare import compare as compare_runs
    from minigpt.runs.tables import show_comparison

    for flag, path, kind in (("--png", png, "png"), ("--html", html, "html")):
        if path is not None:
            ends_as_written(flag, path, kind)
            refuse_existing(path, overwrite)
    on_free_cores("cpu")
    comparison = compare_runs(runs, baseline, data, pool)
    if html is not None:
        write_groups_page(comparison, html, overwrite)
    if png is not None:
        from minigpt.views.loss_curve import write_overlay_png

        curves = [(str(r.path), r.curve) for g in comparison.groups for r in g.runs]
        write_overlay_png(curves, png, [i for i, g in enumerate(comparison.groups) for _ in g.runs])
        wrote(png)
    if json_out:
        print(strict_json.dumps(comparison.to_json()))
    else:
        show_comparison(Console(highlight=False), comparison)


def write_groups_page(comparison, out: Path, overwrite: bool) -> None:
    """compare --html: the first runs of the two groups, on the page of two models."""
    from minigpt.views.pair_page import write_pair_page

    groups = comparison.groups
    if len(groups) != 2:
        raise UsageError(
            f"--html puts two models on one page, and these runs form {len(groups)} group"
            f"{'' if len(groups) == 1 else 's'}; give runs of two recipes, or write the page of any two "
            f"runs with inspect-attention RUN_A RUN_B --html PAGE"
        )
    write_pair_page(groups[0].runs[0].checkpoint, groups[1].runs[0].checkpoint, out, overwrite=overwrite)
    wrote(out, then=f": {groups[0].runs[0].path} beside {groups[1].runs[0].path}")


def say(line: str) -> None:
    """A line of what the sweep does, on stderr (a top-level function: --jobs processes are handed it)."""
    print(line, file=sys.stderr, flush=True)


def sweep(
    spec: Path = typer.Argument(
        ...,
        metavar="SPEC",
        help="The study: a TOML file of \\[sweep], \\[space] and \\[set] "
        "(docs/experiments.md); with --show, a sweep's directory.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="The sweep's directory: the study's journal, "
        "best.toml, and a run directory for each seed of each trial "
        "\\[default: runs/SPEC's name].",
    ),
    data: Path | None = typer.Option(
        None, "--data", help="Names file every trial trains on \\[default: data/names.txt]."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Trials run at once, in processes that split the cores."),
    storage: str | None = typer.Option(
        None,
        "--storage",
        help="A database URL for the study (postgresql://, "
        "mysql://, sqlite:///, redis://): machines running the same command share it.",
    ),
    seeds: int | None = typer.Option(None, "--seeds", help="Runs of each configuration \\[default: the spec's]."),
    show: bool = typer.Option(
        False, "--show", metavar="", help="Show the study kept in the directory SPEC; run nothing."
    ),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the study's trials and best as JSON."),
) -> None:
    """Search recipe keys with Optuna: trials of a few seeds each, pruned when behind, resumed when run again."""
    from rich.console import Console

    from minigpt.runs.sweep import run_sweep, show_sweep
    from minigpt.runs.tables import show_sweep_result

    if show:
        result = show_sweep(spec if out is None else out, storage)
    else:
        out = out if out is not None else Path("runs") / spec.stem
        result = run_sweep(spec, out, data, jobs, storage, seeds, say=say)
        if result.best_toml is not None:
            wrote(result.best_toml)
    if json_out:
        print(strict_json.dumps(result.to_json()))
    else:
        show_sweep_result(Console(highlight=False), result)
