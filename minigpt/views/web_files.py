"""The explorer page's own files as the package holds them (`minigpt/views/web/`): the template,
the stylesheet, model.js and the page's parts; and how many lessons its course has, counted in
lessons.js, where the course is written."""

from __future__ import annotations

import re
from importlib import resources


def web_file(name: str) -> str:
    """The text of one of the page's files (HTML, CSS, JavaScript; "explorer/state.js")."""
    return resources.files("minigpt.views").joinpath("web", *name.split("/")).read_text(encoding="utf-8")


def web_folder(name: str) -> list[str]:
    """The names of the files in one of the page's folders ("explorer")."""
    folder = resources.files("minigpt.views").joinpath("web", name)
    return [entry.name for entry in folder.iterdir() if entry.is_file()]


def lesson_count() -> int:
    """The lessons of the page's course: each is written in lessons.js as `{ title: "...", `."""
    return len(re.findall(r'^\s*\{ title: "', web_file("explorer/lessons.js"), re.M))
