"""Programs whose second sync really waits (the review of bd9dbc4): each was reported before
the drained-queue change and not after it, or never (`flat_if_operator`). A sync under the same
test as an earlier one may wait wherever something between can change the test's value (a
`set.add`, `del`, a walrus, `with ... as`, `__enter__`, a `yield`, a generator the test
consumes, `__bool__`/`__eq__`/`__len__`, `print` calling `__str__`, `list(x)` calling
`__iter__`, an alias's `+=`, a program method by a tensor's name, a rebound root), so no such
drain is kept. A helper whose test computes an operator (`if node.value @ w is not None`) may
launch (`analysis.launches`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked

CASES = {
    "set_add": """
def plan(seen: set, key, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if key in seen else None  # expect
    seen.add(key)
    second = dev.tolist() if key in seen else None  # expect
    return first, second

def loop(seen, key, n):
    while True:
        plan(seen, key, n)
        dist.barrier()
""",
    "del_slice": """
def plan(rows: list, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if not rows else None  # expect
    del rows[:]
    second = dev.tolist() if not rows else None  # expect
    return first, second

def loop(rows, n):
    while True:
        plan(rows, n)
        dist.barrier()
""",
    "walrus": """
def plan(ready, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if ready else None  # expect
    flipped = (ready := not ready)
    second = dev.tolist() if ready else None  # expect
    return first, second, flipped

def loop(ready, n):
    while True:
        plan(ready, n)
        dist.barrier()
""",
    "with_as": """
def plan(ready, cm, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if ready else None  # expect
    with cm as ready:
        second = dev.tolist() if ready else None  # expect
    return first, second

def loop(ready, cm, n):
    while True:
        plan(ready, cm, n)
        dist.barrier()
""",
    "with_enter": """
class Box:
    def __init__(self):
        self.rows = []

    def __enter__(self):
        self.rows.append(1)
        return self

    def __exit__(self, *exc):
        return False

def plan(box: Box, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if box.rows else None  # expect
    with box:
        second = dev.tolist() if box.rows else None  # expect
    return first, second

def loop(box, n):
    while True:
        plan(box, n)
        dist.barrier()
""",
    "all_generator": """
def plan(flags, n):
    dev = torch.ones(n, device="cuda")
    it = (f for f in flags)
    first = dev.tolist() if all(it) else None  # expect
    second = dev.tolist() if all(it) else None  # expect
    return first, second

def loop(flags, n):
    while True:
        plan(flags, n)
        dist.barrier()
""",
    "bool_dunder": """
class Toggle:
    def __init__(self):
        self.on = False

    def __bool__(self):
        was = self.on
        self.on = not self.on
        return was

def plan(t: Toggle, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if t else None  # expect
    second = dev.tolist() if t else None  # expect
    return first, second

def loop(t, n):
    while True:
        plan(t, n)
        dist.barrier()
""",
    "eq_dunder": """
class Counter:
    def __init__(self):
        self.n = 0

    def __eq__(self, other):
        self.n += 1
        return self.n == other

def plan(c: Counter, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if c == 2 else None  # expect
    second = dev.tolist() if c == 2 else None  # expect
    return first, second

def loop(c, n):
    while True:
        plan(c, n)
        dist.barrier()
""",
    "len_dunder": """
class Queue:
    def __init__(self):
        self.items = [1]

    def __len__(self):
        self.items.append(1)
        return len(self.items)

def plan(q: Queue, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if len(q) > 2 else None  # expect
    second = dev.tolist() if len(q) > 2 else None  # expect
    return first, second

def loop(q, n):
    while True:
        plan(q, n)
        dist.barrier()
""",
    "alias_augassign": """
def plan(rows: list, n):
    alias = rows
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if rows else None  # expect
    alias += [1]
    second = dev.tolist() if rows else None  # expect
    return first, second

def loop(rows, n):
    while True:
        plan(rows, n)
        dist.barrier()
""",
    "unresolved_max": """
class Box:
    def __init__(self):
        self.rows = []

    def max(self):
        self.rows.append(1)
        return 0

def plan(box, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if box.rows else None  # expect
    box.max()
    second = dev.tolist() if box.rows else None  # expect
    return first, second

def loop(n):
    box = Box()
    while True:
        plan(box, n)
        dist.barrier()
""",
    "print_str": """
class Box:
    def __init__(self):
        self.rows = []

    def __str__(self):
        self.rows.append(1)
        return "box"

def plan(box: Box, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if box.rows else None  # expect
    print(box)
    second = dev.tolist() if box.rows else None  # expect
    return first, second

def loop(box, n):
    while True:
        plan(box, n)
        dist.barrier()
""",
    "list_iter": """
class Feed:
    def __init__(self):
        self.pending = [1, 2]

    def __iter__(self):
        while self.pending:
            yield self.pending.pop()

def plan(feed: Feed, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if not feed.pending else None  # expect
    got = list(feed)
    second = dev.tolist() if not feed.pending else None  # expect
    return first, second, got

def loop(feed, n):
    while True:
        plan(feed, n)
        dist.barrier()
""",
    "yield_consumer": """
def gen(rows: list, n):
    dev = torch.ones(n, device="cuda")
    first = dev.tolist() if not rows else None  # expect
    yield first
    second = dev.tolist() if not rows else None  # expect
    yield second

def loop(rows, n):
    while True:
        for v in gen(rows, n):
            rows.clear()
        dist.barrier()
""",
    "root_rebind": """
def plan(out, other, ready):
    a = out.lengths.tolist() if ready else None  # expect
    out = other
    b = out.statuses.tolist() if ready else None  # expect
    return a, b

def plan_plain(out, other):
    a = out.lengths.tolist()  # expect
    out = other
    b = out.statuses.tolist()
    return a, b

def loop(out, other, ready):
    while True:
        plan(out, other, ready)
        plan_plain(out, other)
        dist.barrier()
""",
    "recursive_if_operator": """
def walk(node, w):
    if node.value @ w is not None:
        pass
    for c in node.children:
        walk(c, w)

def check(root, w, n):
    free = torch.ones(n, device="cuda")
    a = free.tolist()  # expect
    walk(root, w)
    b = free.tolist()  # expect

def loop(root, w, n):
    while True:
        check(root, w, n)
        dist.barrier()
""",
    "flat_if_operator": """
def probe(node, w):
    if node.value @ w is not None:
        pass

def check(root, w, n):
    free = torch.ones(n, device="cuda")
    a = free.tolist()  # expect
    probe(root, w)
    b = free.tolist()  # expect

def loop(root, w, n):
    while True:
        check(root, w, n)
        dist.barrier()
""",
    "while_and_assert_operator": """
def seek(node, w):
    while node is not None and node.value @ w is not None:
        node = node.next

def probe(node, w):
    assert node.value + w is not None

def check(root, w, n):
    free = torch.ones(n, device="cuda")
    a = free.tolist()  # expect
    seek(root, w)
    b = free.tolist()  # expect
    probe(root, w)
    c = free.tolist()  # expect

def loop(root, w, n):
    while True:
        check(root, w, n)
        dist.barrier()
""",
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_second_sync_waits(tmp_path: Path, name: str):
    _assert_marked(tmp_path, CASES[name], {"rounds": ["mod.loop"]})
