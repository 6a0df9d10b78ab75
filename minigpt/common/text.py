"""Names, paths and numbers as minigpt writes them in text: on a terminal (through rich: never markup, never
raw control characters), in a file, in a message.

A name or path may hold anything a file can (bytes that are not UTF-8, escape sequences,
line breaks); what minigpt prints or writes of it is always one line of valid UTF-8.
"""

from __future__ import annotations

import itertools
import math
import os
import unicodedata

from rich.console import Console
from rich.markup import escape


def as_text(name: object) -> str:
    """A path or name as text: the bytes of a name that is not UTF-8 (a Linux path is bytes,
    which Python carries as lone surrogates) written as \\xNN, as `ls -b` does, so that it can be
    printed, drawn and written to a UTF-8 file."""
    text = os.fsdecode(name) if isinstance(name, os.PathLike) else str(name)
    try:
        text.encode("utf-8")  # the common case, at C speed: no surrogate to write out
        return text
    except UnicodeEncodeError:
        pass
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in text)


ESCAPED = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")  # controls, format characters, line breaks, unassigned
# the zero-width non-joiner and joiner are format characters that belong in names (Persian "علی‌رضا", Indic
# scripts, emoji families): they join or part letters, and neither reorder nor hide text as bidi controls do
JOINERS = ("\u200c", "\u200d")


def escaped(c: str) -> str:
    return c.encode("unicode_escape", "backslashreplace").decode("ascii")


def one_line(message: object) -> str:
    """The message with control characters and line breaks written as escapes: user text it quotes stays on one line."""
    message = as_text(message)
    return "".join(escaped(c) if unicodedata.category(c) in ESCAPED and c not in JOINERS else c for c in message)


def shortened(message: str, most: int = 1000) -> str:
    """A message no longer than about `most` characters: one that quotes a huge input (a 100,000-character
    name) keeps its start and its end, where the advice is, and says how much was left out between."""
    if len(message) <= most:
        return message
    head, tail = most * 2 // 3, most // 3
    return f"{message[:head]} … [{len(message) - head - tail:,} characters left out] … {message[-tail:]}"


def token_text(token: str) -> str:
    """One token shown alone, as a column's heading: a joiner there joins nothing and shows nothing, so
    it is written as its escape (\\u200c); any other token as `one_line` writes it."""
    return escaped(token) if token in JOINERS else one_line(token)


def loss_text(value: float | None) -> str:
    """A loss to four decimals, or "-" when there is none yet or it was not a number (a diverged run)."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.4f}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def range_text(counts: list[int]) -> str:
    """Counts as their range, `541-664` (one count alone as itself); empty for none: a group's or a trial's steps."""
    if not counts:
        return ""
    low, high = min(counts), max(counts)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def number_text(value) -> str:
    """A number read from a file, as a message quotes it: with thousands separators, or, for a whole number
    too long to read (10**400 in an edited JSON), how many digits it has."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**21:
        return f"a whole number of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4,000'} digits"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value}"


# A generated name that reached the model's block size before it ended (sampling.py): what the model would
# write next is unknown, so it is shown marked
CUT = "…"


def memory_text(size: float) -> str:
    """An amount of memory as a person reads it: 1.3 MB, 840 MB, 2.4 GB."""
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB" if size >= 1e7 else f"{size / 1e6:.1f} MB"


def is_cut(name: str, block_size: int) -> bool:
    """Whether a generated name reached the block size without the model ending it: the boundary token and
    block_size - 1 characters fill every position, so a name of block_size characters or more was cut."""
    return len(name) >= block_size


def as_shown(name: str, block_size: int) -> str:
    """A generated name as every view shows it: marked with CUT when the block size cut it."""
    return name + CUT if is_cut(name, block_size) else name


BOUNDARY = "·"  # the boundary token's one mark, everywhere it is shown: a name's start, and its end
# a vocabulary may hold "·" itself (Catalan's "l·l"): the mark is then the first of these it lacks,
# then the control pictures and on (a vocabulary is finite, so one is free)
BOUNDARY_STAND_INS = ("◇", "¤", "␄", "⟂")


def boundary_mark(vocabulary) -> str:
    """How the boundary token is shown beside a vocabulary of these characters."""
    marks = itertools.chain((BOUNDARY, *BOUNDARY_STAND_INS), map(chr, range(0x2400, 0xD800)))
    return next(mark for mark in marks if mark not in vocabulary)


def token_label(tokenizer, token: int) -> str:
    """A token as shown: its character, or the boundary token's mark."""
    return boundary_mark(tokenizer.stoi) if token == tokenizer.bos else tokenizer.chars[token]


def markup_safe(text) -> str:
    """Text from a file or a path (a name, a path, a checkpoint's notes) as rich should print it: never
    markup (`[link=…]`, `a[/]b`), never raw control characters (escape sequences, right-to-left overrides)."""
    return escape(one_line(str(text)))


def natural_width(renderable) -> int:
    """The columns a table takes when nothing cuts it (rich cuts one at the console's width)."""
    return Console(width=100_000).measure(renderable).maximum
