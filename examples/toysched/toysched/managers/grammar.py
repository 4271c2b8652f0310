"""Grammar (structured output) compilation off the scheduler thread."""

from __future__ import annotations

import logging
import queue
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Optional

import torch.distributed as dist

from toysched.managers.io_struct import Req

logger = logging.getLogger(__name__)


def compile_grammar(spec: Optional[str]) -> Any:
    """Stand-in for an xgrammar compile: seconds for a large JSON schema."""
    return ("compiled", spec)


class GrammarManager:
    def __init__(self, cpu_group: Optional[dist.ProcessGroup], world_size: int) -> None:
        self.cpu_group = cpu_group
        self.world_size = world_size
        self.executor = ThreadPoolExecutor(max_workers=2)
        self.pending: List[Req] = []
        self.compiled: List[Req] = []
        self.futures: Dict[str, Future] = {}
        self.done_queue: queue.Queue[str] = queue.Queue()

    def submit(self, req: Req) -> None:
        fut = self.executor.submit(compile_grammar, req.grammar_spec)
        fut.add_done_callback(lambda _fut, rid=req.rid: self.done_queue.put(rid))
        self.futures[req.rid] = fut
        self.pending.append(req)

    def poll_ready(self) -> List[Req]:
        """Return the requests whose grammar is compiled on every rank of the group."""

        def wait_compiled(fut: Future) -> Any:
            # planted: blocking (future wait) -- Future.result() without a timeout
            return fut.result()

        done = set()
        try:
            # precision: bounded wait (timeout=0.1), then non-blocking drains (block=False)
            done.add(self.done_queue.get(timeout=0.1))
            while True:
                done.add(self.done_queue.get(block=False))
        except queue.Empty:
            pass

        for req in list(self.pending):
            if req.rid in done or req.require_sync:
                req.grammar = wait_compiled(self.futures.pop(req.rid))
                self.pending.remove(req)
                self.compiled.append(req)
        if len(self.pending) > 64:
            logger.warning(
                "Grammar backlog is large: compiles run on two worker threads, "
                "so requests with a schema may wait several rounds before they are scheduled"
            )

        counts = [0] * self.world_size
        dist.all_gather_object(counts, len(self.compiled), group=self.cpu_group)
        num_ready = min(counts)
        ready, self.compiled = self.compiled[:num_ready], self.compiled[num_ready:]
        return ready
