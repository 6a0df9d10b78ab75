"""Where the test suite's CPU goes: the README's test command, with every process on the machine
sampled while it runs, then the CPU seconds by kind of process.

    python benchmarks/suite_cpu.py                                # the whole suite
    python benchmarks/suite_cpu.py -- tests/test_explorer.py -x   # pytest's own arguments after --

The suite is CPU-bound on two cores (docs/development.md), so what would make it quicker is
less CPU, and this says whose: each process's user and system time is read from /proc every
SAMPLE seconds and kept at its last reading, less what it had used before the suite started. A
process that lives under SAMPLE seconds is missed; the machine's own count (/proc/stat), printed
beside the sum, says how much that leaves out. Linux only.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import table

SAMPLE = 0.2  # seconds between readings of /proc
ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")  # /proc counts CPU time in these


def kind_of(comm: str, command: str) -> str:
    """What a process is, for the table: the browser, a pytest worker, a minigpt command (by its
    subcommand), a sweep's worker, a notebook's kernel, torchrun, or another program by its name."""
    if "chrom" in comm or "chrom" in command.split(" ")[0]:
        return "Chromium (the browser tests)"
    if "exec(eval(sys.stdin" in command or re.search(r"-m (pytest|xdist)", command):
        return "pytest and its workers (in-process tests)"
    if "spawn_main" in command or "resource_tracker" in command:
        return "a sweep's workers (multiprocessing)"
    if "ipykernel" in command:
        return "the notebook's kernel"
    if "torchrun" in command or "torch.distributed.run" in command:
        return "torchrun"
    found = re.search(r"(?:-m minigpt|bin/minigpt|minigpt/__main__\.py) (\S+)", command)
    if found:
        return f"minigpt {found.group(1)}"
    if "python" in comm:
        return "other Python"
    return comm


def processes(kinds: dict) -> dict[tuple[str, str], tuple[float, str]]:
    """Every process now but this one: (pid, start time) -> (CPU seconds so far, its kind). `kinds` keeps each
    process's kind from its first reading, so its command line is read once."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            key = (pid, fields[19])
            if key not in kinds:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                kinds[key] = kind_of(stat[stat.index("(") + 1:stat.rindex(")")], command)
        except OSError:  # ended between the listing and the reading
            continue
        found[key] = ((int(fields[11]) + int(fields[12])) / TICK, kinds[key])
    return found


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent busy (not idle, not waiting for the disk)."""
    user, nice, system, _idle, _iowait, irq, softirq = map(int, Path("/proc/stat").read_text().split()[1:8])
    return (user + nice + system + irq + softirq) / TICK


def tally(before: dict, last: dict) -> dict[str, list]:
    """Per kind: [processes, CPU seconds], each process counted from where it stood before the suite."""
    kinds = {}
    for key, (cpu, kind) in last.items():
        used = cpu - before.get(key, (0.0, kind))[0]
        if used > 0:
            kinds.setdefault(kind, [0, 0.0])
            kinds[kind][0] += 1
            kinds[kind][1] += used
    return kinds


def watch(done: threading.Event, last: dict, kinds: dict) -> None:
    while not done.is_set():
        for key, reading in processes(kinds).items():
            last[key] = reading
        time.sleep(SAMPLE)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pytest_args", nargs="*", help="pytest's arguments (after --) [default: the whole suite]")
    args = p.parse_args()
    kinds_seen, last, done = {}, {}, threading.Event()
    before = processes(kinds_seen)
    sampler = threading.Thread(target=watch, args=(done, last, kinds_seen), daemon=True)
    busy_at_start, started = machine_cpu(), time.perf_counter()
    sampler.start()
    code = subprocess.run([sys.executable, "-m", "pytest", *args.pytest_args], cwd=ROOT).returncode
    wall, busy = time.perf_counter() - started, machine_cpu() - busy_at_start
    done.set()
    sampler.join()
    kinds = tally(before, last)
    sampled = sum(cpu for _, cpu in kinds.values())
    rows = [{"kind": kind, "processes": n, "CPU s": round(cpu, 1), "share": f"{cpu / busy:.0%}"}
            for kind, (n, cpu) in sorted(kinds.items(), key=lambda item: -item[1][1]) if cpu >= 0.5]
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(table(rows, [("kind", "process"), ("processes", "processes"), ("CPU s", "CPU s"),
                       ("share", "of the machine's")]))
    print(f"pytest exit {code}; {wall:.1f} s; the machine busy {busy:.1f} CPU s ({busy / wall:.2f} cores): "
          f"{sampled:.1f} of them in the processes sampled, {own.ru_utime + own.ru_stime:.1f} in this sampler")


if __name__ == "__main__":
    main()
