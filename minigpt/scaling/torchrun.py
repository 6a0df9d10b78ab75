"""Starting one run on several processes: torchrun's environment, and relaunching under it.

`minigpt train --nproc N` replaces itself with torchrun running the same command N times;
each process then finds its rank in the environment torchrun sets. Nothing here imports
torch, so the command line reads it before torch loads. processes.py does the rest.
"""

from __future__ import annotations

import os
import sys


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def rank() -> int | None:
    """This process's rank when torchrun started several, else None (read before any process group exists)."""
    return int(os.environ.get("RANK", "0")) if launched_by_torchrun() else None


def relaunch_under_torchrun(nproc: int) -> None:
    """Replace this process with torch's launcher running the same command on `nproc` processes."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg.startswith("--nproc="):
            skip = False
            continue
        if arg == "--nproc":
            skip = True
            continue
        args.append(arg)
    # share the cores out, rather than letting every process start a thread per core
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "minigpt", *args]
    os.execv(command[0], command)
