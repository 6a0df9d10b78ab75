"""What typer, click and rich write, mended where it reads wrong for minigpt, each patch in one
function that finds its hook or leaves everything as it is (a typer without it writes its own way).
`patch_typer_and_rich()` applies them once, when the command line is imported; each returns whether
its hook was there, and tests/test_cli.py checks that every one is, with the typer installed, and
that the help reads as mended.
"""

from __future__ import annotations

import re
from typing import NoReturn

import typer


def usage_names_without_braces() -> bool:
    """typer (0.2x) writes a required argument as {NAME} on the usage line, which reads like a set
    to choose from; write NAME, as click and the docs do. Where typer has no such hook, nothing changes."""
    argument = getattr(typer.core, "TyperArgument", None)
    usage_name = getattr(argument, "_usage_display_name", None)
    if argument is None or usage_name is None:
        return False

    def without_braces(self) -> str:
        name = usage_name(self)
        return re.sub(r"^\{(.*)\}(\.\.\.)?$", r"\1\2", name)

    argument._usage_display_name = without_braces
    return True


def help_option_without_type() -> bool:
    """typer (0.2x) shows --help as taking a <bool>, which it does not; give it the empty metavar
    every other flag here has. Where typer has no such hook, nothing changes."""
    core = getattr(getattr(typer, "_click", None), "core", None)
    command = getattr(core, "Command", None)
    original = getattr(command, "get_help_option", None)
    if command is None or original is None:
        return False

    def get_help_option(self, ctx):
        option = original(self, ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option
    return True


def completion_options_without_type() -> bool:
    """--install-completion and --show-completion are flags, which typer's help shows as taking
    a <bool>; give them the empty metavar the other flags have."""
    original = getattr(typer.main, "get_install_completion_arguments", None)
    if original is None:
        return False

    def without_type():
        options = original()
        for option in options:
            option.metavar = ""
        return options

    typer.main.get_install_completion_arguments = without_type
    return True


def list_arguments_typed_by_item() -> bool:
    """typer (0.2x) shows an argument that takes several values as <list[Path]>, a Python type; show the
    type of one value (<path>), as the usage line's RUN... already says there may be several."""
    argument = getattr(typer.core, "TyperArgument", None)
    original = getattr(argument, "display_type_rich", None)
    if argument is None or original is None:
        return False

    def display_type_rich(self, ctx):
        shown = original(self, ctx)
        return re.sub(r"list\[(\w+)\]", lambda m: m.group(1).lower(), shown) if shown else shown

    argument.display_type_rich = display_type_rich
    return True


def broken_pipe_as_every_command_ends() -> bool:
    """rich ends a program whose reader went away (`minigpt info | head -1`) with exit 1; every command
    here ends that way as a command killed by SIGPIPE does (141, `reporting_errors`), so rich's
    consoles hand the BrokenPipeError on."""
    from rich.console import Console

    def on_broken_pipe(self: Console) -> NoReturn:
        self.quiet = True  # nothing more is written to a reader that is gone
        raise BrokenPipeError

    Console.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]  # rich's own hook, replaced
    return True


def empty_paths_refused() -> bool:
    """typer reads a path given as '' (`--out ''`) as '.', the current folder, so `train --out ''` trained
    into it: every path option and argument refuses an empty one instead, in one line. Where typer has no
    such hook, nothing changes."""
    try:
        import typer._adapters as adapters
        from typer._click.exceptions import BadParameter
    except ImportError:
        return False
    coerce = getattr(adapters, "coerce_cli_path", None)
    if coerce is None:
        return False

    def refusing_empty(value, parameter_info, **options):
        if value in ("", b""):
            raise BadParameter(
                "an empty path names no file or folder", ctx=options.get("ctx"), param=options.get("param")
            )
        return coerce(value, parameter_info, **options)

    adapters.coerce_cli_path = refusing_empty
    return True


PATCHES = (
    empty_paths_refused,
    usage_names_without_braces,
    help_option_without_type,
    completion_options_without_type,
    list_arguments_typed_by_item,
    broken_pipe_as_every_command_ends,
)


def patch_typer_and_rich() -> dict[str, bool]:
    """Every patch, once: its name and whether its hook was there."""
    return {patch.__name__: patch() for patch in PATCHES}
