"""Process groups and the collective wrappers the scheduler uses.

Every rank of a group must call these in the same order: each one enters torch.distributed
collectives (or point-to-point operations) on the group.
"""

from __future__ import annotations

import pickle
from typing import Any, List, Optional, Tuple

import torch
import torch.distributed as dist
from torch.distributed import all_reduce

_TP_GROUP: Optional[GroupCoordinator] = None
_PP_GROUP: Optional[GroupCoordinator] = None


class GroupCoordinator:
    """One process group: an NCCL group for tensors and a gloo group for Python objects."""

    def __init__(self, ranks: List[int], local_rank: int, backend: str = "nccl") -> None:
        self.ranks = ranks
        self.rank = dist.get_rank()
        self.rank_in_group = ranks.index(self.rank)
        self.world_size = len(ranks)
        self.device = torch.device(f"cuda:{local_rank}")
        self.device_group = dist.new_group(ranks, backend=backend)
        self.cpu_group = dist.new_group(ranks, backend="gloo")

    def all_reduce(
        self, input_: torch.Tensor, op: dist.ReduceOp = dist.ReduceOp.SUM
    ) -> torch.Tensor:
        """All-reduce ``input_`` in place over the device group."""
        # not a hazard: world_size is the same on every rank of the group
        if self.world_size == 1:
            return input_
        all_reduce(input_, op=op, group=self.device_group)
        return input_


def init_model_parallel_groups(tp_ranks: List[int], pp_ranks: List[int], local_rank: int) -> None:
    global _TP_GROUP, _PP_GROUP
    _TP_GROUP = GroupCoordinator(tp_ranks, local_rank)
    _PP_GROUP = GroupCoordinator(pp_ranks, local_rank, backend="gloo")


def get_tp_group() -> GroupCoordinator:
    if _TP_GROUP is None:
        raise RuntimeError("tensor parallel group is not initialized")
    return _TP_GROUP


def get_pp_group() -> GroupCoordinator:
    assert _PP_GROUP is not None
    return _PP_GROUP


def broadcast_pyobj(
    data: Optional[List[Any]],
    rank: int,
    dist_group: Optional[dist.ProcessGroup] = None,
    src: int = 0,
) -> List[Any]:
    """Broadcast a list of Python objects from ``src``; the other ranks pass ``None``."""
    box = [data if rank == src else None]
    dist.broadcast_object_list(box, src=src, group=dist_group)
    return box[0] or []


def _pack(data: List[Any]) -> Tuple[torch.Tensor, torch.Tensor]:
    payload = pickle.dumps(data)
    size = torch.tensor([len(payload)], dtype=torch.long, device="cpu")
    return size, torch.frombuffer(bytearray(payload), dtype=torch.uint8)


def point_to_point_pyobj(
    data: List[Any],
    rank: int,
    group: Optional[dist.ProcessGroup] = None,
    src: int = 0,
    dst: int = 1,
) -> Tuple[List[Any], List[dist.Work]]:
    """Send ``data`` from rank ``src`` to rank ``dst`` of ``group``.

    The sender posts non-blocking ``isend``s and returns their ``Work`` handles: the caller
    must ``Work.wait()`` on them before the next send. The receiver blocks in ``recv``.
    """
    if rank == src:
        size, payload = _pack(data)
        size_work = dist.isend(size, dst=dst, group=group)
        payload_work = dist.isend(payload, dst=dst, group=group)
        return data, [size_work, payload_work]
    if rank == dst:
        size = torch.tensor([0], dtype=torch.long, device="cpu")
        dist.recv(size, src=src, group=group)
        # precision: .item() on a tensor created on the CPU just above, no device sync
        payload = torch.empty(size.item(), dtype=torch.uint8, device="cpu")
        dist.recv(payload, src=src, group=group)
        # precision: .numpy() exists only for CPU tensors, no device sync
        return pickle.loads(payload.numpy().tobytes()), []
    return [], []
