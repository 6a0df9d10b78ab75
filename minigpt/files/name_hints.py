"""A name with characters a vocabulary lacks: refused in one line naming them, with advice: the plainer
spelling that reads it, and which names of a list are concerned (by their place in it, never the names joined)."""

from __future__ import annotations

import unicodedata

from minigpt.common.errors import UsageError
from minigpt.common.text import one_line


def plain_letters(text: str) -> str:
    """`text` in lowercase without accents ("Émile" -> "emile")."""
    return "".join(c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c))


def plainer_spelling(text: str, unseen) -> tuple[str, str] | None:
    """A plainer spelling of text with characters a vocabulary lacks, when one reads whole, and why:
    lowercase first (a Greek vocabulary with accents reads "γιώργος" for "ΓΙΏΡΓΟΣ"), then lowercase
    without accents ("emile" for "Émile"). `unseen(text)` lists what the vocabulary lacks; None when
    neither spelling helps."""
    lower = text.lower()
    if lower != text and not unseen(lower):
        return "the vocabulary is lowercase", lower
    plain = plain_letters(text)
    if plain != text and not unseen(plain):
        return "the vocabulary has no accented letters", plain
    return None


def readable_hint(text: str, unseen) -> str | None:
    """The advice for one name with characters a vocabulary lacks: `the vocabulary is lowercase: try "emma"`."""
    found = plainer_spelling(text, unseen)
    return f'{found[0]}: try "{found[1]}"' if found else None


def names_hint(names: list[str], unseen) -> str:
    """Which names hold characters a vocabulary lacks, the first few by their place in the list (never a join
    of them), with the plainer spelling that reads them when there is one."""
    concerned = [(i, name) for i, name in enumerate(names, 1) if unseen(name)]
    shown = ", ".join(f'name {i} "{one_line(name)}"' for i, name in concerned[:3])
    more = f" and {len(concerned) - 3:,} more" if len(concerned) > 3 else ""
    found = plainer_spelling(concerned[0][1], unseen)
    advice = f'; {found[0]}: "{one_line(concerned[0][1])}" reads as "{one_line(found[1])}"' if found else ""
    return f"in {shown}{more}{advice}"


def refuse_unseen(text: str, unseen, what: str) -> None:
    """A UsageError naming the characters of `text` that `unseen(text)` lists (and the obvious fix, when
    lowercase would do; the explorer page says the same)."""
    if not isinstance(text, str):
        raise UsageError(f"expected a name (a string) for {what}, got {type(text).__name__}")
    lacking = unseen(text)
    if lacking:
        hint = readable_hint(text, unseen)
        raise UsageError(f"{what} has characters the model never saw: {listed(lacking)}{f' ({hint})' if hint else ''}")


def refuse_unseen_names(names: list[str], unseen, what: str) -> None:
    """`refuse_unseen` for a list of names, naming the first names concerned."""
    lacking = unseen("".join(names))
    if lacking:
        raise UsageError(f"{what} has characters the model never saw: {listed(lacking)} ({names_hint(names, unseen)})")


def listed(characters: list[str]) -> str:
    return ", ".join(repr(c) for c in characters)
