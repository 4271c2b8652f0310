"""Each caching form, and the rule that a kept composite is composed as a whole."""

from __future__ import annotations

import pytest

from tests.staleness.conftest import short

DECORATED = """
import functools
import torch
{decorator}
def reserved():
    return torch.cuda.memory_reserved()
def room(cap):
    return cap + reserved()
"""


@pytest.mark.parametrize(
    ("decorator", "kind"),
    [
        ("@functools.lru_cache(maxsize=4)", "lru_cache"),
        ("@functools.lru_cache", "lru_cache"),
        ("@functools.cache", "cache"),
    ],
)
def test_functools_decorators(analyse, decorator: str, kind: str) -> None:
    report = analyse({"pkg/m.py": DECORATED.format(decorator=decorator)})
    assert [(r[1], r[3], r[5], r[6]) for r in short(report)] == [("room", "added", kind, "unsafe")]
    assert report.unsafe_cached == report.rows


def test_lru_cache_arguments_are_not_stale(analyse) -> None:
    """A value passed in is part of the cache key: it is recomputed when it changes."""
    src = """
    import functools
    import torch
    @functools.lru_cache
    def scaled(x):
        return x * 2
    def room(cap):
        return cap + scaled(torch.cuda.mem_get_info()[0])
    """
    assert [(r[1], r[5]) for r in short(analyse({"pkg/m.py": src}))] == [("room", "")]


def test_cached_property(analyse) -> None:
    src = """
    from functools import cached_property
    import torch
    class Pool:
        @cached_property
        def free(self):
            return torch.cuda.mem_get_info()[0]
        def room(self, used):
            return self.free - used
    """
    assert [(r[1], r[3], r[5]) for r in short(analyse({"pkg/m.py": src}))] == [
        ("room", "added", "cached_property")
    ]


def test_time_guarded_refresh(analyse) -> None:
    src = """
    import time
    import torch
    class Pool:
        def free(self):
            now = time.monotonic()
            if now - self._free_at >= 5.0:
                self._free = torch.cuda.mem_get_info()[0]
                self._free_at = now
            return self._free
        def room(self, used):
            return self.free() - used
    """
    report = analyse({"pkg/m.py": src})
    assert [(r[1], r[3], r[5], r[6]) for r in short(report)] == [
        ("room", "added", "time-cadence", "unsafe")
    ]
    cache = report.rows[0].cache
    assert cache is not None and cache.where == "pkg.m.Pool._free"
    assert cache.detail == "now - self._free_at >= 5.0"


def test_time_guard_early_return(analyse) -> None:
    src = """
    import time
    import torch
    class Pool:
        def reserved(self):
            if time.time() - self._at < 30:
                return self._reserved
            self._reserved = torch.cuda.memory_reserved()
            self._at = time.time()
            return self._reserved
        def want(self, target):
            return target - self.reserved()
    """
    assert [(r[1], r[3], r[5], r[6]) for r in short(analyse({"pkg/m.py": src}))] == [
        ("want", "subtracted", "time-cadence", "safe")
    ]


def test_refresh_every_round_is_not_cached(analyse) -> None:
    src = """
    import torch
    class Pool:
        def free(self):
            if self.enabled:
                self._free = torch.cuda.mem_get_info()[0]
            return self._free
        def room(self, used):
            return self.free() - used
    """
    assert [r[5] for r in short(analyse({"pkg/m.py": src}))] == [""]


def test_attribute_memo(analyse) -> None:
    src = """
    import torch
    class Pool:
        def reserved(self):
            if self._reserved is None:
                self._reserved = torch.cuda.memory_reserved()
            return self._reserved
        def room(self, cap):
            return cap + self.reserved()
    """
    assert [(r[3], r[5]) for r in short(analyse({"pkg/m.py": src}))] == [("added", "memo")]


def test_module_memo_global(analyse) -> None:
    src = """
    import torch
    _FREE = None
    def free():
        global _FREE
        if _FREE is None:
            _FREE = torch.cuda.mem_get_info()[0]
        return _FREE
    def room(used):
        return free() - used
    """
    report = analyse({"pkg/m.py": src})
    assert [(r[1], r[3], r[5]) for r in short(report)] == [("room", "added", "memo")]
    assert report.rows[0].cache.where == "pkg.m._FREE"


def test_module_memo_dict(analyse) -> None:
    src = """
    import torch
    _CACHE = {}
    def reserved(dev):
        if dev not in _CACHE:
            _CACHE[dev] = torch.cuda.memory_reserved(dev)
        return _CACHE[dev]
    def room(cap, dev):
        return cap + reserved(dev)
    """
    assert [(r[1], r[3], r[5]) for r in short(analyse({"pkg/m.py": src}))] == [
        ("room", "added", "memo")
    ]


def test_configured_cadence_helper(analyse) -> None:
    src = """
    import torch
    from pkg.window import min_over_window
    def room(used):
        free = min_over_window("free", torch.cuda.mem_get_info()[0])
        return free - used
    """
    window = """
    def min_over_window(key, value):
        return value
    """
    files = {"pkg/m.py": src, "pkg/window.py": window}
    assert [(r[3], r[5]) for r in short(analyse(files))] == [("added", "")]
    report = analyse(files, cadence_helpers=["*.min_over_window"])
    assert [(r[3], r[5], r[6]) for r in short(report)] == [("added", "cadence-helper", "unsafe")]


BUDGET = """
import functools
import time
import torch

def reserved():
    return torch.cuda.memory_stats()["reserved_bytes.all.current"]

class Budget:
    def trapped(self):
{trapped}
    {takeable_decorator}
    def takeable(self):
        cache = reserved()
        trapped = self.trapped()
        return cache - trapped

    def spendable(self):
        free = torch.cuda.mem_get_info()[0]
        return free + self.takeable() - self.granted

    def want(self):
        return self.target - reserved()
"""
FRESH_TRAPPED = """
        return sum(b["size"] for s in torch.cuda.memory_snapshot() for b in s["blocks"])
"""
CACHED_TRAPPED = """
        now = time.monotonic()
        if now - self._trapped_at >= 30:
            self._trapped = sum(
                b["size"] for s in torch.cuda.memory_snapshot() for b in s["blocks"]
            )
            self._trapped_at = now
        return self._trapped
"""


def _table(report) -> list[tuple[str, str, str, bool, str]]:
    return [
        (r.term.rsplit(".", 1)[-1], r.function.rsplit(".", 1)[-1], r.operation, r.cached, r.verdict)
        for r in report.rows
    ]


def test_design_table_uncached(analyse) -> None:
    """DESIGN.md §1's four rows, nothing cached: directions only, the verdict is `n/a`."""
    src = BUDGET.format(trapped=FRESH_TRAPPED.strip("\n"), takeable_decorator="")
    assert _table(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "spendable", "added", False, "n/a"),
        ("memory_snapshot", "takeable", "subtracted", False, "n/a"),
        ("memory_snapshot", "spendable", "subtracted", False, "n/a"),
        ("memory_stats", "takeable", "added", False, "n/a"),
        ("memory_stats", "spendable", "added", False, "n/a"),
        ("memory_stats", "want", "subtracted", False, "n/a"),
    ]


def test_design_table_only_trapped_cached(analyse) -> None:
    """Caching `trapped` alone is safe: it is subtracted all the way to the budget."""
    src = BUDGET.format(trapped=CACHED_TRAPPED.strip("\n"), takeable_decorator="")
    report = analyse({"pkg/m.py": src})
    assert _table(report) == [
        ("mem_get_info", "spendable", "added", False, "n/a"),
        ("memory_snapshot", "takeable", "subtracted", True, "safe"),
        ("memory_snapshot", "spendable", "subtracted", True, "safe"),
        ("memory_stats", "takeable", "added", False, "n/a"),
        ("memory_stats", "spendable", "added", False, "n/a"),
        ("memory_stats", "want", "subtracted", False, "n/a"),
    ]
    assert report.unsafe_cached == []


def test_design_table_whole_takeable_cached(analyse) -> None:
    """The incident's mistake: caching `cache - trapped` "because trapped is subtracted".
    The kept value is added at `spendable`: added / unsafe, as one composite term."""
    src = BUDGET.format(
        trapped=FRESH_TRAPPED.strip("\n"), takeable_decorator="@functools.lru_cache"
    )
    report = analyse({"pkg/m.py": src})
    assert _table(report) == [
        ("takeable", "spendable", "added", True, "unsafe"),
        ("mem_get_info", "spendable", "added", False, "n/a"),
        ("memory_snapshot", "takeable", "subtracted", False, "n/a"),
        ("memory_stats", "takeable", "added", False, "n/a"),
        ("memory_stats", "want", "subtracted", False, "n/a"),
    ]
    (unsafe,) = report.unsafe_cached
    assert unsafe.term == "pkg.m.Budget.takeable"
    assert unsafe.composite is not None and unsafe.composite.expression == "cache - trapped"
    assert unsafe.to_json()["contains"] == [
        {"term": "torch.cuda.memory_snapshot", "sign": "subtracted"},
        {"term": "torch.cuda.memory_stats", "sign": "added"},
    ]
