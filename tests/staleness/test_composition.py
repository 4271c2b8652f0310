"""Signs composed across function boundaries: returns, arguments, attributes, globals."""

from __future__ import annotations

from tests.staleness.conftest import short


def test_two_functions_return_summary(analyse) -> None:
    src = """
    import torch
    def free_bytes():
        return torch.cuda.mem_get_info()[0]
    def budget(base):
        return base - free_bytes()
    """
    assert short(analyse({"pkg/m.py": src})) == [
        ("torch.cuda.mem_get_info", "budget", 5, "subtracted", "narrows", "", "n/a")
    ]


def test_three_functions_signs_multiply(analyse) -> None:
    """`used = total - free` (free subtracted), then `room = cap - used` (free added)."""
    src = """
    import torch
    def free_bytes():
        return torch.cuda.mem_get_info()[0]
    def used_bytes(total):
        return total - free_bytes()
    def room(cap, total):
        return cap - used_bytes(total)
    """
    assert [(r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))] == [
        ("used_bytes", "subtracted"),
        ("room", "added"),
    ]


def test_across_modules_and_methods(analyse) -> None:
    files = {
        "pkg/probe.py": """
        import torch
        class Probe:
            def reserved(self):
                return torch.cuda.memory_reserved()
        """,
        "pkg/budget.py": """
        from pkg.probe import Probe
        class Budget:
            def __init__(self):
                self.probe = Probe()
            def want(self, target):
                return target - self.probe.reserved()
        """,
    }
    assert [(r[0], r[1], r[3]) for r in short(analyse(files))] == [
        ("torch.cuda.memory_reserved", "want", "subtracted")
    ]


def test_argument_flows_into_callee_parameter(analyse) -> None:
    src = """
    import torch
    def headroom(free, reserve):
        return free - reserve
    def plan(reserve):
        return headroom(torch.cuda.mem_get_info()[0], reserve)
    def shrink(x, reserve):
        return reserve - headroom(x, 0)
    """
    rows = [(r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("headroom", "added")]


def test_param_summary_substitutes_sign(analyse) -> None:
    """A callee that negates its argument: `budget - negate(free)` adds free."""
    src = """
    import torch
    def negate(x):
        return -x
    def budget(base):
        return base - negate(torch.cuda.mem_get_info()[0])
    """
    assert [(r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))] == [("budget", "added")]


def test_attribute_store_and_read_across_methods(analyse) -> None:
    src = """
    import torch
    class Pool:
        def refresh(self):
            self.reserved = torch.cuda.memory_reserved()
        def spare(self, cap):
            return cap - self.reserved
    """
    rows = [(r[1], r[3], r[5]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("spare", "subtracted", "")]


def test_attribute_through_mixin_and_annotated_self(analyse) -> None:
    files = {
        "pkg/mixin.py": """
        from __future__ import annotations
        import torch
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg.sched import Sched
        class MemMixin:
            def probe(self: "Sched"):
                self.free = torch.cuda.mem_get_info()[0]
        """,
        "pkg/sched.py": """
        from pkg.mixin import MemMixin
        class Sched(MemMixin):
            def room(self):
                return self.free + self.slack
        """,
    }
    assert [(r[1], r[3]) for r in short(analyse(files))] == [("room", "added")]


def test_unresolved_call_makes_unknown(analyse) -> None:
    src = """
    import torch
    import mystery
    def budget(base):
        return base + mystery.scale(torch.cuda.mem_get_info()[0])
    """
    assert [(r[1], r[3], r[6]) for r in short(analyse({"pkg/m.py": src}))] == [
        ("budget", "unknown", "n/a")
    ]


def test_recursion_terminates(analyse) -> None:
    src = """
    import torch
    def a(n):
        if n:
            return b(n - 1) + torch.cuda.memory_allocated()
        return 0
    def b(n):
        return 1 - a(n)
    """
    rows = [(r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("a", "added"), ("b", "subtracted")]


def test_configured_pool_size_term(analyse) -> None:
    files = {
        "pkg/cache.py": """
        class Radix:
            def available_size(self):
                return self.free + self.evictable
        """,
        "pkg/sched.py": """
        from pkg.cache import Radix
        class Sched:
            def __init__(self):
                self.cache = Radix()
            def admit(self, running):
                return self.cache.available_size() // 4 - running
        """,
    }
    report = analyse(files, driver_terms=["*.Radix.available_size"])
    assert short(report) == [("available_size", "admit", 6, "added", "widens", "", "n/a")]


def test_smaller_is_risky_flips_verdict(analyse) -> None:
    src = """
    import functools
    import torch
    reserved = functools.cache(torch.cuda.memory_reserved)
    def reclaim(target):
        return target - reserved()
    def budget(base):
        return base + reserved()
    """
    report = analyse({"pkg/m.py": src}, smaller_is_risky=["*.budget"])
    assert [(r[1], r[3], r[4], r[6]) for r in short(report)] == [
        ("reclaim", "subtracted", "narrows", "safe"),
        ("budget", "added", "widens", "safe"),
    ]
    report = analyse({"pkg/m.py": src}, smaller_is_risky=["*.reclaim"])
    assert [(r[1], r[6]) for r in short(report)] == [("reclaim", "unsafe"), ("budget", "unsafe")]
    assert [r.smaller_is_risky for r in report.rows] == [True, False]


def test_unknown_is_reported_where_it_arises_not_composed_further(analyse) -> None:
    src = """
    import torch
    def scaled(ratio):
        return abs(torch.cuda.mem_get_info()[0] - ratio) + 1
    def budget(base, ratio):
        return base - scaled(ratio)
    """
    assert [(r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))] == [("scaled", "unknown")]
