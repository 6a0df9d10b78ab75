"""What the Python API is handed, checked where it comes in, as the command line checks its options: a path is
a path, a list is a list (a string where a list belongs is refused rather than read letter by letter, and an
iterator is read once), and anything else is one line saying what was expected and what came.

    runs = as_paths(paths, "compare's runs")       # ["runs/a", Path("runs/b")] -> [Path, Path]
    names = as_names(names, "the names")           # a generator of strings -> a list, read once
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from minigpt.common.text import shortened
from minigpt.errors import UsageError

LIST_KINDS = (list, tuple)
NAMES = {
    dict: "a table",
    list: "a list",
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def tensor_type():
    """torch.Tensor, or None before torch is imported, when no value can be one: the readers of text files
    (run records, a sweep's spec) need no torch, and a process without it starts seconds sooner."""
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else None


def kind_name(kind: type) -> str:
    return "a tensor" if kind is tensor_type() else NAMES.get(kind, kind.__name__)


def what_it_is(value) -> str:
    """A value's kind in words: "a list", "null"."""
    tensor = tensor_type()
    return kind_name(tensor if tensor is not None and isinstance(value, tensor) else type(value))


def quoted(value, most: int = 60) -> str:
    """A value as a message quotes it: its repr, a long one shortened (common/text.py's `shortened`)."""
    return shortened(repr(value), most)


def kind_of(value) -> str:
    """A value's kind as a message names it: 'int', 'None', 'str "runs/a"' (shortened)."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return f'str "{shortened(value, 40)}"'
    return type(value).__name__


def as_path(value, what: str) -> Path:
    """A path given as a string or a pathlib.Path (bytes, numbers, None and lists are not paths)."""
    if isinstance(value, str) or (isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)):
        if not os.fspath(value):  # Path("") is ".", the current folder: never what an empty string meant
            raise UsageError(f"{what}: an empty path names no file or folder")
        return Path(value)
    raise UsageError(f"{what}: expected a path (a string or a pathlib.Path), got {kind_of(value)}")


def as_list(value, what: str, one: str) -> list:
    """The items of a list, a tuple or any other iterable, read once; a single string or path is refused, since
    it would be read as its letters."""
    if isinstance(value, (str, bytes, os.PathLike)):
        raise UsageError(f"{what}: expected a list of {one}s, got one {kind_of(value)}: put it in a list, [x]")
    if isinstance(value, LIST_KINDS):
        return list(value)
    try:
        return list(iter(value))
    except TypeError:
        raise UsageError(f"{what}: expected a list of {one}s, got {kind_of(value)}") from None


def as_paths(value, what: str) -> list[Path]:
    return [as_path(item, f"each of {what}") for item in as_list(value, what, "path")]


def as_names(value, what: str = "names") -> list[str]:
    """Names as a list of strings (minigpt.read_names(path) reads a names file into one)."""
    if isinstance(value, os.PathLike):
        raise UsageError(
            f"expected a list of names (minigpt.read_names(path) reads a names file), got {kind_of(value)}"
        )
    names = as_list(value, f"{what} (minigpt.read_names(path) reads a names file)", "name")
    return strings_only(names, what, "each name")


def as_strings(value, what: str) -> list[str]:
    """Settings such as ["model.dropout=0.1"]: a list of strings."""
    return strings_only(as_list(value, what, "string"), what, "each")


def strings_only(items: list, what: str, each: str) -> list[str]:
    """The items, each a string; the first that is not is named with its position."""
    for n, item in enumerate(items):
        if not isinstance(item, str):
            raise UsageError(f"{what}: {each} is a string, got {kind_of(item)} at position {n}")
    return items


def whole_number_within(value, what: str, least: int, most: int | None = None) -> int:
    """A whole number from `least` (to `most`), refused with the range and what came: true and false, floats and
    strings are not whole numbers."""
    if type(value) is not int or value < least or (most is not None and value > most):
        upto = f" to {most:,}" if most is not None else ""
        raise UsageError(f"{what} must be a whole number from {least:,}{upto}, got {quoted(value)}")
    return value


def as_whole_number(value, what: str, least: int = 0, most: int | None = None) -> int:
    """An API argument that is a whole number in a range: one of another type is named by its type."""
    if type(value) is not int:
        raise UsageError(f"{what}: expected a whole number, got {kind_of(value)}")
    return whole_number_within(value, what, least, most)
