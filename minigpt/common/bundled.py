"""The files minigpt ships beside its code: the bundled names and the recipes.

In a clone, the names and recipes sit at the top of the repository (`data/`, `configs/`),
where people look for them. A built wheel carries copies of both inside the package, in
`minigpt/package_data/` (pyproject.toml's force-include puts them there), so an installed
minigpt finds them from any directory. This module is the one place that knows both.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def bundled_path(*parts: str) -> Path:
    """`bundled_path("configs", "default.toml")`: the installed copy if there is one, else the clone's."""
    installed = resources.files("minigpt").joinpath("package_data", *parts)
    if isinstance(installed, Path) and installed.exists():
        return installed
    return REPO_ROOT.joinpath(*parts)


def names_file() -> Path:
    """The bundled names file, which `minigpt train` reads when given no --data."""
    return bundled_path("data", "names.txt")


BUNDLED_NAMES = names_file()  # what `minigpt train` reads when given no --data


def config_dir() -> Path:
    """The folder of recipes that `--config NAME` looks in."""
    return bundled_path("configs")


def recipe_names() -> list[str]:
    return sorted(path.stem for path in config_dir().glob("*.toml"))
