"""Starting one run on several processes of this machine, in torchrun's environment.

`minigpt train --nproc N` starts the same command N times, each with the variables
torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), and waits for
them; each process then finds its rank there, and processes.py joins them into one group.
Runs across machines use torchrun itself (docs/distributed.md). Nothing here imports
torch, so the command line reads it before torch loads.

Ctrl-C reaches every process of the terminal at once: each saves and stops after the same
step, and this one waits for them and exits as they do (130). A SIGTERM sent to this
process alone is passed on to them.

The processes leave their error lines in a folder (ERRORS_ENV names it) rather than print
them: every process meets bad input alike, and one that loses another mid-run fails in the
backend's words (gloo's "Connection reset by peer"). This one prints each distinct error
once, and says which process was killed by a signal, if one was.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from minigpt.errors import UsageError

GRACE_SECONDS = 20  # after one process fails, how long the others get to stop by themselves
ERRORS_ENV = "MINIGPT_ERRORS_DIR"  # where the processes `--nproc` started leave their error lines
LOST_A_PROCESS = "lost: "  # how a process's error line begins when it failed because another one stopped


def environment() -> tuple[int, int, int] | None:
    """(rank, world size, local rank) when torchrun started this process, None in one process. An environment
    torchrun could not have set (WORLD_SIZE=abc, a WORLD_SIZE without RANK) is one line saying so."""
    given = os.environ.get("WORLD_SIZE", "1")
    if not given.strip().isdigit() or int(given) < 1:
        raise UsageError(
            f"WORLD_SIZE={given!r} in the environment is not a number of processes; torchrun sets it "
            f"(minigpt train --nproc N starts N processes); unset it to run in one process"
        )
    world = int(given)
    if world == 1:
        return None
    found = []
    for key in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(key)
        if value is None or not value.strip().isdigit() or int(value) >= world:
            said = "unset" if value is None else repr(value)
            raise UsageError(
                f"WORLD_SIZE={world} in the environment, but {key} is {said}: torchrun sets both from 0 to "
                f"WORLD_SIZE - 1 (minigpt train --nproc N starts N processes); unset WORLD_SIZE to run in one"
            )
        found.append(int(value))
    check_master()
    return found[0], world, found[1]


def check_master() -> None:
    """Where the processes meet: MASTER_ADDR and a MASTER_PORT from 1 to 65535, as torchrun sets them; a missing
    or impossible one is the environment's mistake, said in one line (torch's ValueError exited 1)."""
    address, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not address:
        raise UsageError(
            "WORLD_SIZE says several processes, and MASTER_ADDR (where they meet) is unset: torchrun sets it "
            "(minigpt train --nproc N starts N processes); unset WORLD_SIZE to run in one"
        )
    if port is None or not port.strip().isdigit() or not 1 <= int(port) <= 65535:
        said = "unset" if port is None else repr(port)
        raise UsageError(
            f"MASTER_PORT is {said}: the port the processes meet on is a whole number from 1 to 65535, as "
            f"torchrun sets it"
        )


def launched_by_torchrun() -> bool:
    return environment() is not None


def rank() -> int | None:
    """This process's rank when several were started, else None (read before any process group exists).
    It names the process in error lines, so an environment that makes no sense is one process here."""
    try:
        found = environment()
    except UsageError:
        return None
    return found[0] if found else None


def most_processes() -> int:
    """One training process per core this process may run on (more only wait for each other), and two on any
    machine, so that DDP can be tried anywhere."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, cores)


def check_batch_splits(batch_size: int, processes: int, named: str) -> None:
    """Every process takes an equal slice of each batch."""
    if batch_size % processes:
        raise UsageError(f"train.batch_size ({batch_size}) must be a multiple of {named} ({processes})")


def arguments_without_nproc(argv: list[str]) -> list[str]:
    args, skip = [], False
    for arg in argv:
        if skip or arg.startswith("--nproc="):
            skip = False
            continue
        if arg == "--nproc":
            skip = True
            continue
        args.append(arg)
    return args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Worker(subprocess.Popen[bytes]):
    """One process `--nproc` started, with what the launcher learns of its end."""

    followed = False  # it ended only after another had failed (gloo aborts on a lost peer)
    stopped_here = False  # the launcher killed it, waiting in a collective on a process that is gone


def wait_for_all(workers: list[Worker]) -> int:
    """0 when every process succeeds; else the first failure's exit code (a process killed by a signal before
    any, since the others only followed it: 128 + the signal), the others stopped by then."""
    failed_at = None
    while [w for w in workers if w.poll() is None]:  # every one polled each time: the first to fail is known
        if failed_at is None and any(w.returncode not in (None, 0) for w in workers):
            failed_at = time.monotonic()
            for w in workers:  # whoever ends after the first failure only followed it (gloo aborts on a lost peer)
                w.followed = w.returncode is None
        if failed_at is not None and time.monotonic() - failed_at > GRACE_SECONDS:
            for w in workers:  # waiting on a process that is gone, in a collective: stop them
                if w.poll() is None:
                    w.stopped_here = True
                    w.kill()
        time.sleep(0.05)
    codes = [w.returncode for w in workers if w.returncode and not stopped_by_another(w)]
    code = min(codes, key=lambda c: (c > 0, codes.index(c)), default=0)
    return 128 - code if code < 0 else code


def stopped_by_another(worker: Worker) -> bool:
    """A process this launcher stopped, or one killed by a signal after another had failed: its end says nothing
    of its own (a process that loses a peer inside a collective may abort)."""
    return worker.stopped_here or (worker.followed and worker.returncode < 0)


# what the C++ runtime writes when a process aborts on an exception no one caught (gloo's, on a lost peer)
ABORT_REPORT = re.compile(rb"terminate called after throwing an instance of [^\n]*\n(?:  what\(\): [^\n]*\n)?")


def pass_on_stderr(worker: Worker) -> threading.Thread:
    """A thread that writes what the worker writes to stderr, as it comes (progress lines included), but for the
    C++ runtime's report of an abort: the launching process says which process stopped, once, in its words."""

    def forward() -> None:
        assert worker.stderr is not None  # started with stderr=PIPE
        while chunk := os.read(worker.stderr.fileno(), 65536):
            sys.stderr.buffer.write(ABORT_REPORT.sub(b"", chunk))
            sys.stderr.buffer.flush()

    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    return thread


def run_on_processes(nproc: int) -> int:
    """Run this command (without --nproc) on `nproc` processes of this machine; their exit code."""
    env = {
        **os.environ,
        "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    # share the cores out, rather than letting every process start a thread per core
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    command = [sys.executable, "-m", "minigpt", *arguments_without_nproc(sys.argv[1:])]
    with tempfile.TemporaryDirectory(prefix="minigpt-errors-") as errors:
        env[ERRORS_ENV] = errors
        # on a terminal the workers write to it themselves (their progress bars need one); elsewhere (a log, a
        # pipe) their stderr passes through here, where a C++ abort report is left out
        piped = None if sys.stderr.isatty() else subprocess.PIPE
        workers = [
            Worker(command, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, stderr=piped) for r in range(nproc)
        ]
        forwarding = [pass_on_stderr(worker) for worker in workers] if piped else []

        def pass_on(signum, frame):
            for worker in workers:
                worker.send_signal(signum)

        previous = {
            signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),  # the workers get Ctrl-C themselves
            signal.SIGTERM: signal.signal(signal.SIGTERM, pass_on),
        }
        try:
            code = wait_for_all(workers)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        for thread in forwarding:
            thread.join(timeout=5)
        for line in failures(workers, Path(errors)):
            print(line, file=sys.stderr)
    return code


def keep_error_line(line: str) -> bool:
    """In a process `--nproc` started: leave the error line for the launching process to print. False elsewhere."""
    folder, who = os.environ.get(ERRORS_ENV), rank()
    if not folder or who is None:
        return False
    try:
        (Path(folder) / f"{who}.txt").write_text(line, encoding="utf-8")
        return True
    except OSError:  # the folder went away: print it after all
        return False


def failures(workers: list[Worker], errors: Path) -> list[str]:
    """Each distinct error line once (naming the processes only where they differ), and any process killed
    by a signal; a process that failed only because another stopped adds nothing to that."""
    lines: dict[str, list[int]] = {}
    for r in range(len(workers)):
        path = errors / f"{r}.txt"
        if path.is_file():
            lines.setdefault(path.read_text(encoding="utf-8"), []).append(r)
    killed = [
        (r, -w.returncode)
        for r, w in enumerate(workers)
        if w.returncode is not None and w.returncode < 0 and not stopped_by_another(w)
    ]
    said = [
        f"minigpt: error: process {r} was killed by {signal.Signals(signum).name}"
        f"{' (out of memory, or stopped from outside)' if signum == signal.SIGKILL else ''}; the others stopped "
        f"with it: minigpt train --resume RUN_DIR continues from the run's last checkpoint"
        for r, signum in killed
    ]
    own = {line: ranks for line, ranks in lines.items() if not line.startswith(LOST_A_PROCESS)}
    for line, ranks in own.items():
        who = "" if len(ranks) == len(workers) else f" (process{'es' * (len(ranks) > 1)} {', '.join(map(str, ranks))})"
        said.append(f"minigpt{who}: error: {line}")
    if not said:  # every process that failed says another stopped: say that, once
        said = [f"minigpt: error: {line.removeprefix(LOST_A_PROCESS)}" for line in list(lines)[:1]]
    return said
