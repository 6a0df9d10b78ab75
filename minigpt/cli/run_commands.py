"""The commands that make and use a model: train, sample, eval, export, import, info and plot.

Each reads its options and calls the package; cli/app.py turns what goes wrong into one line
and an exit code, and cli/main.py hangs the commands on the app.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import typer

from minigpt.cli.app import (
    checkpoint_argument,
    checkpoint_to_read,
    device_option,
    ends_as_written,
    names_to_score_option,
    wrote,
)
from minigpt.common.bundled import recipe_names
from minigpt.common.failures import warn
from minigpt.common.text import one_line, plural
from minigpt.errors import UsageError
from minigpt.files import strict_json
from minigpt.files.atomic_file import refuse_existing
from minigpt.files.names_file import check_names_path
from minigpt.files.run_paths import RESUME_ORDER, resolve_checkpoint_path
from minigpt.machine.torchrun import check_batch_splits, most_processes, rank, run_on_processes


def train(
    config: str | None = typer.Option(
        None, "--config", "-c", help=f"TOML recipe: a path, or a name in configs/ ({', '.join(recipe_names())})."
    ),
    data: Path | None = typer.Option(None, "--data", help="Names file, one per line \\[default: data/names.txt]."),
    val_data: Path | None = typer.Option(
        None, "--val-data", help="Validation names file \\[default: a seeded 10% of --data, at most 1000]."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory \\[default: runs/<timestamp>]."),
    steps: int | None = typer.Option(None, help="Shortcut for --set train.steps=N."),
    batch_size: int | None = typer.Option(None, help="Shortcut for --set train.batch_size=N."),
    lr: float | None = typer.Option(None, help="Shortcut for --set train.lr=X."),
    device: str | None = typer.Option(None, help="auto, cpu, cuda, cuda:N or mps (train.device)."),
    seed: int | None = typer.Option(None, help="Shortcut for --set train.seed=S."),
    time_limit: float | None = typer.Option(
        None, "--time-limit", help="Train for this many seconds instead of a number of steps (train.time_limit)."
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        help="Continue a run (its directory or a checkpoint) exactly where it stopped: in its "
        "directory, or in a new one with --out.",
    ),
    set_: list[str] = typer.Option(
        [], "--set", metavar="KEY=VALUE", help="Override any config key: section.key=value (repeatable)."
    ),
    nproc: int = typer.Option(1, "--nproc", help="Train on N processes of this machine (torchrun's launcher, DDP)."),
    tensorboard: Path | None = typer.Option(
        None, "--tensorboard", help="Also write the losses, rate, speed and samples for TensorBoard under DIR/RUN."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", metavar="", help="Replace the run in a non-empty --out directory."
    ),
    overwrite_later: bool = typer.Option(
        False,
        "--overwrite-later",
        metavar="",
        help="With --resume from a checkpoint older than the run's last.pt: replace the steps after it.",
    ),
    no_page: bool = typer.Option(
        False,
        "--no-page",
        metavar="",
        help="Write no explorer page into the run directory at the end (RUN/page.html, to open in a browser).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", help="No progress bar or panels."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the final summary as JSON on stdout."),
) -> None:
    """Train a model on a names file and write best.pt and last.pt into a run directory."""
    from minigpt.formats.recipes import load_config

    if not 1 <= nproc <= most_processes():
        raise UsageError(
            f"--nproc must be from 1 to {most_processes()} (one process per core of this machine, two at "
            f"least), got {nproc}"
        )
    shortcuts = {
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "device": device,
        "seed": seed,
        "time_limit": time_limit,
    }
    for key, value in shortcuts.items():  # named as typed: --lr, not the train.lr it sets
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"--{key.replace('_', '-')} must be a finite number, got {value}")
    refuse_two_values(shortcuts, set_)
    overrides = list(set_) + [f"train.{k}={v!r}" for k, v in shortcuts.items() if v is not None]
    for path in (data, val_data):  # a wrong path is said before torch is imported (seconds)
        if path is not None:
            check_names_path(path)
    if resume is not None:
        resolve_checkpoint_path(resume, RESUME_ORDER)
        if config is not None:
            raise UsageError(
                "--resume continues a run with its own recipe; drop --config (--set changes its [train] keys)"
            )
        from minigpt.formats.checkpoint import resume_config  # torch: not for a launching process

        cfg = resume_config(resume, overrides)
    else:  # with no --config, train.auto_scale picks the bundled recipe that fits the data
        cfg = load_config(config, overrides)
    if nproc > 1 and rank() is None:  # checked here, before any process starts
        check_batch_splits(cfg.train.batch_size, nproc, "--nproc")
        raise typer.Exit(run_on_processes(nproc))
    from minigpt.runs.run import train as run_training  # torch loads here: a launching process never needs it

    report = None
    if tensorboard is not None:
        from minigpt.runs.tensorboard_log import TensorBoard

        report = TensorBoard(tensorboard)
    result = run_training(
        cfg,
        data,
        val_data,
        out,
        overwrite=overwrite,
        quiet=quiet or json_out,
        resume_from=resume,
        overwrite_later=overwrite_later,
        report=report,
    )
    if json_out and not rank():
        from minigpt.formats.checkpoint import resume_config

        started_from = resume_config(resume) if resume is not None else load_config(cfg.source)
        print(strict_json.dumps({**result.to_json(), "differs_from_recipe": changed_keys(started_from, cfg)}))
        sys.stdout.flush()  # the result first: standard output that cannot take it ends the command here
    if not no_page and not rank():
        write_run_page(result.run_dir, hidden=quiet or json_out, said=not quiet)


def write_run_page(run_dir: Path, hidden: bool, said: bool) -> None:
    """The run's explorer page, RUN/page.html, written as the run ends: the learner's next step is to look.
    A model the page cannot read (one trained without the mask) says why, and the run stands as it is."""
    from minigpt.errors import MiniGPTError
    from minigpt.views.explorer_page import write_page
    from minigpt.views.training_display import snapshots_bar

    bar, progress = snapshots_bar(hidden=hidden)
    try:
        with bar:
            path = write_page(run_dir, run_dir / "page.html", overwrite=True, progress=progress)
    except MiniGPTError as e:
        warn(f"no explorer page: {e}")
        return
    if said:  # --quiet says nothing of it, as of the rest of the run
        print(f"the explorer page: {one_line(path)}, open it in a browser (--no-page skips it)", file=sys.stderr)


def changed_keys(recipe, run) -> dict:
    """Each recipe key the run trained with another value (--set, a shortcut, the block size fitted): both values."""
    from minigpt.formats.recipes import flat_config, recipe_differences

    differs = recipe_differences([flat_config(recipe), flat_config(run)])
    return {key: {"recipe": before, "run": after} for key, (before, after) in differs.items()}


def refuse_two_values(shortcuts: dict, settings: list[str]) -> None:
    """`--steps 9 --set train.steps=7` says two things of one key: refused, where the later quietly won."""
    from minigpt.formats.recipes import parse_override

    given = {f"{section}.{key}": value for section, key, value in map(parse_override, settings)}
    for key, value in shortcuts.items():
        other = given.get(f"train.{key}")
        if value is not None and other is not None and other != value:
            raise UsageError(
                f"--{key.replace('_', '-')} {value} and --set train.{key}={other} set one key to two "
                f"values; give one of them"
            )


def sample(
    checkpoint: Path = checkpoint_argument(),
    num: int = typer.Option(10, "--num", "-n", help="How many names."),
    temperature: float | None = typer.Option(
        None, "--temperature", "-t", help="Below 1: safer names; above 1: wilder \\[default: the checkpoint's recipe]."
    ),
    top_k: int | None = typer.Option(None, "--top-k", help="Sample only from the K likeliest characters."),
    top_p: float | None = typer.Option(None, "--top-p", help="Sample from the likeliest characters up to mass P."),
    prefix: str = typer.Option("", "--prefix", "-p", help="Every name starts with this."),
    seed: int | None = typer.Option(None, help="Seed for repeatable samples."),
    device: str = device_option(),
    new_only: bool = typer.Option(False, "--new-only", metavar="", help="Drop names that are in the training data."),
    mark: bool = typer.Option(False, "--mark", metavar="", help="Mark names that are in the training data with ' *'."),
    data: Path | None = typer.Option(
        None,
        "--data",
        help="Check names against this names file (for a "
        "checkpoint that does not carry its training names, such as an import).",
    ),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the names as JSON on stdout."),
) -> None:
    """Generate names from a trained checkpoint, one per line."""
    from minigpt.common.text import CUT, as_shown
    from minigpt.files.membership import NameSet
    from minigpt.files.names_file import read_names
    from minigpt.runs.new_names import Tally, name_record, sample_batches

    ckpt = checkpoint_to_read(checkpoint, device)
    if data is not None:
        ckpt.membership = NameSet.exact(read_names(data))
    known = ckpt.membership.kind != "none"
    block = ckpt.config.model.block_size
    batches = sample_batches(ckpt, num, new_only, seed, prefix, temperature, top_k, top_p)
    if json_out:  # written a batch at a time as the names are made: -n 10,000,000 is never held
        records = ([name_record(name, ckpt) for name in batch] for batch in batches)
        for piece in strict_json.streamed_list("names", records):
            print(piece, end="", flush=True)
        print()
        return

    def shown(name: str) -> str:  # a shared checkpoint's vocabulary may hold escape sequences: printed as text
        return one_line(as_shown(name, block)) + (" *" if mark and known and name in ckpt.membership else "")

    tally = Tally()
    for batch in batches:  # printed as made
        if batch:
            print("\n".join(map(shown, batch)), flush=True)
        tally.add(batch, ckpt)
    cut_note = (
        f"; {tally.cut} filled the model's {block} positions before it ended them: cut, marked {CUT}, and not counted"
        if tally.cut
        else ""
    )
    if not known:
        warn(
            f"{one_line(ckpt.path)} does not carry its training names, so whether these are new is unknown; "
            f"--data FILE checks them against a names file{cut_note}"
        )
        return
    if not ckpt.config.model.causal:  # its names are no invention: the note above says why
        print(
            f"{tally.printed} names of a model trained without the mask, not counted as new{cut_note}", file=sys.stderr
        )
        return
    print(f"{tally.new} of {tally.printed} names are not in the training data{cut_note}", file=sys.stderr)


def eval_(
    checkpoint: Path = checkpoint_argument(),
    data: Path | None = names_to_score_option(),
    device: str = device_option(),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the loss, tokens and names as JSON."),
    per_name: bool = typer.Option(
        False,
        "--per-name",
        metavar="",
        help="Print each name's loss, one JSON object a "
        "line: name, tokens, loss (nats per token; the token-weighted mean is eval's loss).",
    ),
    csv_out: bool = typer.Option(False, "--csv", metavar="", help="With --per-name: CSV (name,tokens,loss) instead."),
) -> None:
    """Mean cross-entropy per predicted token (characters and the end) over the run's validation names, or a file's."""
    from minigpt.formats.checkpoint import names_to_score
    from minigpt.measurements.name_losses import evaluate_names

    if csv_out and not per_name:
        raise UsageError("--csv writes the per-name losses: give it with --per-name")
    if per_name and json_out:
        raise UsageError("--per-name prints JSON lines already; drop --json (or --per-name for the mean alone)")
    ckpt = checkpoint_to_read(checkpoint, device)
    names, what = names_to_score(ckpt, data)
    if per_name:
        print_name_losses(ckpt, names, what, csv_out)
        return
    result = evaluate_names(ckpt.model, ckpt.tokenizer, names, what=what)
    if json_out:
        print(
            strict_json.dumps(
                {
                    **{key: result[key] for key in ("loss", "tokens", "names", "block_size")},
                    "scored": what,
                    "cut": result["truncated"],
                    "unscored_tokens": result["unscored"],
                }
            )
        )
    else:
        print(
            f"loss {result['loss']:.4f} over {result['tokens']:,} tokens in {result['names']:,} names ({what}), "
            f"block size {result['block_size']}"
        )
    if result["truncated"]:
        were = "was" if result["truncated"] == 1 else "were"
        warn(
            f"{plural(result['truncated'], 'name')} longer than the block size {were} cut to fit, and "
            f"{plural(result['unscored'], 'token')} of theirs not scored: this loss compares only with one over the "
            f"same tokens (the same names at the same block size)"
        )


def print_name_losses(ckpt, names: list[str], what: str, csv_out: bool) -> None:
    """One line a name, as its losses are computed, in the order of the names."""
    import csv

    from minigpt.common.text import as_text
    from minigpt.measurements.name_losses import name_losses_as_scored

    rows = name_losses_as_scored(ckpt.model, ckpt.tokenizer, names, what=what)
    if csv_out:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["name", "tokens", "loss"])
        writer.writerows((spreadsheet_safe(as_text(name)), tokens, repr(loss)) for name, tokens, loss in rows)
    else:
        for name, tokens, loss in rows:
            print(strict_json.dumps({"name": name, "tokens": tokens, "loss": loss}))


def spreadsheet_safe(cell: str) -> str:
    """A name a spreadsheet would run as a formula (=, +, -, @, a tab or a carriage return first) with a ' put
    before it, as OWASP's advice on CSV injection has it: the spreadsheet shows the name, runs nothing."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def export(
    checkpoint: Path = checkpoint_argument(),
    out: Path = typer.Argument(
        ..., metavar="OUT", help="The JSON file (microgpt) or the directory (safetensors) to write."
    ),
    format: str | None = typer.Option(
        None,
        "--format",
        help="microgpt (one JSON file) or safetensors "
        "(model.safetensors and config.json) \\[default: microgpt for OUT.json when "
        "microgpt can run the model, else safetensors].",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace OUT if it exists."),
) -> None:
    """Write a checkpoint's weights, under microgpt's names, as microgpt's JSON or as safetensors."""
    from minigpt.formats.export import export_checkpoint

    wrote(export_checkpoint(checkpoint, out, format, overwrite))


def import_(
    source: Path = typer.Argument(
        ..., metavar="SOURCE", help="What `minigpt export` wrote: microgpt JSON, or a safetensors directory."
    ),
    out: Path = typer.Argument(..., metavar="OUT", help="The checkpoint file to write."),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace OUT if it exists."),
) -> None:
    """Turn exported weights back into a checkpoint that sample, eval and inspect-attention use."""
    if out.suffix.lower() not in ("", ".pt"):  # a checkpoint under another kind's name reads as that kind
        raise UsageError(
            f"OUT is the checkpoint import writes, a torch file: name it .pt (got {out.name}); minigpt "
            f"export writes JSON and safetensors"
        )
    from minigpt.formats.microgpt_json import import_microgpt
    from minigpt.formats.safetensors_files import import_safetensors, is_safetensors

    (import_safetensors if is_safetensors(source) else import_microgpt)(source, out, overwrite)
    wrote(out)


def info(
    checkpoint: Path = checkpoint_argument(),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print what the checkpoint holds as JSON."),
) -> None:
    """What a checkpoint holds: its recipe, its tensors under microgpt's names, vocabulary, step and data."""
    from rich.console import Console

    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.views.panels import checkpoint_info, checkpoint_json

    ckpt = load_checkpoint(checkpoint)
    if json_out:
        print(strict_json.dumps(checkpoint_json(ckpt)))
    else:
        checkpoint_info(Console(highlight=False), ckpt)


def plot(
    run_dirs: list[Path] = typer.Argument(..., metavar="RUN_DIR", help="Run directories (each holds metrics.jsonl)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="PNG file to write \\[default: RUN_DIR/loss.png, which it redraws; needed for several runs].",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", metavar="", help="Replace the --out file if it exists."),
) -> None:
    """Draw the train and validation loss against step as a PNG (needs matplotlib); several runs on one plot."""
    from minigpt.files.run_records import read_metrics
    from minigpt.views.loss_curve import write_loss_png, write_overlay_png

    if out is None and len(run_dirs) > 1:
        raise UsageError("several runs are drawn on one plot: name it with --out FILE.png")
    if out is not None:
        ends_as_written("--out", out, "png")
        refuse_existing(out, overwrite)
    if len(run_dirs) == 1:
        drawn = out if out is not None else run_dirs[0] / "loss.png"
        write_loss_png(run_dirs[0], drawn)
        wrote(drawn)
    elif out is not None:  # refused above without it
        write_overlay_png([(str(run), read_metrics(run)) for run in run_dirs], out)
        wrote(out)
