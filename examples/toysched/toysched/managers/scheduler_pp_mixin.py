"""Pipeline-parallel event loop, mixed into Scheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

import torch
import torch.distributed as dist

from ..distributed import broadcast_pyobj, point_to_point_pyobj

if TYPE_CHECKING:
    from .scheduler import Scheduler


class SchedulerPPMixin:
    def _pp_recv_from_prev_stage(self: "Scheduler") -> List[Any]:
        """The stage leader (tp rank 0) receives the micro-batch from the previous stage."""
        recv_reqs: List[Any] = []
        # not a hazard: point-to-point only, rank-conditional by nature
        if self.tp_rank == 0:
            prev_stage = (self.pp_rank - 1) % self.pp_size
            recv_reqs, _ = point_to_point_pyobj(
                [], self.pp_rank, self.pp_group.cpu_group, src=prev_stage, dst=self.pp_rank
            )
        return recv_reqs

    def _pp_send_to_next_stage(self: "Scheduler", reqs: List[Any]) -> List[dist.Work]:
        """The stage leader posts async sends to the next stage and returns their handles."""
        # not a hazard: point-to-point only, rank-conditional by nature
        if self.tp_rank == 0:
            next_stage = (self.pp_rank + 1) % self.pp_size
            _, works = point_to_point_pyobj(
                reqs, self.pp_rank, self.pp_group.cpu_group, src=self.pp_rank, dst=next_stage
            )
            return works
        return []

    def _pp_agree_batch_size(self: "Scheduler") -> int:
        local = torch.tensor([len(self.waiting_queue)], dtype=torch.int64, device="cpu")
        dist.all_reduce(local, op=dist.ReduceOp.MIN, group=self.tp_group.cpu_group)
        return int(local[0])

    def event_loop_pp(self: "Scheduler") -> None:
        """Pipeline-parallel loop: one micro-batch per round; requests travel the stage ring."""
        self._pp_send_works: List[dist.Work] = []
        while True:
            with self.on_blocked_recv("pp_recv_from_prev_stage"):
                recv_reqs = self._pp_recv_from_prev_stage()
            # planted: unwatched collective -- followers wait here for their stage leader,
            # and no on_blocked_recv stamp names the wait
            recv_reqs = broadcast_pyobj(recv_reqs, self.tp_rank, self.tp_group.cpu_group, src=0)
            self.waiting_queue.extend(recv_reqs)

            with self.on_blocked_recv("pp_drain_sends"):
                for work in self._pp_send_works:
                    # planted: blocking (work wait) -- drains last round's async sends
                    # before the tp all-reduce below
                    work.wait()
            with self.on_blocked_recv("pp_agree_batch_size"):
                batch_size = self._pp_agree_batch_size()
            micro_batch = self.waiting_queue[:batch_size]
            del self.waiting_queue[:batch_size]

            with self.on_blocked_recv("pp_send_to_next_stage"):
                self._pp_send_works = self._pp_send_to_next_stage(micro_batch)
