"""A barrier that ranks poll instead of blocking in it."""

from __future__ import annotations

from typing import Optional

import torch
import torch.distributed as dist


class PollBasedBarrier:
    """Ranks arrive locally whenever they like and poll until every rank has arrived.

    Each poll is one all-reduce, so every rank must poll the same number of times.
    """

    def __init__(self, group: Optional[dist.ProcessGroup] = None, noop: bool = False) -> None:
        self._group = group
        self._noop = noop
        self._local_arrived = False

    def local_arrive(self) -> None:
        self._local_arrived = True

    def poll_global_arrive(self) -> bool:
        global_arrived = self._compute_global_arrived()
        output = self._local_arrived and global_arrived
        if output:
            self._local_arrived = False
        return output

    def _compute_global_arrived(self) -> bool:
        local_arrived = self._noop or self._local_arrived
        flag = torch.tensor([local_arrived], dtype=torch.int32, device="cpu")
        dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=self._group)
        return bool(flag.item())
