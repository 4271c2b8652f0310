"""`self` in a method is an object whose class runs that method: a subclass that overrides the
method, and never hands on to it, never runs it, so `self.m()` in there cannot reach that
subclass's `m`. A base's `forward` calling `self.forward_extend(q, k, v, layer, batch)` binds
arguments by position; a subclass with its own `forward` and a `forward_extend(layer, batch, q,
k, v)` of another shape is never that `self`, and reading it as one hands `k` to `batch`."""

from __future__ import annotations

from tests.conftest import callees

BACKENDS = """
import torch.distributed as dist


class Backend:
    def forward(self, q, k, batch):
        return self.forward_extend(q, k, batch)

    def forward_extend(self, q, k, batch):
        raise NotImplementedError

    def __init__(self):
        self.ready = True


class Plain(Backend):
    def forward_extend(self, q, k, batch):
        return q


class Hybrid(Backend):
    def forward(self, q, k, batch):  # its own: Backend.forward never runs on a Hybrid
        return self.forward_extend(batch, q, k)

    def forward_extend(self, batch, q, k):
        dist.all_reduce(q)


class Chained(Backend):
    def forward(self, q, k, batch):  # hands on to Backend.forward: that runs on a Chained
        return super().forward(q, k, batch)

    def forward_extend(self, q, k, batch):
        dist.broadcast(q, 0)


class Explicit(Backend):
    def forward(self, q, k, batch):  # the older spelling of the same
        return Backend.forward(self, q, k, batch)

    def forward_extend(self, q, k, batch):
        dist.barrier()


class Sideways(Backend):
    def forward(self, q, k, batch):  # its own, but another method runs the base's
        return self.forward_extend(batch, q, k)

    def prefill(self, q, k, batch):
        return super().forward(q, k, batch)

    def forward_extend(self, batch, q, k):
        dist.all_to_all(q)


class Inherits(Hybrid):
    def forward_extend(self, batch, q, k):  # runs Hybrid.forward, never Backend.forward
        dist.all_gather(q)


def main():
    for backend in (Plain(), Hybrid(), Chained(), Explicit(), Sideways(), Inherits()):
        backend.forward(1, 2, 3)
"""


def test_a_subclass_that_overrides_the_running_method_is_not_its_self(program_of):
    program = program_of({"m.py": BACKENDS})
    found = callees(program, "m.Backend.forward", "call")
    assert "m.Hybrid.forward_extend" not in found
    assert "m.Inherits.forward_extend" not in found  # inherits Hybrid's forward, not Backend's


def test_a_subclass_that_hands_on_to_the_running_method_is_its_self(program_of):
    program = program_of({"m.py": BACKENDS})
    found = callees(program, "m.Backend.forward", "call")
    assert {"m.Plain.forward_extend", "m.Chained.forward_extend"} <= found
    assert "m.Explicit.forward_extend" in found  # `Backend.forward(self, ...)` hands on too
    assert "m.Sideways.forward_extend" in found  # its `prefill` runs `Backend.forward`


def test_the_override_itself_still_dispatches_on_its_own_self(program_of):
    program = program_of({"m.py": BACKENDS})
    assert callees(program, "m.Hybrid.forward", "call") == {
        "m.Hybrid.forward_extend",
        "m.Inherits.forward_extend",
    }


TABLED = """
class Base:
    def handle(self, x):
        return self.finish(x)

    def finish(self, x):
        return x


class Special(Base):
    def handle(self, x):
        return x

    def finish(self, x):
        return -x


HANDLERS = {"base": Base.handle}


def main(kind):
    obj = Special()
    return HANDLERS[kind](obj, 1)  # Base.handle, run on a Special
"""


def test_a_method_taken_from_its_class_as_a_value_may_run_on_any_subclass(program_of):
    program = program_of({"m.py": TABLED})
    assert "m.Special.finish" in callees(program, "m.Base.handle", "call")
