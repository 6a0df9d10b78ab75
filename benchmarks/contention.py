"""Training speed when other processes compete for the cores, under several thread settings.

    python benchmarks/contention.py [--competitors 2] [--seconds 6] [--data FILE]

Each setting runs benchmarks/throughput.py (the real training step, batch 32, default
recipe) in a fresh process, first on a quiet machine and then beside `--competitors`
CPU-bound processes that this script starts and stops itself. A setting is environment
variables or arguments for the training process: torch's default, one thread, OpenMP's
passive wait, and minigpt's own choice (one thread per free core, machine/threads.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import finish, parser, table

HERE = Path(__file__).resolve().parent
SETTINGS = {  # environment variables and arguments for the training process
    "torch's default": ({}, []),
    "OMP_NUM_THREADS=1": ({"OMP_NUM_THREADS": "1"}, []),
    "OMP_WAIT_POLICY=PASSIVE": ({"OMP_WAIT_POLICY": "PASSIVE"}, []),
    "minigpt's choice": ({}, ["--threads", "0"]),  # one thread per free core, as `minigpt train` does
}
BUSY = "import time\nend = time.time() + {limit}\nwhile time.time() < end:\n    pass\n"


def tokens_per_sec(setting: tuple[dict, list[str]], data: Path, seconds: float) -> tuple[float, int]:
    """The training step's tokens per second, and the torch threads it ran on."""
    extra_env, extra_args = setting
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "throughput.json"
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
        subprocess.run([sys.executable, str(HERE / "throughput.py"), "--config", "default", "--batch-sizes", "32",
                        "--seconds", str(seconds), "--no-peak", "--data", str(Path(data).resolve()), "--out", str(out),
                        *extra_args],
                       env={**env, **extra_env}, check=True, capture_output=True, cwd=HERE)
        result = json.loads(out.read_text())
        threads = int(result["machine"].split(", ")[-1].split()[0])  # "..., N torch threads"
        return result["rows"][0]["tokens_per_sec"], threads


def competitors(n: int, limit: float) -> list[subprocess.Popen]:
    """CPU-bound processes that end by themselves after `limit` seconds, if nothing stops them sooner."""
    return [subprocess.Popen([sys.executable, "-c", BUSY.format(limit=limit)]) for _ in range(n)]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--competitors", type=int, default=2)
    p.add_argument("--seconds", type=float, default=6.0, help="timed seconds per measurement")
    args = p.parse_args()
    results = {"cores": os.cpu_count(), "competitors": args.competitors, "rows": []}
    for name, extra in SETTINGS.items():
        quiet, quiet_threads = tokens_per_sec(extra, args.data, args.seconds)
        busy = competitors(args.competitors, limit=20 * args.seconds + 60)
        try:
            loaded, loaded_threads = tokens_per_sec(extra, args.data, args.seconds)
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
        row = {"setting": name, "quiet": round(quiet), "loaded": round(loaded), "kept": f"{loaded / quiet:.0%}",
               "threads": f"{quiet_threads} / {loaded_threads}"}
        results["rows"].append(row)
        print(table([row], [("setting", "setting"), ("quiet", "tokens/s quiet"), ("loaded", "beside competitors"),
                            ("kept", "kept"), ("threads", "threads")]).splitlines()[-1], flush=True)
    print()
    print(table(results["rows"], [("setting", "setting"), ("quiet", "tokens/s quiet"),
                                  ("loaded", f"beside {args.competitors} competitors"), ("kept", "kept"),
                                  ("threads", "threads quiet / beside")]))
    finish(results, args.out)


if __name__ == "__main__":
    main()
