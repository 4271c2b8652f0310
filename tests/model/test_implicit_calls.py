"""Calls Python makes without a call in the source: a `with` runs `__enter__`/`__exit__`, a
`for` over an instance runs `__iter__`/`__next__`, a dataclass's constructor runs
`__post_init__`; a round that enters a context manager meets the collectives inside it."""

from __future__ import annotations

from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from tests.conftest import callees

CODE = """
from dataclasses import dataclass

import torch.distributed as dist


class Synced:
    def __enter__(self):
        dist.barrier()
        return self

    def __exit__(self, *exc):
        dist.barrier()


class Batches:
    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration


@dataclass
class Plan:
    size: int = 0

    def __post_init__(self):
        dist.all_reduce(None)


class S:
    def event_loop(self):
        while True:
            with Synced():
                pass
            for batch in Batches():
                pass
            plan = Plan()
"""


def test_with_for_and_dataclass_constructors_reach_their_dunders(program_of):
    program = program_of({"m.py": CODE})
    found = callees(program, "m.S.event_loop", "call")
    assert {
        "m.Synced.__enter__",
        "m.Synced.__exit__",
        "m.Batches.__iter__",
        "m.Batches.__next__",
        "m.Plan.__post_init__",
    } <= found


def test_a_round_meets_collectives_in_a_context_manager(program_of):
    program = program_of({"m.py": CODE})
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [(c.site.callee, c.chain[-1].function) for c in rnd.collectives] == [
        ("torch.distributed.barrier", "m.Synced.__enter__"),
        ("torch.distributed.barrier", "m.Synced.__exit__"),
        ("torch.distributed.all_reduce", "m.Plan.__post_init__"),
    ]
