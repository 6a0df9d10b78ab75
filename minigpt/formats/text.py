"""Names, paths and numbers as minigpt writes them in text: on a terminal, in a file, in a message.

A name or path may hold anything a file can (bytes that are not UTF-8, escape sequences,
line breaks); what minigpt prints or writes of it is always one line of valid UTF-8.
"""

from __future__ import annotations

import os
import unicodedata


def as_text(name) -> str:
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


def one_line(message: str) -> str:
    """The message with control characters and line breaks written as escapes: user text it quotes stays on one line."""
    message = as_text(message)
    return "".join(
        c.encode("unicode_escape", "backslashreplace").decode("ascii")
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") else c
        for c in message
    )


def loss_text(value: float | None) -> str:
    """A loss to four decimals, or "-" when there is none yet."""
    return "-" if value is None else f"{value:.4f}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
