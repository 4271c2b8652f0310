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


GENERATORS = """
import torch.distributed as dist

from ext import Parent


def func():
    pass


def func2():
    pass


class Numbers:
    def __iter__(self):
        return self

    def __next__(self):
        return func


def produce():
    dist.barrier()
    yield func2


def iterate():
    for i in Numbers():
        i()
    for j in produce():
        j()


def advance():
    gen = produce()
    next(gen)


class Child(Parent):
    def fn(self):
        self.parent_fn()


def construct():
    Child().fn()


class S:
    def event_loop(self):
        while True:
            gen = produce()
            next(gen)
"""


def test_a_for_target_holds_what_next_returns_or_the_generator_yields(program_of):
    program = program_of({"m.py": GENERATORS})
    assert {"m.func", "m.func2"} <= callees(program, "m.iterate", "call")


def test_next_of_a_generator_runs_its_body_there(program_of):
    program = program_of({"m.py": GENERATORS})
    # The body runs where the generator is advanced, not where it is made.
    by_text = {r.call.text: {t.name for t in r.targets} for r in program.calls["m.advance"]}
    assert by_text == {"produce": {"m.produce"}, "next": {"<builtin>.next", "m.produce"}}
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [(c.site.callee, c.chain[-1].function) for c in rnd.collectives] == [
        ("torch.distributed.barrier", "m.produce"),
    ]


def test_constructing_a_class_with_an_external_base_runs_the_base_init(program_of):
    program = program_of({"m.py": GENERATORS})
    assert "ext.Parent.__init__" in callees(program, "m.construct", "call")


EXITS = """
import time

import torch.distributed as dist


class Synced:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        dist.barrier()


class S:
    def event_loop(self):
        while True:
            with Synced():
                time.sleep(1)
                dist.all_reduce(None)
"""


def test_exit_runs_where_the_with_body_is_left(program_of):
    """`__exit__` runs after the body: its edge sits at the end of the `with`, so a round
    meets the body's collective before the one `__exit__` enters."""
    program = program_of({"m.py": EXITS})
    exits = [
        r.call.line
        for r in program.calls["m.S.event_loop"]
        for t in r.targets
        if t.name == "m.Synced.__exit__"
    ]
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [c.site.callee for c in rnd.collectives] == [
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
    ]
    assert exits == [19]  # the `with` ends at the `all_reduce` line
