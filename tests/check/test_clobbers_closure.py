"""What each function may change beyond what it names (`Clobbers._closed`: the wild and the
reflected tables) is a fixed point over the call graph. It is computed once per run, over the
whole program, before the first call the blocking walk looks past; after one edit on sglang it
was most of a warm check (`benchmarks/README`, fourteenth session), because each step mapped a
callee's whole set into every caller again and read the caller's aliases again. Only what a
callee gained since it was last taken in is mapped now, and each function's aliases are read
once: the tables must stay the fixed point that remapping everything until nothing changes
gives (a reference written here), on a program with recursion, mutual recursion, `*args`,
receivers, aliases through locals and loops, and both kinds of table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rankguard.analysis import call_writes
from rankguard.analysis.call_writes import mapped, own
from rankguard.analysis.clobbers import Clobbers, local_references
from rankguard.analysis.stability import Stability
from rankguard.model import Program
from rankguard.summary.ir import Segs

CODE = """
import foreign


def leaf(batch, name, *rest):
    foreign.touch(batch.inner)
    setattr(batch, name, 1)


def star(*args):
    foreign.touch(args)


def vault(obj):
    obj.__dict__["k"] = 1
    vars(obj)["j"] = 2


class Box:
    def fill(self, x, key):
        foreign.touch(self.items)
        leaf(x, key)
        self.other(x)

    def other(self, y):
        vault(y.slot)


def mid(batch, other, key):
    inner = batch.part
    leaf(inner, key)
    star(other, batch.extra)
    Box().fill(batch.box, key)


def ping(a, n):
    if n:
        pong(a.left, n - 1)


def pong(b, n):
    foreign.touch(b.deep.er.still)
    ping(b, n)
    ping(b.right, n)


def again(c, key):
    leaf(c, key)
    again(c.next, key)


def top(batch, o, key):
    mid(batch, o, key)
    ping(batch, 3)
    again(batch.chain, key)
    for req in batch.reqs:
        leaf(req, key)
        vault(req.meta)
"""


def reference(program: Program, wild: bool) -> dict[str, frozenset[Segs]]:
    """Every function's own references, then every callee's whole set mapped into every
    caller, over and over, until nothing changes."""
    functions = program.functions
    table: dict[str, set[Segs]] = {}
    edges: list[tuple[str, str, Any]] = []
    for name, record in functions.items():
        found, callees = local_references(program, name, wild)
        edges += [(name, callee, call) for callee, call in callees]
        table[name] = set(own(record, found))
    changed = True
    while changed:
        changed = False
        for caller, callee, call in edges:
            found = own(functions[caller], mapped(functions[callee], call, table[callee]))
            if not found <= table[caller]:
                table[caller] |= found
                changed = True
    return {n: frozenset(w) for n, w in table.items() if w}


@pytest.fixture
def program(program_of: Callable[..., Program]) -> Program:
    return program_of({"mod.py": CODE})


def test_the_tables_are_the_whole_remapping_fixed_point(program: Program):
    clobbers = Clobbers(program, Stability(program))
    wild = clobbers._wild_table()
    reflected_table = clobbers._reflected_table()
    assert wild == reference(program, wild=True)
    assert reflected_table == reference(program, wild=False)
    # Not vacuous: what `leaf`, `pong` and `vault` change reaches `top` through calls, an
    # alias, a loop variable, recursion, mutual recursion and a method's receiver.
    assert {
        ("batch", "part", "inner"),
        ("batch", "left", "deep"),
        ("batch", "reqs", "meta"),
        ("batch", "chain", "next"),
        ("batch", "box", "slot"),
        ("o",),
    } <= wild["mod.top"]
    assert {("batch", "reqs"), ("batch", "chain", "next")} <= reflected_table["mod.top"]


def test_each_function_is_read_once_per_table(program: Program, monkeypatch: pytest.MonkeyPatch):
    """Counted, not timed: the aliases of a function are read once per table, not at every
    step that maps a callee into it."""
    read: list[str] = []
    aliases = call_writes._aliases

    def counting(record: Any) -> Any:
        read.append(record.qualname)
        return aliases(record)

    monkeypatch.setattr(call_writes, "_aliases", counting)
    clobbers = Clobbers(program, Stability(program))
    clobbers._wild_table()
    clobbers._reflected_table()
    assert sorted(read) == sorted([*program.functions, *program.functions])
