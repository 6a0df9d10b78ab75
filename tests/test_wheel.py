"""Installed from a wheel, minigpt finds its bundled names and every recipe from any directory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigpt.common.bundled import recipe_names

pytestmark = pytest.mark.xdist_group("wheel")  # one worker makes the module's shared fixture once

REPO = Path(__file__).resolve().parent.parent


def run(command, cwd, env=None):
    proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory):
    """A fresh virtual environment holding the wheel; torch and the rest come from this environment."""
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (pip install -e '.[test]')")
    tmp = tmp_path_factory.mktemp("wheel")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            tmp / "dist",
            REPO,
        ],
        cwd=tmp,
    )
    (wheel,) = (tmp / "dist").glob("minigpt_names-*.whl")
    # no pip of its own (installing one takes seconds): this environment's pip installs into it
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", tmp / "venv"], cwd=tmp)
    bin_dir = tmp / "venv" / "bin"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            bin_dir / "python",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            wheel,
        ],
        cwd=tmp,
    )
    return bin_dir


@pytest.fixture
def elsewhere(tmp_path):
    """A directory with no clone in sight, and no PYTHONPATH leading back to one."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return tmp_path, env


def test_the_installed_command_starts(venv_bin, elsewhere):
    cwd, env = elsewhere
    assert "inspect-attention" in run([venv_bin / "minigpt", "--help"], cwd, env)


def test_the_wheel_carries_the_names_and_recipes_and_every_command_runs_from_it(venv_bin, elsewhere):
    """One interpreter of the venv runs the command's entry point for each recipe on the bundled names
    (no --data; the page at the end of one run), then samples and inspects one of the runs (torch loads once)."""
    cwd, env = elsewhere
    code = """
import sys
from minigpt.common.bundled import names_file, recipe_names
from minigpt.cli.main import app

def minigpt(*args):
    try:
        app(list(args), prog_name="minigpt")
    except SystemExit as e:
        if e.code:
            sys.exit(f"{args}: exit {e.code}")

print(names_file())
for recipe in recipe_names():
    page = [] if recipe == "tiny" else ["--no-page"]  # one run's page shows the wheel carries the page's files
    minigpt("train", "-c", recipe, "--steps", "2", "--set", "train.time_limit=0", "--set", "train.eval_interval=2",
            "--out", recipe, "--quiet", *page)
    print(recipe)
minigpt("sample", "tiny", "-n", "3", "--seed", "1")
minigpt("inspect-attention", "tiny", "emma", "--layer", "0", "--head", "0")
"""
    lines = run([venv_bin / "python", "-c", code], cwd, env).splitlines()
    recipes = recipe_names()
    names_file, trained, samples = (
        Path(lines[0]),
        lines[1 : 1 + len(recipes)],
        lines[1 + len(recipes) : 4 + len(recipes)],
    )
    assert names_file.is_relative_to(venv_bin.parent) and names_file.is_file()
    assert trained == recipes and all((cwd / recipe / "last.pt").is_file() for recipe in recipes)
    assert (cwd / "tiny" / "page.html").stat().st_size > 100_000  # the page, its model and scripts inside
    assert len(samples) == 3 and "layer 0, head 0" in "\n".join(lines[4 + len(recipes) :])
