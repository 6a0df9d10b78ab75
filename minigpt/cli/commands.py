"""The `minigpt` command: a thin layer over the Python API.

Each command reads its options and calls into the modules; cli/app.py turns what goes wrong
into one line and an exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from minigpt.cli.app import app, reports_errors
from minigpt.cli.errors import UsageError, one_line, refuse_existing
from minigpt.scaling.torchrun import check_batch_splits, rank, run_on_processes
from minigpt.formats import strict_json


def on_free_cores(device: str) -> None:
    """Before CPU work: one torch thread per free core (scaling/threads.py)."""
    from minigpt.scaling.processes import resolve_device
    from minigpt.scaling.threads import QUICK_LOOK, use_free_cores

    if resolve_device(device).type == "cpu":
        use_free_cores(QUICK_LOOK)


def wrote(*paths: Path, then: str = "") -> None:
    """The one line on stderr that says which files a command wrote."""
    print(f"wrote {' and '.join(one_line(p) for p in paths)}{then}", file=sys.stderr)


def checkpoint_argument():
    """The CHECKPOINT that sample, eval, inspect-attention, export and info read."""
    return typer.Argument(..., metavar="CHECKPOINT", help="A checkpoint file, or a run directory (uses its best.pt).")


@app.command()
@reports_errors
def train(
    config: Optional[str] = typer.Option(
        None, "--config", "-c", help="TOML recipe: a path, or a name in configs/ (default, quality, microgpt, makemore, tiny)."
    ),
    data: Optional[Path] = typer.Option(None, "--data", help="Names file, one per line \\[default: data/names.txt]."),
    val_data: Optional[Path] = typer.Option(
        None, "--val-data", help="Validation names file \\[default: a seeded 10% of --data, at most 1000]."
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory \\[default: runs/<timestamp>]."),
    steps: Optional[int] = typer.Option(None, help="Shortcut for --set train.steps=N."),
    batch_size: Optional[int] = typer.Option(None, help="Shortcut for --set train.batch_size=N."),
    lr: Optional[float] = typer.Option(None, help="Shortcut for --set train.lr=X."),
    device: Optional[str] = typer.Option(None, help="auto, cpu, cuda, cuda:N or mps (train.device)."),
    seed: Optional[int] = typer.Option(None, help="Shortcut for --set train.seed=S."),
    time_limit: Optional[float] = typer.Option(
        None, "--time-limit", help="Train for this many seconds instead of a number of steps (train.time_limit)."
    ),
    resume: Optional[Path] = typer.Option(
        None, "--resume", help="Continue a run (its directory or a checkpoint) exactly where it stopped: in its "
        "directory, or in a new one with --out."
    ),
    set_: list[str] = typer.Option([], "--set", metavar="KEY=VALUE", help="Override any config key: section.key=value (repeatable)."),
    nproc: int = typer.Option(1, "--nproc", help="Train on N processes of this machine (torchrun's launcher, DDP)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", metavar="", help="Replace the run in a non-empty --out directory."
    ),
    overwrite_later: bool = typer.Option(
        False, "--overwrite-later", metavar="",
        help="With --resume from a checkpoint older than the run's last.pt: replace the steps after it.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", help="No progress bar or panels."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the final summary as JSON on stdout."),
) -> None:
    """Train a model on a names file and write best.pt and last.pt into a run directory."""
    from minigpt.config import default_config_path, load_config

    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    shortcuts = {"steps": steps, "batch_size": batch_size, "lr": lr, "device": device, "seed": seed,
                 "time_limit": time_limit}
    overrides = list(set_) + [f"train.{k}={v!r}" for k, v in shortcuts.items() if v is not None]
    if resume is not None:
        if config is not None:
            raise UsageError("--resume continues a run with its own recipe; drop --config (--set changes its [train] keys)")
        from minigpt.formats.checkpoint import resume_config

        cfg = resume_config(resume, overrides)
    else:
        cfg = load_config(config if config is not None else default_config_path(), overrides)
    if nproc > 1 and rank() is None:  # checked here, before any process starts
        check_batch_splits(cfg.train.batch_size, nproc, "--nproc")
        raise typer.Exit(run_on_processes(nproc))
    from minigpt.training import train as run_training  # torch loads here: a launching process never needs it

    result = run_training(cfg, data, val_data, out, overwrite=overwrite, quiet=quiet or json_out, resume_from=resume,
                          overwrite_later=overwrite_later)
    if json_out and not rank():
        print(strict_json.dumps(result.to_json()))


@app.command()
@reports_errors
def sample(
    checkpoint: Path = checkpoint_argument(),
    num: int = typer.Option(10, "--num", "-n", help="How many names."),
    temperature: Optional[float] = typer.Option(
        None, "--temperature", "-t", help="Below 1: safer names; above 1: wilder \\[default: the checkpoint's recipe]."
    ),
    top_k: Optional[int] = typer.Option(None, "--top-k", help="Sample only from the K likeliest characters."),
    top_p: Optional[float] = typer.Option(None, "--top-p", help="Sample from the likeliest characters up to mass P."),
    prefix: str = typer.Option("", "--prefix", "-p", help="Every name starts with this."),
    seed: Optional[int] = typer.Option(None, help="Seed for repeatable samples."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:N or mps."),
    new_only: bool = typer.Option(False, "--new-only", metavar="", help="Drop names that are in the training data."),
    mark: bool = typer.Option(False, "--mark", metavar="", help="Mark names that are in the training data with ' *'."),
    data: Optional[Path] = typer.Option(None, "--data", help="Check names against this names file (for a "
                                        "checkpoint that does not carry its training names, such as an import)."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the names as JSON on stdout."),
) -> None:
    """Generate names from a trained checkpoint, one per line."""
    from minigpt.data import read_names
    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.sampling import sample as sample_names, sample_batches
    from minigpt.scaling.membership import NameSet
    from minigpt.scaling.processes import resolve_device

    on_free_cores(device)
    ckpt = load_checkpoint(checkpoint, resolve_device(device))
    if data is not None:
        ckpt.membership = NameSet.exact(read_names(data))
    seen = ckpt.membership
    known = seen.kind != "none"  # an imported checkpoint cannot know its training names
    if json_out:
        names = sample_names(ckpt, num, new_only, seed, prefix, temperature, top_k, top_p)
        print(strict_json.dumps({"names": [{"name": n, "in_training_data": (n in seen) if known else None} for n in names]}))
        return
    printed = new = 0
    for batch in sample_batches(ckpt, num, new_only, seed, prefix, temperature, top_k, top_p):  # printed as made
        if batch:  # a shared checkpoint's vocabulary may hold escape sequences: print them as text
            print("\n".join(f"{one_line(n)} *" if mark and known and n in seen else one_line(n) for n in batch), flush=True)
        printed += len(batch)
        new += sum(name not in seen for name in batch) if known else 0
    if not known:
        print(f"minigpt: note: {one_line(ckpt.path)} does not carry its training names, so whether these are new is unknown; "
              f"--data FILE checks them against a names file", file=sys.stderr)
        return
    print(f"{new} of {printed} names are not in the training data", file=sys.stderr)


@app.command(name="eval")
@reports_errors
def eval_(
    checkpoint: Path = checkpoint_argument(),
    data: Optional[Path] = typer.Option(None, "--data", help="Names file to score (default: the run's validation names)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:N or mps."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the loss, tokens and names as JSON."),
) -> None:
    """Mean cross-entropy per predicted token (characters and the end) over the run's validation names, or a file's."""
    from minigpt.formats.checkpoint import load_checkpoint, names_to_score
    from minigpt.scaling.processes import resolve_device
    from minigpt.training import evaluate_names

    on_free_cores(device)
    ckpt = load_checkpoint(checkpoint, resolve_device(device))
    names, what = names_to_score(ckpt, data)
    result = evaluate_names(ckpt.model, ckpt.tokenizer, names, what=what)
    if json_out:
        print(strict_json.dumps({**{key: result[key] for key in ("loss", "tokens", "names")}, "scored": what}))
    else:
        print(f"loss {result['loss']:.4f} over {result['tokens']:,} tokens in {result['names']:,} names ({what})")
    if result["truncated"]:
        print(f"note: {result['truncated']} names longer than the block size were cut to fit", file=sys.stderr)


def write_explorer_page(checkpoint: Path, out: Path, text: str | None, open_page: bool, overwrite: bool) -> None:
    import webbrowser

    from minigpt.cli.display import snapshots_bar
    from minigpt.views.explorer_page import write_page

    on_free_cores("cpu")  # the page is written on the CPU: its head descriptions and ablation costs
    bar, progress = snapshots_bar()
    with bar:
        write_page(checkpoint, out, text=text, overwrite=overwrite, progress=progress)
    wrote(out, then=": open it in a browser")
    if open_page and not webbrowser.open(out.resolve().as_uri()):
        print("minigpt: note: no browser could be opened here", file=sys.stderr)


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
    print(f"reading the snapshot at step {snapshots.steps[index]}{exact}", file=sys.stderr)


@app.command(name="inspect-attention")
@reports_errors
def inspect_attention(
    checkpoint: Path = checkpoint_argument(),
    name: Optional[str] = typer.Argument(
        None, metavar="NAME", help="The name to read, e.g. emma (with --html: the page's first text)."
    ),
    layer: Optional[int] = typer.Option(None, "--layer", "-l", help="Only this layer (from 0)."),
    head: Optional[int] = typer.Option(None, "--head", help="Only this head (from 0)."),
    position: Optional[int] = typer.Option(
        None, "--position", help="Show one row as bars: what position P (0 = the boundary token) attends to."
    ),
    top: int = typer.Option(3, "--top", help="How many next-token predictions to show per position."),
    lens: bool = typer.Option(False, "--lens", metavar="", help="Show each layer's guess at the next token (the logit lens)."),
    step: Optional[int] = typer.Option(None, "--step", help="Read the run's weights as they were near step N (its snapshots)."),
    png: Optional[Path] = typer.Option(
        None, "--png", help="Write a grid of heatmaps as PNG instead (needs matplotlib)."
    ),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the weights and predictions as JSON on stdout."),
    json_file: Optional[Path] = typer.Option(None, "--json-file", help="Write them as JSON to this file instead."),
    html: Optional[Path] = typer.Option(
        None, "--html", help="Write the explorer page instead: one HTML file that runs the model in a browser."
    ),
    open_page: bool = typer.Option(
        False, "--open", metavar="", help="With --html: open the page in the default browser."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", metavar="", help="Replace the --png, --json-file or --html file if it exists."
    ),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:N or mps."),
) -> None:
    """Show what each layer and head attends to while the model reads NAME, or write the explorer page."""
    from rich.console import Console

    from minigpt.views import attention_maps as views
    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.scaling.processes import resolve_device

    if html is not None:
        write_explorer_page(checkpoint, html, name, open_page, overwrite)
        return
    if name is None:
        raise UsageError("inspect-attention needs a NAME to read (or --html FILE to write the explorer page)")
    if lens and png is not None:
        raise UsageError("--lens and --png cannot go together: --png draws the attention grid; the lens is in the "
                         "terminal (--lens) and in the explorer page (--html)")
    for out in (json_file, png):  # before any work: an existing file stays unless --overwrite says otherwise
        if out is not None:
            refuse_existing(out, overwrite)
    on_free_cores(device)
    ckpt = load_checkpoint(checkpoint, resolve_device(device))
    if step is not None:
        at_snapshot(ckpt, step)
    report = views.attention_report(ckpt.model, ckpt.tokenizer, name, top=max(1, top))
    pairs = views.select(report, layer, head)
    if json_out:
        print(strict_json.dumps(views.to_json(report)))
        return
    if json_file is not None or png is not None:  # the files are what was asked for: one line says where
        if json_file is not None:
            views.write_json(report, json_file)
        if png is not None:
            views.write_png(report, png, pairs)
        wrote(*(f for f in (json_file, png) if f is not None))
        return
    console = Console(highlight=False)
    if lens:
        console.print(views.lens_table(report))
        return
    for l, h in pairs:
        if position is None:
            console.print(views.heatmap(report, l, h))
        else:
            console.print(views.position_bars(report, l, h, position))
        console.print()
    console.print(views.predictions_table(report))


@app.command()
@reports_errors
def export(
    checkpoint: Path = checkpoint_argument(),
    out: Path = typer.Argument(
        ..., metavar="OUT", help="The JSON file (microgpt) or the directory (safetensors) to write."
    ),
    format: str = typer.Option("microgpt", "--format", help="microgpt (one JSON file) or safetensors "
                               "(model.safetensors and config.json)."),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace OUT if it exists."),
) -> None:
    """Write a checkpoint's weights, under microgpt's names, as microgpt's JSON or as safetensors."""
    from minigpt.formats.microgpt_json import export_microgpt
    from minigpt.formats.safetensors_files import export_safetensors

    exporters = {"microgpt": export_microgpt, "safetensors": export_safetensors}
    if format not in exporters:
        raise UsageError(f"unknown export format '{format}' (microgpt or safetensors)")
    exporters[format](checkpoint, out, overwrite)
    wrote(out)


@app.command(name="import")
@reports_errors
def import_(
    source: Path = typer.Argument(
        ..., metavar="SOURCE", help="What `minigpt export` wrote: microgpt JSON, or a safetensors directory."
    ),
    out: Path = typer.Argument(..., metavar="OUT", help="The checkpoint file to write."),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace OUT if it exists."),
) -> None:
    """Turn exported weights back into a checkpoint that sample, eval and inspect-attention use."""
    from minigpt.formats.microgpt_json import import_microgpt
    from minigpt.formats.safetensors_files import import_safetensors, is_safetensors

    (import_safetensors if is_safetensors(source) else import_microgpt)(source, out, overwrite)
    wrote(out)
    if out.suffix.lower() in (".json", ".safetensors"):
        print(f"minigpt: note: {out} is a minigpt checkpoint (a torch file), whatever its name says; "
              f"minigpt export writes JSON and safetensors", file=sys.stderr)


@app.command()
@reports_errors
def ablate(
    checkpoint: Path = checkpoint_argument(),
    data: Optional[Path] = typer.Option(None, "--data", help="Names file to score (default: the run's validation names)."),
    mode: str = typer.Option("zero", "--mode", help="zero: a part's output becomes 0; mean: its mean over the names."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:N or mps."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print every part's loss and cost as JSON."),
) -> None:
    """Switch each head, each layer's attention and each layer's MLP off in turn: what each costs in loss."""
    from minigpt.formats.checkpoint import load_checkpoint, names_to_score
    from minigpt.scaling.processes import resolve_device
    from minigpt.views.ablation import ablate as ablate_parts

    on_free_cores(device)
    ckpt = load_checkpoint(checkpoint, resolve_device(device))
    names, _ = names_to_score(ckpt, data)
    report = ablate_parts(ckpt.model, ckpt.tokenizer, names, mode)
    if json_out:
        print(strict_json.dumps(report.to_dict()))
        return
    print(f"loss {report.loss:.4f} with every part on, over {report.tokens:,} tokens in {report.names:,} names; "
          f"each part switched off ({mode}):")
    width = max(len(str(part)) for part, _ in report.costs)
    for part, cost in report.costs:
        print(f"  {str(part):<{width}}  {report.loss + cost:.4f}  {cost:+.4f}")


@app.command()
@reports_errors
def info(
    checkpoint: Path = checkpoint_argument(),
) -> None:
    """What a checkpoint holds: its recipe, its tensors under microgpt's names, vocabulary, step and data."""
    from rich.console import Console

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.cli.display import checkpoint_info

    checkpoint_info(Console(highlight=False), load_checkpoint(checkpoint))


@app.command()
@reports_errors
def plot(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A run directory (it holds metrics.jsonl)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="PNG file to write \\[default: RUN_DIR/loss.png, "
                                       "which it redraws]."),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace the --out file if it exists."),
) -> None:
    """Draw the train and validation loss against step as a PNG (needs matplotlib)."""
    from minigpt.views.loss_curve import write_loss_png

    if out is not None:
        refuse_existing(out, overwrite)
    out = out if out is not None else run_dir / "loss.png"
    write_loss_png(run_dir, out)
    wrote(out)


def old_spellings(args: list[str]) -> list[str]:
    """`inspect-attention ... --json FILE.json`, from before --json meant "print JSON" in every command,
    still writes FILE.json (for one release), with a note."""
    if "inspect-attention" not in args:
        return args
    args = list(args)
    for i, arg in enumerate(args[:-1]):
        if arg == "--json" and args[i + 1].lower().endswith(".json"):
            args[i] = "--json-file"
            print(f"minigpt: note: --json {args[i + 1]} is now --json-file {args[i + 1]}; "
                  f"--json alone prints the JSON", file=sys.stderr)
    return args


def main() -> None:
    app(args=old_spellings(sys.argv[1:]), prog_name="minigpt")
