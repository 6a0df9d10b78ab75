"""Text as minigpt prints it through rich: never markup, never raw control characters; and how wide a table is
when nothing cuts it. Apart from the panels (views/panels.py) so that a table of text alone, as `minigpt sweep
--show` prints, needs no checkpoint code and no torch."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from minigpt.common.text import one_line


def markup_safe(text) -> str:
    """Text from a file or a path (a name, a path, a checkpoint's notes) as rich should print it: never
    markup (`[link=…]`, `a[/]b`), never raw control characters (escape sequences, right-to-left overrides)."""
    return escape(one_line(str(text)))


def natural_width(renderable) -> int:
    """The columns a table takes when nothing cuts it (rich cuts one at the console's width)."""
    return Console(width=100_000).measure(renderable).maximum
