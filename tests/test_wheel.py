"""Installed from a wheel, minigpt finds its bundled names and every recipe from any directory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigpt.cli.bundled import recipe_names

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
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp / "dist",
         REPO], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("minigpt_names-*.whl")
    run([sys.executable, "-m", "venv", "--system-site-packages", tmp / "venv"], cwd=tmp)
    bin_dir = tmp / "venv" / "bin"
    run([bin_dir / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel], cwd=tmp)
    return bin_dir


@pytest.fixture
def elsewhere(tmp_path):
    """A directory with no clone in sight, and no PYTHONPATH leading back to one."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return tmp_path, env


def test_the_wheel_carries_the_names_and_recipes(venv_bin, elsewhere):
    cwd, env = elsewhere
    code = "import minigpt.cli.bundled as b; print(b.names_file()); print(' '.join(b.recipe_names()))"
    names_file, recipes = run([venv_bin / "python", "-c", code], cwd, env).splitlines()
    assert Path(names_file).is_relative_to(venv_bin.parent) and Path(names_file).is_file()
    assert recipes.split() == recipe_names()


def test_train_sample_and_inspect_from_an_installed_wheel(venv_bin, elsewhere):
    cwd, env = elsewhere
    minigpt = venv_bin / "minigpt"
    summary = json.loads(run([minigpt, "train", "--steps", 2, "--set", "train.eval_interval=2", "--out", "run",
                              "--json"], cwd, env))
    assert summary["steps"] == 2 and summary["val_loss"] > 0
    assert len(run([minigpt, "sample", "run", "-n", 3, "--seed", 1], cwd, env).splitlines()) == 3
    assert "layer 0, head 0" in run([minigpt, "inspect-attention", "run", "emma"], cwd, env)


def test_every_recipe_by_name_from_an_installed_wheel(venv_bin, elsewhere):
    """One interpreter of the venv runs the command's entry point once per recipe (torch loads once)."""
    cwd, env = elsewhere
    code = (
        "import sys\n"
        "from minigpt.cli.bundled import recipe_names\n"
        "from minigpt.cli.commands import app\n"
        "for recipe in recipe_names():\n"
        "    args = ['train', '-c', recipe, '--steps', '2', '--set', 'train.time_limit=0',\n"
        "            '--set', 'train.eval_interval=2', '--out', recipe, '--quiet']\n"
        "    try:\n"
        "        app(args, prog_name='minigpt')\n"
        "    except SystemExit as e:\n"
        "        if e.code:\n"
        "            sys.exit(f'{recipe}: exit {e.code}')\n"
        "    print(recipe)\n"
    )
    assert run([venv_bin / "python", "-c", code], cwd, env).split() == recipe_names()
    assert all((cwd / recipe / "last.pt").is_file() for recipe in recipe_names())
