"""Where a run runs: its device, and one run over several processes (torch.distributed, torchrun).

Every rank builds the same model from the same seed and computes the same global batch
(the batch order is a pure function of seed and step), then trains on its own slice of it.
Each rank weights its loss by its share of the batch's predicted tokens, so the gradients
DistributedDataParallel averages are exactly one process's gradients for the whole batch:
N processes with B/N names each take the same steps as one process with B.

The training loop makes one call for each thing several processes need (`my_share`,
`weighted_for_whole_batch`, `agree_to_stop`); training.py's `OneProcess` answers them for one,
and a run in one process steps with exactly those answers (`Processes` adds only what the run
around the loop asks); `Distributed` answers them for several.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading

import torch
import torch.distributed as dist

from minigpt.common.failures import LostProcess, first_line, warn
from minigpt.errors import Interrupted, RunError, UsageError
from minigpt.machine.torchrun import check_batch_splits, environment
from minigpt.training import OneProcess


def resolve_device(name: str) -> torch.device:
    """ "auto" is CUDA when there is one, else the CPU; anything else must exist here."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UsageError(f"unknown device '{name}' (expected auto, cpu, cuda, cuda:N or mps)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"device '{name}' asked for, but CUDA is not available on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"device '{name}' asked for, but there are {torch.cuda.device_count()} CUDA devices")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise UsageError("device 'mps' asked for, but MPS is not available on this machine")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"unsupported device '{name}' (expected auto, cpu, cuda, cuda:N or mps)")
    return device


class Processes(OneProcess):
    """One process: the core's OneProcess for every call of the loop, and the calls only the run around
    the loop makes (rank 0's work, a shared choice), each answered at once."""

    local_rank = 0

    def broadcast(self, obj):
        return obj

    def on_main(self, make, share=lambda value: value):
        return make()

    def close(self) -> None: ...


class Distributed(Processes):
    """One process of several under torchrun: each call of the loop answered for all of them."""

    def __init__(self, rank: int = 0, world: int = 1, local_rank: int = 0, device=torch.device("cpu")):
        super().__init__(device)
        self.rank, self.world, self.local_rank = rank, world, local_rank
        self.enabled, self.main = world > 1, rank == 0

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum over all ranks (in place, and returned)."""
        if self.enabled:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def agree_to_stop(self, done: bool, signal: int | None) -> tuple[bool, int]:
        """(done, signal) as every rank sees them: done when any rank is; the largest signal any rank got (0: none).

        Every rank then stops at the same step, whichever rank's clock ran out or was signalled.
        """
        if not self.enabled:
            return done, signal or 0
        tensor = torch.tensor([float(done), float(signal or 0)], dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor[0]), int(tensor[1])

    def broadcast(self, obj):
        """Rank 0's object, on every rank."""
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, obj) -> list:
        """Every rank's object, on every rank, in rank order."""
        if not self.enabled:
            return [obj]
        boxes = [None] * self.world
        dist.all_gather_object(boxes, obj)
        return boxes

    def my_share(self, items):
        """This rank's share: every world-th item, starting at its rank (all of them in one process)."""
        return items[self.rank :: self.world]

    def weighted_for_whole_batch(self, loss: torch.Tensor, my_tokens: int, batch_tokens: int) -> torch.Tensor:
        """This rank's mean loss, weighted by its share of the batch's tokens.

        DDP averages the ranks' gradients; with this weight that average is the gradient of the
        whole batch's mean loss. In one process the loss is the whole batch's already.
        """
        if not self.enabled:
            return loss
        return loss * (my_tokens * self.world / batch_tokens)

    def wrap(self, model: torch.nn.Module, batch_size: int, seed: int) -> torch.nn.Module:
        """DDP around the model, with each rank its own dropout masks; the model itself in one process."""
        if not self.enabled:
            return model
        check_batch_splits(batch_size, self.world, "the number of processes")
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        wrapped = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        torch.manual_seed(seed + 1_000_003 * self.rank)
        return wrapped

    def on_main(self, make, share=lambda value: value):
        """What `make()` returns on rank 0; on the others, `share(value)` of it (what can cross to another
        process: not a lock). The UsageError it raised is raised on every rank."""
        value = None
        outcome: tuple[object, str | None] | None = None
        if self.main:
            try:
                value = make()
                outcome = (share(value), None)
            except UsageError as e:
                outcome = (None, str(e))
        shared, error = self.broadcast(outcome)
        if error is not None:
            raise UsageError(error)
        return value if self.main else shared

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


PEER_GONE = (
    "Connection reset by peer",
    "Connection closed by peer",
    "Broken pipe",
    "NCCL communicator was aborted",
    "gloo",
)  # what the backends say in a collective when another process of the group is gone


def lost_a_process(error: BaseException, dist: Processes) -> LostProcess | None:
    """The error a collective raises when another process of the run stopped, as one line; None for any other."""
    if not dist.enabled or not isinstance(error, RuntimeError) or not any(s in str(error) for s in PEER_GONE):
        return None
    return LostProcess(f"another process of this run stopped, and this one with it ({first_line(error)[:120]})")


def setup(device: torch.device) -> Processes:
    """Join the process group torchrun set up, if it did: gloo on the CPU, nccl on CUDA, one GPU per rank."""
    found = environment()
    if found is None:
        return Processes(device)
    rank, world, local_rank = found
    if device.type == "cuda":
        if world > torch.cuda.device_count():  # every process says so, before any waits on another
            raise UsageError(
                f"{world} processes on CUDA need a GPU each, and this machine has "
                f"{torch.cuda.device_count()}; use --device cpu to run them on the CPU"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        with saying_what_it_waits_for(rank, world):
            meet("nccl" if device.type == "cuda" else "gloo")
    return Distributed(rank, world, local_rank, device)


MEETING = datetime.timedelta(minutes=10)  # how long a process waits for the others, to meet and at each step
SAY_AFTER = 5.0  # seconds of waiting before a process says what it waits for (a meeting usually takes one)


def meet(backend: str) -> None:
    """torch's process group, made while this thread waits in Python: torch's rendezvous waits in C++, where a
    Ctrl-C is not heard until it gives up, so it runs in a thread of its own, and a signal stops the wait at once."""
    done, failed = threading.Event(), []

    def join() -> None:
        try:
            dist.init_process_group(backend, timeout=MEETING)
        except BaseException as e:  # handed to the waiting thread, which raises it
            failed.append(e)
        finally:
            done.set()

    threading.Thread(target=join, name="meet the other processes", daemon=True).start()
    while not done.wait(0.2):  # a signal's handler (or KeyboardInterrupt) runs here
        pass
    if failed:
        raise failed[0]


@contextlib.contextmanager
def saying_what_it_waits_for(rank: int, world: int):
    """While the processes meet: after SAY_AFTER seconds, one line saying what this one waits for, where, for how
    long and how to stop waiting (torchrun's variables set by hand with no other process coming, or a master
    nobody serves, waited minutes in silence, then ended in torch's C++ frames)."""
    where = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
    timer = threading.Timer(
        SAY_AFTER,
        warn,
        [
            f"process {rank} of {world} waits for the others to meet at {where} (MASTER_ADDR:MASTER_PORT), for up "
            f"to {MEETING.seconds // 60} minutes; Ctrl-C stops waiting, and unsetting WORLD_SIZE runs in one process"
        ],
    )
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def compile_failed(error: BaseException) -> RunError | Interrupted | None:
    """torch.compile's failure (no C++ compiler, ...) as one line that says what to do; None for any other. A
    signal that stopped the run while it compiled is no failure: it is raised as the signal's own stop."""
    failed = getattr(getattr(torch, "_dynamo", None), "exc", None)
    if failed is None or not isinstance(error, failed.BackendCompilerFailed):
        return None
    if isinstance(error.inner_exception, Interrupted):
        return error.inner_exception
    return RunError(
        f"torch.compile failed ({first_line(error.inner_exception)}); set train.compile=false to train without it"
    )
