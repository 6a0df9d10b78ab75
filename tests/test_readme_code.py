"""The README's Python runs as written: every ```python block, in a folder laid out as a clone is (the core
copied into lesson/, as the README's map says, and the bundled names in data/)."""

import re
import shutil
import subprocess
import sys

import pytest
from test_layers import CORE_FILES, PACKAGE

ROOT = PACKAGE.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_to_run():
    assert len(BLOCKS) >= 2 and any("lesson." in block for block in BLOCKS)


@pytest.mark.processes
@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_a_python_block_of_the_readme_runs_as_written(number, tmp_path):
    (tmp_path / "lesson").mkdir()
    for name in CORE_FILES:
        shutil.copy(PACKAGE / name, tmp_path / "lesson" / name)
    (tmp_path / "data").mkdir()
    shutil.copy(ROOT / "data" / "names.txt", tmp_path / "data" / "names.txt")
    done = subprocess.run(
        [sys.executable, "-c", BLOCKS[number]], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"README block {number + 1}:\n{BLOCKS[number]}\n{done.stderr[-3000:]}"
    if "lesson." in BLOCKS[number]:  # the Reporter printed, and the checkpoint is the one minigpt reads
        assert "val loss" in done.stdout, done.stdout
        sampled = subprocess.run(
            [sys.executable, "-m", "minigpt", "sample", str(tmp_path / "out"), "-n", "3"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert sampled.returncode == 0, sampled.stderr
