"""The files minigpt ships beside its code: the bundled names, the recipes, the explorer page.

In a clone, the names and recipes sit at the top of the repository (`data/`, `configs/`),
where people look for them. A built wheel carries copies of both inside the package, in
`minigpt/package_data/` (pyproject.toml's force-include puts them there), so an installed
minigpt finds them from any directory. This module is the one place that knows both.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def bundled_path(*parts: str) -> Path:
    """`bundled_path("configs", "default.toml")`: the installed copy if there is one, else the clone's."""
    installed = resources.files("minigpt").joinpath("package_data", *parts)
    if isinstance(installed, Path) and installed.exists():
        return installed
    return REPO_ROOT.joinpath(*parts)


def names_file() -> Path:
    """The bundled names file, which `minigpt train` reads when given no --data."""
    return bundled_path("data", "names.txt")


def config_dir() -> Path:
    """The folder of recipes that `--config NAME` looks in."""
    return bundled_path("configs")


def recipe_names() -> list[str]:
    return sorted(path.stem for path in config_dir().glob("*.toml"))


def web_file(name: str) -> str:
    """The text of one of the explorer page's files (HTML, CSS, JavaScript; "explorer/state.js"), from the package."""
    return resources.files("minigpt.views").joinpath("web", *name.split("/")).read_text(encoding="utf-8")


def web_folder(name: str) -> list[str]:
    """The names of the files in one of the explorer page's folders ("explorer")."""
    return [entry.name for entry in resources.files("minigpt.views").joinpath("web", name).iterdir() if entry.is_file()]


LESSONS = 8  # the explorer page's course, as web/explorer/lessons.js lists it (tests/test_explorer_lesson.py counts them)
