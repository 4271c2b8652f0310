"""Functions held in dict, list, tuple and set literals are reached through a subscript or by
iterating the container."""

from __future__ import annotations

from tests.conftest import callees

CODE = """
def on_a():
    pass


def on_b():
    pass


HANDLERS = {"a": on_a, "b": on_b}
STEPS = [on_a, on_b]


def dispatch(kind):
    HANDLERS[kind]()


def run_all():
    for step in STEPS:
        step()


def not_a_container():
    x = on_a
    x()
"""


def test_subscript_of_a_literal_reaches_its_functions(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.dispatch", "call") == {"m.on_a", "m.on_b"}


def test_iterating_a_literal_reaches_its_functions(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.run_all", "call") == {"m.on_a", "m.on_b"}
    assert callees(program, "m.not_a_container", "call") == {"m.on_a"}
