"""Collective events: every distinct call-site chain to a primitive is one event, and the one
collective index handles recursion the same whichever function is asked about first."""

from __future__ import annotations

from collections.abc import Callable

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from rankguard.model import Program

HEAD = "import torch.distributed as dist\n\n"

WRAPPER = """
def broadcast_pyobj(data, rank):
    if rank == 0:
        dist.broadcast(data, src=0)
    else:
        dist.broadcast(data, src=0)


class S:
    def exchange(self):
        a = broadcast_pyobj(1, self.rank)
        b = broadcast_pyobj(2, self.rank)
        c = broadcast_pyobj(3, self.rank)

    def event_loop(self):
        while True:
            self.exchange()
            dist.barrier()
"""


def _rounds(program: Program) -> dict[str, list[dict]]:
    found = find_rounds(program, ("*.event_loop",), collective_catalog())
    return {r.function.qualname: [c.to_json() for c in r.collectives] for r in found}


def test_three_calls_of_one_wrapper_are_three_events(program_of: Callable[..., Program]):
    program = program_of({"m.py": HEAD + WRAPPER})
    rows = _rounds(program)["m.S.event_loop"]
    events = [(r["event"]["path"], r["event"]["line"]) for r in rows]
    exchange = [r for r in rows if r["chain"][0]["line"] == 19]
    # Three call sites of broadcast_pyobj: three events, each with both primitive sites below.
    assert [r["event"]["line"] for r in exchange] == [13, 14, 15]
    assert {r["event"]["callee"] for r in exchange} == {"m.broadcast_pyobj"}
    assert [[p["line"] for p in r["primitives"]] for r in exchange] == [[6, 8]] * 3
    # The barrier in the loop is its own event, named by the primitive call itself.
    last = rows[-1]
    assert last["callee"] == "torch.distributed.barrier"
    assert (last["event"]["line"], last["event"]["callee"]) == (20, "torch.distributed.barrier")
    assert len(set(events)) == len(rows) == 4


CYCLE = """
def a_q(n):
    if n:
        b_p(n - 1)


def b_p(n):
    a_q(n)
    dist.barrier()


class S:
    def event_loop(self):
        while True:
            a_q(3)
"""


def test_recursion_cut_is_never_final(program_of: Callable[..., Program]):
    program = program_of({"m.py": HEAD + CYCLE})
    for first in (["m.b_p", "m.a_q"], ["m.a_q", "m.b_p"]):
        reach = CollectiveReach(program, collective_catalog())
        for name in first:  # whichever function the index is asked about first
            assert [s.callee for s in reach.primitives_under(name)] == ["torch.distributed.barrier"]
        rows = find_rounds(program, ("*.event_loop",), collective_catalog(), reach)[0]
        chains = [[h.function for h in c.chain] for c in rows.collectives]
        assert chains == [["m.S.event_loop", "m.a_q", "m.b_p"]]
