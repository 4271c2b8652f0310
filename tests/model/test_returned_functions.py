"""Functions as values that calls return: `f()()` reaches what `f` returns, a project decorator
that returns an inner wrapper makes calls of the decorated name reach the wrapper, and the
wrapper's call of the decorator's parameter reaches the decorated functions."""

from __future__ import annotations

from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from tests.conftest import callees

CODE = """
import functools

import torch.distributed as dist


def return_func():
    def nested():
        pass

    return nested


def func():
    return return_func


def use():
    func()()
    func()()()


def dec(f):
    @functools.wraps(f)
    def inner(*args):
        return f(*args)

    return inner


@dec
def decorated():
    dist.barrier()


def caller():
    decorated()


def outer(f):
    def outer_inner():
        return f()

    return outer_inner


@outer
@dec
def stacked():
    pass


def tag(name):
    def decorator(fn):
        return fn

    return decorator


def timed(name):
    def decorator(fn):
        def timed_inner(*args):
            return fn(*args)

        return timed_inner

    return decorator


@tag("x")
def tagged():
    pass


@timed("t")
def measured():
    pass


def caller2():
    tagged()
    measured()


class S:
    def event_loop(self):
        while True:
            caller()
"""


def test_calls_of_returned_functions(program_of):
    program = program_of({"m.py": CODE})
    assert {"m.return_func", "m.return_func.<locals>.nested"} <= callees(program, "m.use", "call")


def test_decorated_name_calls_the_wrapper_which_calls_the_function(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.caller", "call") == {"m.dec.<locals>.inner"}
    assert "m.decorated" in callees(program, "m.dec.<locals>.inner", "call")
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [[h.function for h in c.chain] for c in rnd.collectives] == [
        ["m.S.event_loop", "m.caller", "m.dec.<locals>.inner", "m.decorated"]
    ]


def test_stacked_decorators_wrap_in_order(program_of):
    program = program_of({"m.py": CODE})
    # `@outer @dec def stacked` is outer(dec(stacked)): outer's wrapper calls dec's wrapper.
    assert callees(program, "m.outer.<locals>.outer_inner", "call") == {"m.dec.<locals>.inner"}
    assert "m.stacked" in callees(program, "m.dec.<locals>.inner", "call")


def test_decorator_factories_apply_what_they_return(program_of):
    program = program_of({"m.py": CODE})
    # `@tag("x")` returns the function itself; `@timed("t")` wraps it.
    assert callees(program, "m.caller2", "call") == {
        "m.tagged",
        "m.timed.<locals>.decorator.<locals>.timed_inner",
    }
    assert "m.measured" in callees(
        program, "m.timed.<locals>.decorator.<locals>.timed_inner", "call"
    )
