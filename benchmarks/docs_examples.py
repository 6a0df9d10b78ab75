"""The README's terminal examples, run again on the run they describe: each ```-block that starts with
`$ minigpt inspect-attention runs/names ...` is run with RUN in place of runs/names, and its output must
be the block's, line for line (trailing spaces aside). Exit 1, with the first line that differs, if not.

    minigpt train --out runs/names          # the default run, as the README trains it
    python benchmarks/docs_examples.py runs/names

The run is deterministic on a CPU (the same seed, the same names), so the figures reproduce; another
machine's float order can move a last digit, and that is what a difference here shows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```\n\$ (minigpt inspect-attention runs/names [^\n]*)\n(.*?)```", re.S)


def examples(text: str) -> list[tuple[str, str]]:
    """(command, output) of each inspect-attention example in a Markdown text."""
    return [(command, output) for command, output in BLOCK.findall(text)]


def differs(expected: str, got: str) -> str | None:
    """The first line that differs, or None."""
    lines = lambda text: [line.rstrip() for line in text.strip("\n").splitlines()]  # noqa: E731
    for n, (want, have) in enumerate(zip(lines(expected), lines(got)), start=1):
        if want != have:
            return f"line {n}: the README has {want!r}, the run prints {have!r}"
    if len(lines(expected)) != len(lines(got)):
        return f"the README shows {len(lines(expected))} lines, the run prints {len(lines(got))}"
    return None


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    found = examples((ROOT / "README.md").read_text(encoding="utf-8"))
    if not found:
        sys.exit("the README has no inspect-attention example to check")
    for command, output in found:
        args = command.split()[1:]
        args[args.index("runs/names")] = run
        got = subprocess.run(["minigpt", *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"})
        problem = differs(output, got.stdout)
        print(f"{'differs' if problem else 'the same'}: {command}" + (f"\n  {problem}" if problem else ""))
        if problem:
            sys.exit(1)


if __name__ == "__main__":
    main()
