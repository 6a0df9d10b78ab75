"""The commands that look inside a model: inspect-attention (the terminal, PNG, JSON and the explorer
page) and ablate."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from minigpt.cli.app import (
    checkpoint_argument,
    checkpoint_to_read,
    device_option,
    ends_as_written,
    names_to_score_option,
    on_free_cores,
    wrote,
)
from minigpt.common.failures import warn
from minigpt.common.text import one_line
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.atomic_file import refuse_existing
from minigpt.views.web_files import lesson_count


def write_explorer_page(
    checkpoint: Path,
    out: Path,
    text: str | None,
    open_page: bool,
    overwrite: bool,
    lesson: int | None = None,
    second: Path | None = None,
) -> None:
    """The explorer page of one run, or (with `second`) the page of two models side by side."""
    import webbrowser

    from minigpt.views.explorer_page import write_page
    from minigpt.views.pair_page import write_pair_page
    from minigpt.views.training_display import snapshots_bar

    on_free_cores("cpu")  # the page is written on the CPU: its head descriptions and ablation costs
    bar, progress = snapshots_bar()
    with bar:
        if second is None:
            write_page(checkpoint, out, text=text, overwrite=overwrite, progress=progress, lesson=lesson)
        else:
            write_pair_page(checkpoint, second, out, text=text, overwrite=overwrite, progress=progress)
    wrote(out, then=": open it in a browser")
    if open_page and not webbrowser.open(out.resolve().as_uri()):
        warn("no browser could be opened here")


def names_a_run(word: str) -> bool:
    """Whether a word names a run: a directory with a checkpoint in it, or a checkpoint file. The empty
    name (the boundary alone) and a folder that merely shares a name's spelling are names to read."""
    from minigpt.files.sniffing import is_checkpoint_file
    from minigpt.runs.run_directory import is_run_dir

    if not word:
        return False
    try:
        path = Path(word)
        return is_run_dir(path) if path.is_dir() else path.is_file() and is_checkpoint_file(path)
    except (OSError, ValueError):  # too long to be a file's name, or a NUL in it: a name to read
        return False


def looks_like_a_path(word: str) -> bool:
    """A word with a slash whose folder exists reads as a path (`runs/typo`), not as a name ("ac/dc")."""
    try:
        return "/" in word and Path(word).parent != Path(".") and Path(word).parent.is_dir()
    except (OSError, ValueError):
        return False


def runs_spelled_like(word: str, beside: Path) -> list[str]:
    """The runs in the current folder and beside the first run whose names are spelled nearly as `word` is (a run's
    name mistyped as the second), nearest first."""
    import difflib

    places = {Path("."), beside.parent}
    try:
        runs = {
            entry.name: entry
            for place in places
            if place.is_dir()
            for entry in place.iterdir()
            if entry.is_dir() and names_a_run(str(entry))
        }
    except OSError:
        return []
    close = difflib.get_close_matches(word, runs, n=3, cutoff=0.6)
    return [one_line(runs[name]) for name in close]


def second_run(
    name: str | None, then: str | None, html: Path | None, first: Path = Path(".")
) -> tuple[Path | None, str | None]:
    """inspect-attention RUN_A RUN_B --html PAGE [NAME]: the second run (None when NAME is a name) and the name.
    A word that names a run (a checkpoint, or a directory holding one) is a run; anything else is the name
    to read, with a note when it is spelled nearly as a run beside the first is."""
    if name is not None and names_a_run(name):
        if html is None:
            raise UsageError(f"{name} is a run: two runs go on one page, so give --html PAGE (or one run and a NAME)")
        if then is not None and names_a_run(then):  # `A B C --html`: the third run was read as the page's text
            raise UsageError(f"inspect-attention puts two runs on a page, and {one_line(then)} is a third; give two")
        return Path(name), then
    if then is not None:
        raise UsageError(
            f"inspect-attention reads one NAME, got {name!r} and {then!r} (a second run must be an "
            f"existing run directory or checkpoint)"
        )
    if name is not None and looks_like_a_path(name):  # `runs/typo`: a mistyped run, not a name to read
        raise UsageError(
            f"{one_line(name)} is no run (a run is a directory with best.pt or last.pt in it, or a "
            f"checkpoint), and its folder {one_line(Path(name).parent)} is there: check the path"
        )
    near = runs_spelled_like(name, first) if name else []
    if near:  # `runs/names runz`: a run mistyped is a name to read, and said to be one
        warn(
            f"{one_line(name)} is read as a name to look at, not as a run: no run is called that "
            f"(runs spelled like it: {', '.join(near)})"
        )
    return None, name


def at_snapshot(ckpt, step: int) -> None:
    """Set the checkpoint's model to the run's snapshot nearest `step`, and say which one on stderr."""
    from minigpt.formats.snapshots import checkpoint_snapshots

    snapshots = checkpoint_snapshots(ckpt)
    if not snapshots.steps:
        raise UsageError(f"{ckpt.path.parent}: the snapshots file holds no snapshots")
    first, last = snapshots.steps[0], snapshots.steps[-1]
    if not first <= step <= last:
        raise UsageError(f"--step {step} is outside the run's snapshots: give a step from {first} to {last}")
    index = snapshots.nearest(step)
    snapshots.load_into(ckpt.model, index)
    exact = "" if snapshots.steps[index] == step else f" (the nearest to {step})"
    print(
        f"reading the snapshot at step {snapshots.steps[index]}{exact}, its weights kept in 8 bits a number (the "
        f"explorer page carries them in 6, so its figures can differ in the second or third decimal)",
        file=sys.stderr,
    )


def inspect_attention(
    checkpoint: Path = checkpoint_argument(),
    name: str | None = typer.Argument(
        None,
        metavar="NAME",
        help="The name to read, e.g. emma (with --html: the page's first text). With --html, "
        "a second run here puts both models on one page instead, and NAME follows it.",
    ),
    then: str | None = typer.Argument(None, metavar="[NAME]", hidden=True),
    layer: int | None = typer.Option(None, "--layer", "-l", help="Only this layer (from 0)."),
    head: int | None = typer.Option(None, "--head", help="Only this head (from 0)."),
    position: int | None = typer.Option(
        None,
        "--position",
        help="Show one row as bars: what position P (0 = the boundary token) attends to, "
        "and what each part writes toward the next token there.",
    ),
    top: int = typer.Option(3, "--top", help="How many next-token predictions to show per position."),
    lens: bool = typer.Option(
        False, "--lens", metavar="", help="Show each layer's guess at the next token (the logit lens)."
    ),
    step: int | None = typer.Option(
        None, "--step", help="Read the run's weights as they were near step N (its snapshots)."
    ),
    png: Path | None = typer.Option(None, "--png", help="Write a grid of heatmaps as PNG instead (needs matplotlib)."),
    json_out: bool = typer.Option(
        False, "--json", metavar="", help="Print the weights and predictions as JSON on stdout."
    ),
    json_file: Path | None = typer.Option(None, "--json-file", help="Write them as JSON to this file instead."),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Write the explorer page instead: one HTML file that runs the model in a browser "
        "(what it measures is cached in ~/.cache/minigpt/pages, the eight latest pages).",
    ),
    lesson: int | None = typer.Option(
        None, "--lesson", help=f"With --html: the page opens at lesson N of its course (1 to {lesson_count()})."
    ),
    open_page: bool = typer.Option(
        False, "--open", metavar="", help="With --html: open the page in the default browser."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", metavar="", help="Replace the --png, --json-file or --html file if it exists."
    ),
    device: str = device_option(),
) -> None:
    """Show what each layer and head attends to while the model reads NAME, or write the explorer page."""
    from rich.console import Console

    from minigpt.common.text import natural_width
    from minigpt.views import attention_maps as views

    for flag, path, kind in (("--html", html, "html"), ("--png", png, "png"), ("--json-file", json_file, "json")):
        ends_as_written(flag, path, kind)
    if lesson is not None and html is None:  # the lessons' range is write_page's to check
        raise UsageError(
            f"--lesson opens the explorer page at a lesson: give it with --html, from 1 to {lesson_count()}"
        )
    second, name = second_run(name, then, html, checkpoint)
    if html is not None:
        besides = {
            "--png": png,
            "--json-file": json_file,
            "--json": json_out or None,
            "--lens": lens or None,
            "--layer": layer,
            "--head": head,
            "--position": position,
            "--step": step,
        }
        given = [option for option, value in besides.items() if value is not None]
        if given:  # the page shows all of these itself: say so rather than write the page alone and drop them
            raise UsageError(
                f"--html writes the explorer page alone, which shows every layer, head, position, the lens "
                f"and the training snapshots itself; drop {', '.join(given)}, or run it without --html"
            )
        if second is not None and lesson is not None:
            raise UsageError(
                "--lesson opens the one-model page at a lesson; the page of two models has no course: "
                "drop --lesson, or give one run"
            )
        write_explorer_page(checkpoint, html, name, open_page, overwrite, lesson, second)
        return
    if top < 1:
        raise UsageError(f"--top is how many predictions to show a position: at least 1, got {top}")
    if name is None:
        raise UsageError("inspect-attention needs a NAME to read (or --html FILE to write the explorer page)")
    if lens and png is not None:
        raise UsageError(
            "--lens and --png cannot go together: --png draws the attention grid; the lens is in the "
            "terminal (--lens) and in the explorer page (--html)"
        )
    for out in (json_file, png):  # before any work: an existing file stays unless --overwrite says otherwise
        if out is not None:
            refuse_existing(out, overwrite)
    ckpt = checkpoint_to_read(checkpoint, device)
    if step is not None:
        at_snapshot(ckpt, step)
    report = views.attention_report(ckpt.model, ckpt.tokenizer, name, top=top)
    pairs = views.select(report, layer, head)
    if json_out or json_file is not None or png is not None:  # each asked for, and nothing else
        if json_out:
            print(strict_json.dumps(views.to_json(report, pairs)))
        if json_file is not None:
            views.write_json(report, json_file, pairs)
        if png is not None:
            views.write_png(report, png, pairs)
        if json_file is not None or png is not None:  # one line on stderr says where
            wrote(*(f for f in (json_file, png) if f is not None))
        return
    console = Console(highlight=False)
    if lens:
        console.print(views.lens_table(report))
        return
    for l, h in pairs:
        if position is None:
            table = views.heatmap(report, l, h)
            console.print(table)
            needed = natural_width(table)
            if needed > console.width:  # rich cuts a table at the terminal's edge: say what was left out
                console.print(
                    f"(the last positions are cut off at {console.width} columns: this map needs {needed}; "
                    f"widen the terminal, or read a row with --position P, or every number with --json)",
                    style="italic",
                    highlight=False,
                )
        else:
            console.print(views.position_bars(report, l, h, position))
        console.print()
    if position is not None:  # and what each part writes toward the token that comes next there
        console.print(views.attribution_bars(report, position))
        console.print()
    console.print(views.predictions_table(report))


def ablate(
    checkpoint: Path = checkpoint_argument(),
    data: Path | None = names_to_score_option(),
    mode: str = typer.Option("zero", "--mode", help="zero: a part's output becomes 0; mean: its mean over the names."),
    device: str = device_option(),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print every part's loss and cost as JSON."),
) -> None:
    """Switch each head, each layer's attention and each layer's MLP off in turn: what each costs in loss."""
    from minigpt.formats.checkpoint import names_to_score
    from minigpt.measurements.ablation import ablate as ablate_parts

    ckpt = checkpoint_to_read(checkpoint, device)
    names, _ = names_to_score(ckpt, data)
    report = ablate_parts(ckpt.model, ckpt.tokenizer, names, mode)
    if json_out:
        print(strict_json.dumps(report.to_dict()))
        return
    print(
        f"loss {report.loss:.4f} with every part on, over {report.tokens:,} tokens in {report.names:,} names; "
        f"each part switched off ({mode}):"
    )
    width = max(len(str(part)) for part, _ in report.costs)
    for part, cost in report.costs:
        print(f"  {str(part):<{width}}  {report.loss + cost:.4f}  {cost:+.4f}")
