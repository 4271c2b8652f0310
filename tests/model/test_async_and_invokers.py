"""Callables that a call runs before its result is available: awaited threads and executors,
and builtins that call back. They are `call` edges refined by `via`, so rounds follow them;
a callable merely stored or submitted without waiting stays a `callback`."""

from __future__ import annotations

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog

ASYNC = """
import asyncio
from concurrent.futures import ThreadPoolExecutor

import torch.distributed as dist


def to_thread_sync():
    dist.broadcast(None, 0)


def executor_sync():
    dist.all_reduce(None)


def submitted_sync():
    dist.barrier()


def fire_and_forget():
    dist.all_gather(None, None)


def key(x):
    return x


class S:
    def __init__(self):
        self.pool = ThreadPoolExecutor(1)

    async def event_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.to_thread(to_thread_sync)
            await loop.run_in_executor(None, executor_sync)
            fut = self.pool.submit(submitted_sync)
            fut.result()
            self.remember(fire_and_forget)
            ordered = sorted([3, 1], key=key)

    def remember(self, fn):
        self.later = fn
"""


def _edges(program, caller: str) -> set[tuple[str, str, str | None]]:
    return {
        (callee, data["kind"], data["via"])
        for _, callee, data in program.graph.out_edges(caller, data=True)
        if callee.startswith("m.") and not callee.startswith("m.S.")
    }


def test_awaited_threads_executors_and_callbacks(program_of):
    program = program_of({"m.py": ASYNC})
    edges = _edges(program, "m.S.event_loop")
    assert ("m.to_thread_sync", "call", "awaited") in edges
    assert ("m.executor_sync", "call", "awaited") in edges
    assert ("m.submitted_sync", "call", "executor") in edges
    assert ("m.key", "call", "argument") in edges
    assert not any(e[0] == "m.fire_and_forget" and e[1] == "call" for e in edges)


def test_a_round_sees_collectives_run_through_awaited_threads(program_of):
    program = program_of({"m.py": ASYNC})
    rnd = find_rounds(
        program,
        ("*.event_loop",),
        collective_catalog(),
        CollectiveReach(program, collective_catalog()),
    )[0]
    assert [c.site.callee for c in rnd.collectives] == [
        "torch.distributed.broadcast",
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
    ]
