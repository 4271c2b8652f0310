"""A callable slot: an attribute assigned from a parameter (`self.runnable = runnable`) whose
annotation names no project class (`Callable`, or none) holds what the program passes for that
parameter at the sites that call the method (`Wrapper(Model())`, `Wrapper(runnable=m)`,
`super().__init__(fn)` handing on its own parameter). Calling the attribute runs it: a function,
an instance's `__call__`, an `nn.Module`'s `forward`. The edges are `fallback` (a union over
every site, context-insensitive). A slot no site binds stays unresolved, and is listed so.

Failed first (the patch steps of HELPERS.md, rankguard/ at main c0ef7c7): the round's `.item()`
was not reported at all (the wrapper's `self.runnable(*args)` reached no project function, so
no collective followed it in the round), and the graph had no edge from the wrappers' calls.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files, marked_lines
from tests.conftest import callees

RULE = [BlockingBeforeCollective]

LAYERS = """
from typing import Callable
from torch import nn


class Linear(nn.Module):
    def forward(self, x):
        dist.all_reduce(x)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Linear()

    def forward(self, x):
        return self.layer(x)


def reduce_step(x):
    dist.all_reduce(x)


def gather_step(x, dim):
    dist.all_gather([x], x)


class Wrapper:
    def __init__(self, runnable: Callable, mode: int = 0):
        self.runnable = runnable
        self.mode = mode

    def __call__(self, *args):
        return self.runnable(*args)


class Plain:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Derived(Plain):
    def __init__(self, fn, extra=None):
        super().__init__(fn)
"""

ROUNDS = """

class Runner:
    def __init__(self):
        self.model = Wrapper(Model(), mode=1)

    def step(self, x):
        while True:
            n = torch.ones(1, device="cuda").item()  # expect
            self.model(x)


class KeywordRunner:
    def __init__(self):
        model = Model()
        self.model = Wrapper(runnable=model)

    def step(self, x):
        while True:
            torch.cuda.synchronize()  # expect
            self.model(x)


class FunctionRunner:
    def __init__(self):
        self.plain = Derived(reduce_step)

    def step(self, x):
        while True:
            torch.cuda.synchronize()  # expect
            self.plain.run(x)


class PartialRunner:
    def __init__(self):
        self.bound = Plain(functools.partial(gather_step, dim=0))

    def step(self, x):
        while True:
            torch.cuda.synchronize()  # expect
            self.bound.run(x)
"""


def _run(tmp_path: Path, body: str, rounds: list[str]):
    code = HEAD + textwrap.dedent(body)
    result = check_files(tmp_path, {"mod.py": code}, RULE, {"rounds": rounds})
    return code, result


def test_a_model_held_in_a_callable_slot_reaches_its_forward(tmp_path: Path):
    code, result = _run(tmp_path, LAYERS + ROUNDS, ["*.Runner.step", "*.KeywordRunner.step"])
    found = result.findings
    assert sorted({f.line for f in found}) == [
        n for n in marked_lines(code) if n < code.splitlines().index("class FunctionRunner:")
    ], "\n".join(f"{f.line}: {f.message}" for f in found)
    lines = code.splitlines()
    reduce_line = lines.index("        dist.all_reduce(x)") + 1  # Linear.forward's
    for finding in found:
        collective = finding.extra["collective"]
        assert collective["callee"] == "torch.distributed.all_reduce"
        assert collective["line"] == reduce_line
        hops = [h["function"] for h in collective["chain"]]
        assert hops[1:] == [
            "mod.Wrapper.__call__",
            "mod.Model.forward",
            "mod.Linear.forward",
        ], hops
        wrapper_hop = collective["chain"][1]
        assert wrapper_hop.get("edge") == "fallback"


def test_a_function_handed_on_through_super_init(tmp_path: Path):
    code, result = _run(tmp_path, LAYERS + ROUNDS, ["*.FunctionRunner.step"])
    found = result.findings
    assert [f.line for f in found] == marked_lines(code)[-2:-1]
    (finding,) = found
    # `self.plain` holds a `Derived`; the slot `fn` also holds the partial of `self.bound`'s
    # `Plain`: a union over the sites, context-insensitive.
    chains = {tuple(h["function"] for h in c["chain"]) for c in finding.extra["collectives"]}
    assert ("mod.FunctionRunner.step", "mod.Plain.run", "mod.reduce_step") in chains, chains


def test_a_function_bound_by_functools_partial(tmp_path: Path):
    code, result = _run(tmp_path, LAYERS + ROUNDS, ["*.PartialRunner.step"])
    (finding,) = result.findings
    assert finding.line == marked_lines(code)[-1]
    chains = {tuple(h["function"] for h in c["chain"]) for c in finding.extra["collectives"]}
    assert ("mod.PartialRunner.step", "mod.Plain.run", "mod.gather_step") in chains, chains


UNBOUND = """
from typing import Callable


class Slot:
    def __init__(self, hook: Callable | None = None, name: str = ""):
        self.hook = hook
        self.name = name

    def fire(self, x):
        return self.hook(x)


class Bare:
    def __init__(self, fn):
        self.fn = fn

    def go(self):
        return self.fn()


def make(args):
    Slot(name="a")
    Bare(*args)
"""


def test_a_slot_no_site_binds_stays_unresolved(program_of):
    program = program_of({"mod.py": UNBOUND})
    assert callees(program, "mod.Slot.fire") <= {"typing.Callable()"}
    assert not callees(program, "mod.Bare.go")
    unresolved = {(caller, text) for caller, text, _, _ in program.unresolved}
    assert ("mod.Bare.go", "self.fn") in unresolved


def test_slot_edges_in_the_graph(program_of):
    program = program_of({"mod.py": HEAD + textwrap.dedent(LAYERS + ROUNDS)})
    assert "mod.Model.forward" in callees(program, "mod.Wrapper.__call__", "fallback")
    assert {"mod.reduce_step", "mod.gather_step"} <= callees(program, "mod.Plain.run", "fallback")


REBOUND = """

class Inner(nn.Module):
    def forward(self, x):
        return x * 2


class Wrapped(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        torch.ones(1, device="cuda").item()
        return self.module(x)


class Engine:
    def __init__(self, model):
        model = model.module  # unwrapped: `self.model` holds the `Inner`, not the `Wrapped`
        self.model = model

    def event_loop(self):
        while True:
            y = self.model(torch.ones(1))
            dist.all_reduce(y)


def serve():
    Engine(Wrapped(Inner())).event_loop()


def reduce_step(x):
    dist.all_reduce(x)


class Augmented:
    def __init__(self, fn):
        fn += ()
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class ForTarget:
    def __init__(self, fn, fns=()):
        for fn in fns:
            pass
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class WithTarget:
    def __init__(self, fn):
        with fn as fn:
            pass
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Walrus:
    def __init__(self, fn):
        if (fn := fn.func) is None:
            return
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Deleted:
    def __init__(self, fn, drop=False):
        if drop:
            del fn  # what the name holds past here is not followed
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Caught:
    def __init__(self, fn):
        try:
            fn.check()
        except ValueError as fn:
            pass
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Kept:
    def __init__(self, fn, fns=()):
        names = [fn for fn in fns]  # the comprehension's own `fn`
        self.fn = fn
        self.names = names

    def run(self, x):
        return self.fn(x)


class Holder:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


def hands_on_a_rebound_parameter(fn):
    fn = fn.func
    Holder(fn)


def build():
    Augmented(reduce_step)
    ForTarget(reduce_step)
    WithTarget(reduce_step)
    Walrus(reduce_step)
    Deleted(reduce_step)
    Caught(reduce_step)
    Kept(reduce_step)
    hands_on_a_rebound_parameter(reduce_step)
"""


def test_a_parameter_rebound_before_the_store_is_no_slot(tmp_path: Path):
    """`model = model.module; self.model = model` stores what the method made of its
    parameter, not what its callers pass: the `Wrapped` the engine is given is not what
    `self.model(...)` runs, so its `forward`'s `.item()` is not in the round. Any binding of
    the name (assignment, augmented, for / with / except target, walrus, del) counts, as does
    a caller handing on its own parameter after rebinding it.

    Failed first: the finding at `Wrapped.forward`'s `.item()` (high confidence, reached by a
    `fallback` edge from `Engine.event_loop`), and slot edges to `reduce_step` from every
    rebinding class's `run`."""
    _, result = _run(tmp_path, LAYERS + REBOUND, ["*.Engine.event_loop"])
    assert not result.findings, "\n".join(f"{f.line}: {f.message}" for f in result.findings)


def test_rebound_parameters_make_no_slot_edges(program_of):
    program = program_of({"mod.py": HEAD + textwrap.dedent(LAYERS + REBOUND)})
    assert "mod.Wrapped.forward" not in callees(program, "mod.Engine.event_loop")
    for cls in ("Augmented", "ForTarget", "WithTarget", "Walrus", "Deleted", "Caught", "Holder"):
        assert "mod.reduce_step" not in callees(program, f"mod.{cls}.run"), cls
    # The comprehension binds its own `fn`: the method's is still the parameter.
    assert "mod.reduce_step" in callees(program, "mod.Kept.run", "fallback")


HANDED_AROUND = """
def reduce_step(x):
    dist.all_reduce(x)


def gather_step(x):
    dist.all_gather([x], x)


class First:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


class Second:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


def ping(fn, n):
    First(fn)
    if n:
        pong(fn, n - 1)


def pong(fn, n):
    Second(fn)
    if n:
        ping(fn, n - 1)


def start():
    ping(reduce_step, 3)
    pong(gather_step, 3)
"""


def test_a_cycle_of_hand_ons_reaches_every_value_whatever_is_asked_first(program_of):
    """`ping` and `pong` hand their `fn` to each other: each holds what either is passed, so
    both slots run both functions. Failed first: the slot asked second missed the function
    its half of the cycle was not passed directly (a result cached while the other half's
    placeholder stood in for it)."""
    program = program_of({"mod.py": HEAD + textwrap.dedent(HANDED_AROUND)})
    for cls in ("First", "Second"):
        assert {"mod.reduce_step", "mod.gather_step"} <= callees(
            program, f"mod.{cls}.run", "fallback"
        ), cls
