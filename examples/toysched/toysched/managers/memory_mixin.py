"""The uniform KV pool budget, mixed into Scheduler.

Every tp rank computes how many pool slots it could grant this round, and the group adopts the
smallest. The budget is ``spendable = free + takeable - delta``, with ``takeable = cache - trapped``.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

if TYPE_CHECKING:
    from toysched.managers.scheduler import Scheduler

logger = logging.getLogger(__name__)


def memory_reserved(device: int) -> int:
    """Bytes the caching allocator holds on ``device``, read from its statistics."""
    # planted: blocking (driver query) -- the allocator walks all its segments
    return torch.cuda.memory_stats(device)["reserved_bytes.all.current"]


@functools.lru_cache(maxsize=8)
def _cached_reserved_bytes(device: int) -> int:
    # planted: staleness -- the allocator-cache term is cached (lru_cache) and never refreshed
    return memory_reserved(device)


class SchedulerMemoryMixin:
    def __init__(self) -> None:
        self._trapped = 0
        self._trapped_at = float("-inf")
        self._granted_bytes = 0
        self.uniform_width = 0
        self.pool_release_requests: list[int] = []

    def _allocator_cache_bytes(self: "Scheduler") -> int:
        return _cached_reserved_bytes(self.gpu_id)

    def _trapped_cache_bytes(self: "Scheduler") -> int:
        """Cached bytes stuck in inactive split blocks; refreshed at most every 30 s."""
        now = time.monotonic()
        if now - self._trapped_at >= 30:
            # planted: blocking (driver query), cadenced: memory_snapshot behind a 30 s cadence
            self._trapped = sum(
                block["size"]
                for segment in torch.cuda.memory_snapshot()
                for block in segment["blocks"]
                if block["state"] == "inactive"
            )
            self._trapped_at = now
        return self._trapped

    def _takeable_cache_bytes(self: "Scheduler") -> int:
        cache = self._allocator_cache_bytes()
        trapped = self._trapped_cache_bytes()
        return cache - trapped

    def spendable_bytes(self: "Scheduler") -> int:
        # planted: blocking (driver query) -- free_bytes, uncached
        free_bytes = torch.cuda.mem_get_info(self.gpu_id)[0]
        takeable = self._takeable_cache_bytes()
        delta = self._granted_bytes
        return free_bytes + takeable - delta

    def granted_width(self: "Scheduler") -> int:
        width = self.spendable_bytes() // self.server_args.bytes_per_slot
        return min(width, self.server_args.max_pool_width)

    def _update_uniform_pool_budget(self: "Scheduler") -> None:
        """Adopt the smallest width any tp rank can grant.

        A rank whose budget fell under the running width must not decide alone, so the
        minimum is agreed on (see the warning "budget shrank below the running width").
        """
        width = self.granted_width()
        budget = torch.tensor([width], dtype=torch.int64, device=self.device)
        self.tp_group.all_reduce(budget, op=dist.ReduceOp.MIN)
        # planted: blocking (device sync) -- .item() on the reduced device tensor
        self.uniform_width = budget.item()
        # planted: prose-only literal -- no call emits the following message any more:
        # budget shrank below the running width: the next round retracts requests

    def _pool_release_want(self: "Scheduler") -> int:
        """How much to ask the pool to release: the target minus what the allocator caches."""
        want = self.server_args.pool_target_bytes - self._allocator_cache_bytes()
        return max(want, 0)

    def _release_pool_slack(self: "Scheduler") -> None:
        want = self._pool_release_want()
        if want > 0:
            logger.info("Asking the pool to release {} bytes of cached KV".format(want))
            self.pool_release_requests.append(want)
