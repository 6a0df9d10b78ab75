"""One training run over several processes: torch.distributed, launched by torchrun.

Every rank builds the same model from the same seed and computes the same global batch
(the batch order is a pure function of seed and step), then trains on its own slice of it.
Each rank weights its loss by its share of the batch's predicted tokens, so the gradients
DistributedDataParallel averages are exactly one process's gradients for the whole batch:
N processes with B/N names each take the same steps as one process with B.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from minigpt.errors import UsageError
from minigpt.launch import launched_by_torchrun


@dataclass
class Distributed:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum over all ranks (in place, and returned)."""
        if self.enabled:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def max(self, values: list[float]) -> list[float]:
        """Element-wise maximum over all ranks: how ranks agree to stop."""
        if not self.enabled:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

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

    def shard(self, items):
        """This rank's share: every world-th item, starting at its rank."""
        return items[self.rank :: self.world]

    def on_main(self, make):
        """What `make()` returns on rank 0, on every rank; or the UsageError it raised, raised on every rank."""
        outcome = None
        if self.main:
            try:
                outcome = (make(), None)
            except UsageError as e:
                outcome = (None, str(e))
        value, error = self.broadcast(outcome)
        if error is not None:
            raise UsageError(error)
        return value

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def setup(device: torch.device) -> Distributed:
    """Join the process group torchrun set up, if it did: gloo on the CPU, nccl on CUDA, one GPU per rank."""
    if not launched_by_torchrun():
        return Distributed(device=device)
    rank, world, local_rank = (int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Distributed(rank, world, local_rank, device)
