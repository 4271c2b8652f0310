"""Prefix cache over this rank's KV slots (the tree itself is elided)."""

from __future__ import annotations

from typing import Optional

import torch
import torch.distributed as dist


class RadixCache:
    def __init__(
        self, num_slots: int, tp_rank: int, cpu_group: Optional[dist.ProcessGroup]
    ) -> None:
        self.tp_rank = tp_rank
        self.cpu_group = cpu_group
        self.num_free = num_slots
        self.evictable_size_ = 0

    def available_size(self) -> int:
        """KV slots this rank can hand out now: free slots plus evictable tree tokens.

        Rank-local: every rank's pool fills and drains at its own pace.
        """
        return self.num_free + self.evictable_size_

    def evict(self, num_tokens: int) -> int:
        evicted = min(num_tokens, self.evictable_size_)
        self.evictable_size_ -= evicted
        self.num_free += evicted
        return evicted

    def sync_evict_plan(self, num_tokens: int, src: int = 0) -> int:
        """Every rank evicts what rank ``src`` decided, so the trees stay identical."""
        # not a hazard: both branches enter the same broadcast
        if self.tp_rank == src:
            plan = torch.tensor([num_tokens], dtype=torch.int64, device="cpu")
            dist.broadcast(plan, src=src, group=self.cpu_group)
        else:
            plan = torch.zeros(1, dtype=torch.int64, device="cpu")
            dist.broadcast(plan, src=src, group=self.cpu_group)
        return int(plan[0])

    def reset(self) -> None:
        self.num_free += self.evictable_size_
        self.evictable_size_ = 0
