"""Start-up time: `minigpt --help`, and `minigpt sample` of 10 names end to end.

python benchmarks/startup.py --checkpoint RUN_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import finish, median, parser, setup, table


def seconds(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return median(times)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    results = setup(args)
    # the installed console script, as a user runs it
    script = Path(sys.executable).parent / "minigpt"
    minigpt = [str(script)] if script.exists() else [shutil.which("minigpt") or "minigpt"]
    rows = [
        {"command": "minigpt --help", "seconds": round(seconds([*minigpt, "--help"], args.repeats), 3)},
        {
            "command": f"minigpt sample {args.checkpoint} -n 10",
            "seconds": round(seconds([*minigpt, "sample", args.checkpoint, "-n", "10"], args.repeats), 3),
        },
    ]
    results["rows"] = rows
    print(table(rows, [("command", "command"), ("seconds", "seconds (median)")]))
    finish(results, args.out)


if __name__ == "__main__":
    main()
