"""Each operator of the sign algebra, on one term in one function."""

from __future__ import annotations

import pytest

from tests.staleness.conftest import short

FREE = "torch.cuda.mem_get_info"


def _one(analyse, expr: str, extra: str = "") -> list:
    src = f"""
    import torch
    K = 1 << 20
    {extra}
    def budget(base, other):
        free = torch.cuda.mem_get_info()[0]
        return {expr}
    """
    return [(r[0], r[3], r[4], r[6]) for r in short(analyse({"pkg/m.py": src}))]


@pytest.mark.parametrize(
    ("expr", "operation"),
    [
        ("base + free", "added"),
        ("free + base", "added"),
        ("base - free", "subtracted"),
        ("free - base", "added"),
        ("base - -free", "added"),
        ("-free + base", "subtracted"),
        ("base - (other - free)", "added"),
        ("base - min(free, other)", "subtracted"),
        ("base + max(free, 0)", "added"),
        ("base - int(free)", "subtracted"),
        ("base + float(free)", "added"),
        ("base + round(free)", "added"),
        ("base + free // other.size", "added"),
        ("base - free // 2", "subtracted"),
        ("base + free // -2", "subtracted"),
        ("base + free * 0.9", "added"),
        ("base + 2 * free", "added"),
        ("base + free * K", "added"),
        ("base + free * -1", "subtracted"),
        ("base + free / 1024", "added"),
        ("base - free / K", "subtracted"),
        # A factor that is not a constant is a size, a fraction or a count: positive.
        ("base + free * other", "added"),
        ("base + free / other", "added"),
        ("base + abs(free)", "unknown"),
        ("base + free * free", "unknown"),
        # One reading minus a part of it keeps the minuend's sign (`x - x % align`).
        ("base + free - free % other", "added"),
        ("base + (free if other else 0)", "added"),
        ("base + (free or 0)", "added"),
    ],
)
def test_operator(analyse, expr: str, operation: str) -> None:
    stale = {"added": "widens", "subtracted": "narrows"}.get(operation, "unknown")
    verdict = "n/a"  # the verdict is about cached terms
    assert _one(analyse, expr) == [(FREE, operation, stale, verdict)]


@pytest.mark.parametrize(
    "expr",
    [
        "free",
        "min(free, other)",
        "free // 2",
        "len(str(free)) + base",
        "base + free % 7",
    ],
)
def test_no_additive_consumer_no_row(analyse, expr: str) -> None:
    """Returns, `min`, `//`, text and remainders make no consumer."""
    assert _one(analyse, expr) == []


def test_returned_comparison_is_an_admission_test(analyse) -> None:
    """A predicate (`return free > base`): true lets work through; larger free admits more."""
    assert _one(analyse, "free > base") == [(FREE, "compared", "widens", "n/a")]


def test_total_element_is_not_a_term(analyse) -> None:
    src = """
    import torch
    def used(base):
        free, total = torch.cuda.mem_get_info()
        return total - free + base - torch.cuda.mem_get_info()[1]
    """
    assert [(r[0], r[3]) for r in short(analyse({"pkg/m.py": src}))] == [(FREE, "subtracted")]


def test_aliases_and_other_devices_resolve(analyse) -> None:
    src = """
    from torch.cuda import memory_reserved as reserved
    import torch
    def budget(base):
        return base - reserved() + torch.npu.mem_get_info()[0]
    """
    rows = [(r[0], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [
        ("torch.cuda.memory_reserved", "subtracted"),
        ("torch.npu.mem_get_info", "added"),
    ]


def test_nvml_fields(analyse) -> None:
    src = """
    import pynvml
    def budget(handle, base):
        info = pynvml.nvmlDeviceGetMemoryInfo(handle)
        return base + info.free - info.total
    """
    rows = [(r[0], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("pynvml.nvmlDeviceGetMemoryInfo.free", "added")]


def test_augmented_assignment_is_a_consumer(analyse) -> None:
    src = """
    import torch
    class Pool:
        def shrink(self):
            self.budget -= torch.cuda.memory_allocated()
    """
    rows = [(r[0], r[1], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("torch.cuda.memory_allocated", "shrink", "subtracted")]


def test_aggregate_of_snapshot_sizes_is_positive(analyse) -> None:
    src = """
    import torch
    def trapped(base):
        t = sum(b["size"] for s in torch.cuda.memory_snapshot() for b in s["blocks"])
        return base - t
    """
    rows = [(r[0], r[3]) for r in short(analyse({"pkg/m.py": src}))]
    assert rows == [("torch.cuda.memory_snapshot", "subtracted")]
