"""Reading a names file, guarded: one name a line, in UTF-8, as people's files come (a byte-order mark,
CRLF or CR line ends, NUL padding), and never more than training on it could hold in memory; and a
name with characters a vocabulary lacks, refused with advice (the plainer spelling that reads it).

    names = read_names("data/names.txt")
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from minigpt.common.arguments import as_path
from minigpt.common.text import memory_text, one_line
from minigpt.errors import UsageError
from minigpt.files.bounded import read_bytes
from minigpt.files.sniffing import NOT_NAMES, identify, wrong_kind

MEMORY_PER_BYTE = 25  # reading, splitting and tokenising a names file takes about this much memory per byte
# and per name, which binds for very short names: 50 MB of one 4-letter name (10M names) peaked 1.3 GB over
# the fixed part, of one letter (25M names) 1.9 GB (docs/large-corpora.md)
MEMORY_PER_NAME = 130
LONGEST_NAME = 10_000  # characters; a longer line is not a name


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, where the system says (Linux), else None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


LINE_END = re.compile(r"\r\n|\r|\n")


def check_names_path(path: str | Path) -> Path:
    """A names file that is there, and no directory: checked by the command line before torch is imported."""
    path = as_path(path, "a names file")
    if not path.exists():
        raise UsageError(f"names file not found: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a names file")
    return path


def refuse_too_many_lines(path: Path, raw: bytes, available: int | None) -> None:
    """A file of very short names costs memory by the name, not by the byte: counted (at C speed) before
    the text is split, where the count of bytes alone let a file of one-letter names through."""
    lines = raw.count(b"\n") + 1
    if available is not None and lines * MEMORY_PER_NAME > available:
        raise UsageError(
            f"{path} holds {lines:,} lines: training on that many names needs about "
            f"{memory_text(lines * MEMORY_PER_NAME)} of memory ({MEMORY_PER_NAME} bytes a name), and "
            f"{memory_text(available)} is available"
        )


def read_names(path: str | Path) -> list[str]:
    """Names from a UTF-8 file, one per line; surrounding whitespace stripped, blank lines skipped."""
    path = check_names_path(path)
    size, available = path.stat().st_size, available_memory()
    if available is not None and size * MEMORY_PER_BYTE > available:  # say so now, not after the kernel's OOM kill
        raise UsageError(
            f"{path} is {size / 1e9:.1f} GB: training on it needs about "
            f"{size * MEMORY_PER_BYTE / 1e9:.0f} GB of memory, and {available / 1e9:.1f} GB is available"
        )
    kind = identify(path, "names file")
    if kind in NOT_NAMES:
        raise UsageError(wrong_kind(path, kind, "a names file"))
    # a device or a pipe has no size to check first: it is read no further than memory allows
    most = None if available is None else available // MEMORY_PER_BYTE
    raw = read_bytes(
        path,
        "names file",
        most,
        why=f"as much as training can hold: it takes about {MEMORY_PER_BYTE} "
        f"bytes of memory per byte of names, and {available / 2**20:,.0f} MB is available"
        if available
        else "",
    )
    try:
        # a byte-order mark is not part of the first name, nor NUL padding (a crash, a tool) part of the last
        text = raw.rstrip(b"\0").decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UsageError(f"{path}: line {line} is not valid UTF-8") from None
    refuse_too_many_lines(path, raw, available)
    del raw  # the file's bytes, its text and its names are not all held at once: memory peaks here
    refuse_nul(path, text)
    # \n, \r\n and a lone \r end a line; a line separator, a form feed or NEL inside a name are its characters
    names = [name for name in map(str.strip, LINE_END.split(text)) if name]
    del text
    if not names:
        raise UsageError(f"{path}: no names in the file (it is empty or has only blank lines)")
    refuse_a_table(path, names)
    longest = max(map(len, names))
    if longest > LONGEST_NAME:
        raise UsageError(
            f"{path}: a line holds {longest:,} characters; a name has at most {LONGEST_NAME:,} "
            f"(is this a names file, one name per line?)"
        )
    return names


def refuse_nul(path: Path, text: str) -> None:
    """A NUL inside the names is no character of a name: the file is UTF-16 without its byte-order mark (every
    other byte NUL, read as UTF-8), or damaged. It became a character of the vocabulary, silently."""
    at = text.find("\0")
    if at < 0:
        return
    line = text.count("\n", 0, at) + 1
    utf16 = 3 * text.count("\0") >= len(text)
    why = (
        ": the file looks like UTF-16 without its byte-order mark (every other byte NUL); save it as UTF-8"
        if utf16
        else ", which no name holds"
    )
    raise UsageError(f"{path}: line {line} holds a NUL character{why}")


NAME_HEADERS = {"name", "names", "first_name", "firstname", "first name", "given_name", "forename"}


def refuse_a_table(path: Path, names: list[str]) -> None:
    """A CSV with a header (name,gender,count) trained on whole rows ("alvina,F,200"): said, with how to take
    its names' column. A file of names with a comma here and there is no table: every row must split alike."""
    fields = names[0].count(",")
    rows = names[:1000]
    if not fields or any(row.count(",") != fields for row in rows):
        return
    header = [field.strip().lower() for field in names[0].split(",")]
    column = next((i for i, field in enumerate(header) if field in NAME_HEADERS), None)
    if column is None:
        return
    raise UsageError(
        f"{path} looks like a CSV table with a header ({one_line(names[0])!r:.60}), not one name a line: "
        f"take its names' column first, e.g. cut -d, -f{column + 1} {one_line(path)} | tail -n +2 > "
        f"names.txt"
    )


def digest(names: list[str]) -> str:
    """A names list's fingerprint, which a resumed run checks: resuming needs the same names."""
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()


# a name with characters a vocabulary lacks: refused in one line naming them, with advice: the plainer
# spelling that reads it, and which names of a list are concerned (by their place, never the names joined)


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
    """The advice for one name with characters a vocabulary lacks: `the vocabulary is lowercase: try "emma"`; where
    no spelling reads whole ("São Paulo": its space too), the plainer one with what it still lacks."""
    found = plainer_spelling(text, unseen)
    if found:
        return f'{found[0]}: try "{found[1]}"'
    plain = plain_letters(text)
    if plain != text and len(unseen(plain)) < len(unseen(text)):
        return f'in lowercase without accents it reads as "{one_line(plain)}" but for {listed(unseen(plain))}'
    return None


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
