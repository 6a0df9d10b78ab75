"""The `minigpt` command: every command hung on the app, in the order `minigpt --help` lists them."""

from __future__ import annotations

import gc
import os
import sys

from minigpt.cli.signals import end_process, heard_at_the_end, heard_from_the_start

if os.path.basename(sys.argv[0]) == "minigpt":  # the installed command: heard before the imports below load
    heard_from_the_start()

from minigpt.cli.app import app, drop_unusable_thread_count, drop_unusable_widths, reports_errors
from minigpt.cli.experiment_commands import compare, sweep
from minigpt.cli.inspect_commands import ablate, inspect_attention
from minigpt.cli.run_commands import eval_, export, import_, info, plot, sample, train
from minigpt.common.failures import warn
from minigpt.errors import Interrupted

for name, command in [
    ("train", train),
    ("sample", sample),
    ("eval", eval_),
    ("inspect-attention", inspect_attention),
    ("export", export),
    ("import", import_),
    ("ablate", ablate),
    ("info", info),
    ("plot", plot),
    ("compare", compare),
    ("sweep", sweep),
]:
    app.command(name=name)(reports_errors(command))


def old_spellings(args: list[str]) -> list[str]:
    """`inspect-attention ... --json FILE.json`, from before --json meant "print JSON" in every command,
    still writes FILE.json (for one release), with a note."""
    if "inspect-attention" not in args:
        return args
    args = list(args)
    for i, arg in enumerate(args[:-1]):
        if arg == "--json" and args[i + 1].lower().endswith(".json"):
            args[i] = "--json-file"
            warn(f"--json {args[i + 1]} is now --json-file {args[i + 1]}; --json alone prints the JSON")
    return args


def main() -> None:
    from minigpt.cli.app import state

    try:
        heard_from_the_start()  # a signal before a command's own handlers: one line and its exit code
        drop_unusable_widths()  # before --help is drawn, as before every command
        drop_unusable_thread_count()  # before torch is imported, whose OpenMP reads it once
        state["argv"] = old_spellings(sys.argv[1:])
        app(args=state["argv"], prog_name="minigpt")
    except Interrupted as e:  # heard before a command ran, or between its handlers
        print(f"minigpt: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    finally:
        state["argv"] = []
        heard_at_the_end()  # the work is done and written: a signal now ends it with one line
        # Python's exit runs the garbage collector over every object still alive: with torch imported,
        # some 170,000 of them and about a second of every command (docs/speed.md). Nothing left at exit
        # needs collecting (every file is written and closed; atexit still runs), so all of it is moved
        # where the collector never looks.
        gc.freeze()


def run() -> None:
    """The installed `minigpt` and `python -m minigpt`: `main`, then the process's end (signals.end_process), so
    that a signal while it exits is one line and its exit code. Tests call `main`, which ends in SystemExit."""
    try:
        main()
        code = 0
    except SystemExit as e:
        if isinstance(e.code, str):  # sys.exit("message"): Python prints it and exits 1
            print(e.code, file=sys.stderr)
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    end_process(code)
