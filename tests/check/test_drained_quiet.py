"""Helpers that launch no device work keep a drained queue drained (`analysis.launches`): a sync
after them with nothing else between finds the queue empty. Work they may launch keeps it a
finding."""

from __future__ import annotations

from pathlib import Path

from rankguard.analysis.launches import Launches
from tests.check.test_blocking import _assert_marked


def test_a_recursive_walk_that_only_collects_launches_nothing(tmp_path: Path):
    # `values` walks a tree with a nested recursive helper that appends to a host list, and
    # `even`/`odd` call each other counting on the host: nothing they run launches, so the
    # sync after them finds the queue empty. `scale` recurses too but multiplies what it
    # visits (maybe a tensor): the sync after it waits.
    _assert_marked(
        tmp_path,
        """
        class Node:
            def __init__(self):
                self.children = {}
                self.value = None

        class Tree:
            def __init__(self):
                self.root = Node()

            def values(self):
                out = []

                def visit(node):
                    for child in node.children.values():
                        if child.value is not None:
                            out.append(child.value)
                        visit(child)

                visit(self.root)
                return out

            def scale(self, k):
                def visit(node):
                    if node.value is not None:
                        node.value = node.value * k
                    for child in node.children.values():
                        visit(child)

                visit(self.root)

        def even(rows):
            if not rows:
                return True
            rows.pop()
            return odd(rows)

        def odd(rows):
            if not rows:
                return False
            rows.pop()
            return even(rows)

        def check(tree, n, rows):
            free = torch.ones(n, device="cuda")
            a = free.tolist()  # expect
            vals = tree.values()
            even(rows)
            b = free.tolist()
            tree.scale(2)
            c = free.tolist()  # expect

        def loop(tree, n, rows):
            while True:
                check(tree, n, rows)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


CYCLE = """
def a(rows, n):
    rows.append(n)
    return b(rows, n)

def b(rows, n):
    if n:
        return a(rows, n)
    return c(rows)

def c(rows):
    return rows.pop()

def d(x, n):
    return e(x, n)

def e(x, n):
    if n:
        return d(x, n)
    return x * 2

def use(rows, x, n):
    a(rows, n)
    b(rows, n)
    d(x, n)
    e(x, n)
"""


def test_a_cycle_of_calls_is_answered_the_same_whichever_member_is_asked_first(program_of):
    program = program_of({"m.py": CYCLE})
    calls = {r.call.target[0]: r for r in program.calls["m.use"]}
    for order in (("a", "b", "d", "e"), ("b", "a", "e", "d")):
        launches = Launches(program)
        answers = {n: launches.quiet_call(calls[n].call, calls[n].targets) for n in order}
        assert answers == {"a": True, "b": True, "d": False, "e": False}, order
