"""Applying a decorator is a call made where the function is defined: `@dec def f` runs
`dec(f)` in the enclosing scope (stacked decorators innermost first, a factory's result
`@factory(arg)` too), so the decorator's body is reached from there."""

from __future__ import annotations

from tests.conftest import callees

CODE = """
def dec1(f):
    def inner():
        return f()
    return inner


def dec2(f):
    def inner():
        return f()
    return inner


def factory(n):
    def apply(f):
        return f
    return apply


@dec1
@dec2
def func():
    pass


def outer():
    @factory(3)
    def local():
        pass


class K:
    @property
    def size(self):
        return 1

    @size.setter
    def size(self, value):
        pass
"""


def test_decorators_are_called_where_the_function_is_defined(program_of):
    program = program_of({"m.py": CODE})
    assert {"m.dec1", "m.dec2"} <= callees(program, "m", "call")
    assert callees(program, "m.outer", "call") == {"m.factory", "m.factory.<locals>.apply"}


def test_a_decorator_named_in_the_class_body_is_not_looked_up_outside_it(program_of):
    program = program_of({"m.py": CODE})
    assert not [u for u in program.unresolved if u[1] == "size.setter"]
