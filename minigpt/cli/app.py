"""The typer app that the `minigpt` commands hang on, and how a command ends.

An error the user can fix exits 2 and a run-time failure exits 1, each with one line on
stderr; `minigpt --debug ...` shows the traceback instead. Usage and help lines read as
click writes them.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

from minigpt import __version__
from minigpt.cli.signals import HEARD, said
from minigpt.cli.streams import DroppedOnFailure, checked_streams
from minigpt.cli.typer_patches import patch_typer_and_rich
from minigpt.common.failures import LostProcess, first_line, warn
from minigpt.common.text import one_line, shortened
from minigpt.config import check_64_bits
from minigpt.errors import Interrupted, MiniGPTError, UsageError
from minigpt.files.atomic_file import other_ending
from minigpt.machine.torchrun import LOST_A_PROCESS, keep_error_line, rank

# typer 0.2x carries its own copy of click
click: Any = getattr(typer, "_click", None) or importlib.import_module("click")


class OneLineUsageErrors(typer.core.TyperGroup):
    """click's usage errors ("No such option", "Missing argument") as the one line every other
    error is, rather than typer's boxed panel under the usage text."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            if not windows_expand_args:  # passed on only where asked for: click 8.0.0 has no such argument
                extra["windows_expand_args"] = False
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.ClickException as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # the help is already printed
                code = e.exit_code
            else:
                code = usage_error(e)
        except typer.Abort:  # end of input at a prompt
            print("minigpt: aborted", file=sys.stderr)
            code = 1
        except BrokenPipeError:  # `minigpt --help | head -1`: as every command ends when its reader goes
            code = reader_gone()
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def usage_error(e) -> int:
    """One line for a usage error click found, naming where the help is; its exit code."""
    where = (
        f" (see '{e.ctx.command_path} --help')"
        if getattr(e, "ctx", None) is not None and not isinstance(e, SaidAsIs)
        else ""
    )
    message = (argument_as_option(e) or e.format_message().strip().rstrip(".")) + file_as_argument(e)
    print(f"minigpt: error: {one_line(message)}{where}", file=DroppedOnFailure(sys.stderr))
    return e.exit_code


def file_as_argument(e) -> str:
    """`minigpt train names.txt`: a command that takes its files by option is given one by its place; the
    option that takes it."""
    extra = re.search(r"unexpected extra argument\S* \((\S+?)\)", e.format_message())
    ctx = getattr(e, "ctx", None)
    if extra is None or ctx is None:
        return ""
    options = {opt for p in ctx.command.params for opt in getattr(p, "opts", [])}
    for option, ending in (("--data", (".txt", ".csv", ".names")), ("--config", (".toml",))):
        if option in options and extra.group(1).lower().endswith(ending):
            return f": a file is given by its option here, {ctx.command_path} {option} {extra.group(1)}"
    if {"--resume", "--out"} <= options and Path(extra.group(1)).is_dir():  # `minigpt train runs/mine`
        folder = extra.group(1)
        return (
            f": a run's folder is given by its option here: {ctx.command_path} --resume {folder} continues "
            f"the run in it, {ctx.command_path} --out {folder} trains a new one there"
        )
    return ""


def argument_as_option(e) -> str | None:
    """`--name emma` where NAME is an argument: say that it is given by its place, not as an option."""
    ctx = getattr(e, "ctx", None)
    if not isinstance(e, click.exceptions.NoSuchOption) or ctx is None:
        return None
    word = e.option_name.lstrip("-").replace("-", "_").lower()
    arguments = [
        p
        for p in ctx.command.params
        if getattr(p, "param_type_name", "") == "argument" and not getattr(p, "hidden", False)
    ]
    shown = [(p.metavar or p.name.upper()) for p in arguments]
    if not any(word in (p.name.lower(), (p.metavar or "").lower()) for p in arguments):
        return None
    return (
        f"there is no option {e.option_name}: {word.upper()} is an argument, given by its place: "
        f"{ctx.command_path} {' '.join(shown)}"
    )


app = typer.Typer(
    cls=OneLineUsageErrors,
    help="Train a tiny character-level GPT on a file of names, then invent new ones.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
state: dict[str, Any] = {"debug": False, "argv": []}  # argv: the command line main() read, for the words beside one


PATCHED = patch_typer_and_rich()  # which of typer's and rich's hooks were there to mend
# torch warns on import when numpy is not installed; minigpt never converts tensors to numpy
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")


def fail(message: str, code: int, lost: bool = False) -> NoReturn:
    """One error line and the exit code; in a process `--nproc` started, the line is left for it to print."""
    line = shortened(one_line(message))
    if not keep_error_line(LOST_A_PROCESS + line if lost else line):
        who = "minigpt" if rank() is None else f"minigpt (rank {rank()})"
        sys.stderr.write(f"{who}: error: {line}\n")  # one write: two processes' lines never run together
    raise typer.Exit(code)


def reports_errors(command):
    """Turn our errors into one line and an exit code; a traceback only with --debug."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        drop_unusable_widths()
        with checked_streams():
            return reporting_errors(command, *args, **kwargs)

    return wrapper


NARROWEST = 20  # columns: below this no table or map can be drawn at all
WIDEST = 1_000  # columns: past this rich pads every line of help to millions of spaces, for minutes


def drop_unusable_widths() -> None:
    """A COLUMNS or LINES that no table can be drawn in (0, negative, text) is dropped, so that rich asks the
    terminal or takes 80: with COLUMNS=0 it would print nothing, and a command would end having said nothing.
    One past WIDEST is taken as WIDEST: `COLUMNS=10000000 minigpt --help` took 15 s and 730 MB."""
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) >= NARROWEST):
            del os.environ[name]
        elif value is not None and int(value) > WIDEST:
            os.environ[name] = str(WIDEST)


def drop_unusable_thread_count() -> None:
    """An OMP_NUM_THREADS that is no whole number of threads from 1 (abc, 0, -1, 1.5, empty) is dropped before
    torch loads, with a note: the OpenMP library warned and took its default while the start panel said
    "as OMP_NUM_THREADS says"; minigpt then chooses the threads itself, and says why."""
    value = os.environ.get("OMP_NUM_THREADS")
    if value is not None and not (value.strip().isdigit() and int(value) >= 1):
        del os.environ["OMP_NUM_THREADS"]
        warn(
            f"OMP_NUM_THREADS={one_line(value)!s:.40} is not a whole number of threads from 1; it is left out, "
            f"and minigpt chooses the threads itself"
        )


def refuse_integers_past_64_bits(options: dict) -> None:
    """Every whole-number option of every command, in one place: past 64 bits it can mean nothing."""
    for name, value in options.items():
        check_64_bits(value, f"--{name.rstrip('_').replace('_', '-')}")


def reporting_errors(command, *args, **kwargs):
    """Run the command: our errors as one line and an exit code; a traceback only with --debug. A signal the
    command heard is its end, whatever a library made of the stop it raised (signals.HEARD)."""
    HEARD.clear()
    try:
        refuse_integers_past_64_bits(kwargs)
        result = command(*args, **kwargs)
        sys.stdout.flush()  # a full disk behind standard output is found here, where it is one line
    except BaseException as e:
        if HEARD and not isinstance(e, (Interrupted, typer.Exit)):  # the stop, turned into another failure
            return reported(Interrupted(said(HEARD[0]), HEARD[0]))
        return reported(e)
    if HEARD:  # the stop swallowed whole, and the work done after all
        print(f"minigpt: {said(HEARD[0])} as it finished; everything was written", file=sys.stderr)
        raise typer.Exit(128 + HEARD[0])
    return result


def reported(error: BaseException) -> NoReturn:
    """The error as the command's end: one line and its exit code (re-raised here, to be told apart)."""
    try:
        raise error
    except Interrupted as e:
        if not rank():
            print(f"minigpt: {e}", file=sys.stderr)
        raise typer.Exit(e.exit_code) from None
    except MiniGPTError as e:
        if state["debug"]:
            raise
        fail(str(e), e.exit_code, lost=isinstance(e, LostProcess))
    except KeyboardInterrupt:
        print("minigpt: interrupted", file=sys.stderr)
        raise typer.Exit(130) from None
    except BrokenPipeError:  # the reader went away (`minigpt sample -n 1000000 | head -1`): end quietly
        raise typer.Exit(reader_gone()) from None
    except UnicodeEncodeError as e:  # a name the output's encoding cannot hold (PYTHONIOENCODING=ascii)
        fail(
            f"the output's encoding ({e.encoding}) cannot hold {e.object[e.start : e.end]!r}: "
            f"set PYTHONIOENCODING=utf-8",
            2,
        )
    except (typer.Exit, typer.Abort):
        raise
    except (OSError, RuntimeError) as e:  # the system refused a path the user gave: say the problem, not its class
        problem = path_problem(e)
        if state["debug"] or problem is None:
            raise
        fail(problem, 1 if getattr(e, "errno", None) in MACHINE_FAILURES else 2)
    except Exception as e:
        if state["debug"]:
            raise
        fail(f"{first_line(e)} (run with --debug for the traceback)", 1)


def loops(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


MACHINE_FAILURES = (errno.ENOSPC, errno.EIO, errno.EDQUOT)  # the machine failed, not the path given: exit 1


def path_problem(e: BaseException) -> str | None:
    """A path the system refused, in words: a symbolic link that loops (Path.resolve's RuntimeError), a
    link to nowhere in the way of a new file or folder, a read-only disk, no permission; None for the rest."""
    if isinstance(e, RuntimeError) and str(e).startswith("Symlink loop from "):
        return f"{one_line(str(e).removeprefix('Symlink loop from ').strip(chr(39)))}: a symbolic link that loops"
    if not isinstance(e, OSError) or e.filename is None or e.strerror is None:
        return None
    path = Path(os.fsdecode(e.filename))
    if e.errno == errno.ENAMETOOLONG:  # asked about again (is_symlink), the path would raise the same error
        longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
        return (
            f"{shortened(one_line(path))}: too long for the file system (a name in it has {longest:,} bytes, "
            f"and a name may have 255)"
        )
    if e.errno == errno.ELOOP or (path.is_symlink() and loops(path)):
        return f"{one_line(path)}: a symbolic link that loops; remove it or give another path"
    if isinstance(e, FileExistsError) and path.is_symlink() and not path.exists():
        return (
            f"{one_line(path)}: a symbolic link to a path that does not exist is in the way; remove it or give another"
        )
    return f"{one_line(path)}: {e.strerror.lower()}"


def reader_gone() -> int:
    """Standard output's reader went away: nothing more to say, and the exit code of a command killed by SIGPIPE."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so exiting flushes into nothing
    return 141


def version_callback(value: bool) -> None:
    if value:
        print(f"minigpt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", metavar="", help="Show Python tracebacks on errors."),
    version: bool | None = typer.Option(
        None, "--version", metavar="", callback=version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    state["debug"] = debug


def on_free_cores(device: str) -> None:
    """Before CPU work: one torch thread per free core (machine/threads.py)."""
    from minigpt.machine.processes import resolve_device
    from minigpt.machine.threads import QUICK_LOOK, use_free_cores

    if resolve_device(device).type == "cpu":
        use_free_cores(QUICK_LOOK)


def wrote(*paths: Path, then: str = "") -> None:
    """The one line on stderr that says which files a command wrote."""
    print(f"wrote {' and '.join(one_line(p) for p in paths)}{then}", file=sys.stderr)


def checkpoint_to_read(checkpoint: Path, device: str):
    """The checkpoint that sample, eval, inspect-attention and ablate read (checkpoint_argument found it as the
    command line was read), loaded on `device`."""
    from minigpt.formats.checkpoint import load_checkpoint
    from minigpt.machine.processes import resolve_device
    from minigpt.views.panels import unmasked_note

    on_free_cores(device)
    ckpt = load_checkpoint(checkpoint, resolve_device(device))
    if unmasked_note(ckpt.config):  # said wherever such a model is read: its numbers mean something else
        warn(f"{one_line(ckpt.path)}: {unmasked_note(ckpt.config)}")
    return ckpt


def device_option():
    return typer.Option("auto", help="auto, cpu, cuda, cuda:N or mps.")


def names_to_score_option():
    """--data of eval and ablate."""
    return typer.Option(None, "--data", help="Names file to score (default: the run's validation names).")


def checkpoint_argument():
    """The CHECKPOINT that sample, eval, inspect-attention, export and info read: found as the command line is
    read, before the command imports torch (seconds), so a wrong path is said at once."""
    return typer.Argument(
        ...,
        metavar="CHECKPOINT",
        help="A checkpoint file, or a run directory (uses its best.pt).",
        callback=checkpoint_there,
    )


class SaidAsIs(click.exceptions.UsageError):
    """minigpt's own refusal, met while click reads the command line: its line as minigpt says it."""

    def format_message(self) -> str:
        return self.message


def checkpoint_there(ctx: typer.Context, path: Path | None) -> Path | None:
    from minigpt.files.run_paths import resolve_checkpoint_path

    if path is not None:
        try:
            resolve_checkpoint_path(path)
        except UsageError as e:
            if state["debug"]:
                raise
            raise SaidAsIs(swapped_run(ctx, path) or str(e)) from None
        except (OSError, RuntimeError) as e:  # the system refused the path itself: said as every command says it
            problem = path_problem(e)
            if state["debug"] or problem is None:
                raise
            raise SaidAsIs(problem) from None
    return path


def swapped_run(ctx, path: Path) -> str | None:
    """`minigpt inspect-attention emma runs/mine`: where CHECKPOINT names nothing and a later word of the command
    line is a run, the two were swapped; said so, with the command as it reads the other way round."""
    from minigpt.files.run_paths import resolve_checkpoint_path

    if str(path) not in state["argv"]:  # the command line main() read is not this one (the API's runner)
        return None
    words = [w for w in state["argv"] if w and not w.startswith("-") and w != str(path)]
    for word in words[words.index(ctx.info_name) + 1 :] if ctx.info_name in words else words:
        try:
            resolve_checkpoint_path(word)
        except (UsageError, OSError, ValueError):
            continue
        return (
            f"{one_line(path)} is no checkpoint or run, and {one_line(word)} is one: the run comes first, "
            f"{ctx.command_path} {one_line(word)} {one_line(path)}"
        )
    return None


def ends_as_written(flag: str, path: Path | None, kind: str) -> None:
    """A file named for one format never gets another's bytes: --html e.png and --png e.html are refused."""
    wrong = other_ending(path, kind) if path is not None else None
    if path is not None and wrong:
        what, endings = wrong
        raise UsageError(
            f"{flag} {path} would write {what} into a {path.suffix} file; give a name that ends "
            f"in {' or '.join(endings)}"
        )
