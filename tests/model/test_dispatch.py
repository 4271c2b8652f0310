"""Virtual dispatch: a call on a receiver typed as a base class, an ABC or a Protocol reaches the
overrides of the program's classes, narrowed to the classes the program instantiates."""

from __future__ import annotations

from tests.conftest import callees

STRATEGIES = """
import abc
from concurrent.futures import Future
from typing import Protocol

import torch.distributed as dist


class Strategy(abc.ABC):
    @abc.abstractmethod
    def sync(self): ...

    def run(self):
        self.sync()


class Broadcasting(Strategy):
    def sync(self):
        dist.broadcast(None, 0)


class Local(Strategy):
    def sync(self):
        pass


class NeverBuilt(Strategy):
    def sync(self):
        dist.all_reduce(None)


class Saver(Protocol):
    def save(self) -> None: ...


class FutureSaver:
    def save(self) -> None:
        Future().result()


class S:
    def __init__(self, strategy: Strategy, saver: Saver):
        self.strategy = strategy
        self.saver = saver

    def event_loop(self):
        while True:
            self.strategy.sync()
            self.saver.save()
            exact = Local()
            exact.sync()


def main():
    S(Broadcasting(), FutureSaver())
    S(Local(), FutureSaver())
"""


def test_overrides_of_instantiated_subclasses(program_of):
    program = program_of({"m.py": STRATEGIES})
    found = callees(program, "m.S.event_loop", "call")
    assert {"m.Broadcasting.sync", "m.Local.sync"} <= found
    assert "m.NeverBuilt.sync" not in found  # never instantiated: narrowed out
    assert "m.Strategy.sync" not in found  # abstract, never instantiated


def test_self_call_in_a_base_reaches_the_overrides(program_of):
    program = program_of({"m.py": STRATEGIES})
    assert callees(program, "m.Strategy.run", "call") == {"m.Broadcasting.sync", "m.Local.sync"}


def test_protocol_receiver_reaches_structural_implementations(program_of):
    program = program_of({"m.py": STRATEGIES})
    assert "m.FutureSaver.save" in callees(program, "m.S.event_loop", "call")


def test_an_exactly_typed_receiver_keeps_its_one_target(program_of):
    program = program_of({"m.py": STRATEGIES})
    edges = [
        (data["line"], callee)
        for _, callee, data in program.graph.out_edges("m.S.event_loop", data=True)
        if data["line"] == 50
    ]
    assert edges == [(50, "m.Local.sync")]


FACTORIES = """
class Cache:
    def reset(self):
        pass

    @classmethod
    def simulated(cls) -> "Cache":
        return Cache()

    @classmethod
    def derived(cls) -> "Cache":
        return cls()


class Tiered(Cache):
    def reset(self):
        self.lock.acquire()


def build() -> Cache:
    return Tiered()


class Policy:
    def __init__(self):
        self.tree = Cache.simulated()
        self.other = Tiered.derived()

    def step(self):
        self.tree.reset()
        self.other.reset()
"""


def test_a_factory_that_constructs_one_class_returns_exactly_it(program_of):
    """The annotation says a base class; the body says which class: a call on what it returns
    runs that class's method, not every override."""
    program = program_of({"m.py": FACTORIES})
    found = callees(program, "m.Policy.step", "call")
    assert "m.Cache.reset" in found
    assert "m.Tiered.reset" in found  # `cls()`: whatever class the factory was called on


def test_only_the_constructed_class_is_returned(program_of):
    program = program_of({"m.py": FACTORIES + "\n\ndef use():\n    Cache.simulated().reset()\n"})
    assert callees(program, "m.use", "call") >= {"m.Cache.reset"}
    assert "m.Tiered.reset" not in callees(program, "m.use", "call")
