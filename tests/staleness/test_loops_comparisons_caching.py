"""Issue #16's examples: loop accumulators, comparisons, per-term stale error, caching forms,
budget-only consumers, and DESIGN §1's four-row table with every term cached."""

from __future__ import annotations

from tests.staleness.conftest import short


def _rows(report) -> list[tuple[str, str, str, str, str, str]]:
    """(term's last name, consumer's last name, operation, stale_larger, cache kind, verdict)."""
    return [(r[0].rsplit(".", 1)[-1], r[1], r[3], r[4], r[5], r[6]) for r in short(report)]


def test_loop_accumulator_over_a_snapshot_is_one_subtracted_term(analyse) -> None:
    src = """
    import torch
    class Pool:
        def _allocator_cache_bytes(self):
            return torch.cuda.memory_reserved()
        def _trapped_bytes(self):
            trapped = 0
            for segment in torch.cuda.memory_snapshot():
                if segment["segment_type"] == "large":
                    trapped += segment["total_size"] - segment["allocated_size"]
            return trapped
        def _takeable_cache_bytes(self):
            return self._allocator_cache_bytes() - self._trapped_bytes()
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("memory_reserved", "_takeable_cache_bytes", "added", "widens", "", "n/a"),
        ("memory_snapshot", "_trapped_bytes", "added", "widens", "", "n/a"),
        ("memory_snapshot", "_takeable_cache_bytes", "subtracted", "narrows", "", "n/a"),
    ]


def test_minus_accumulator_and_sum_of_fields(analyse) -> None:
    src = """
    import torch
    def room(cap):
        left = cap
        for seg in torch.cuda.memory_snapshot():
            left -= seg["allocated_size"]
        return left
    def idle():
        return sum(s["total_size"] - s["allocated_size"] for s in torch.cuda.memory_snapshot())
    def budget(cap):
        return cap + idle()
    """
    got = _rows(analyse({"pkg/m.py": src}))
    assert ("memory_snapshot", "room", "subtracted", "narrows", "", "n/a") in got
    assert ("memory_snapshot", "budget", "added", "widens", "", "n/a") in got
    assert all(r[2] != "unknown" for r in got)


def test_non_constant_positive_factor_keeps_the_sign_into_a_comparison(analyse) -> None:
    src = """
    import torch
    class Pool:
        def budget(self):
            free_mem = torch.cuda.mem_get_info()[0]
            return min(int(free_mem * self.fraction), self.cap)
        def admit(self, need):
            if need <= self.budget():
                return True
            return False
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "admit", "compared", "widens", "", "n/a"),
    ]


def test_rejecting_guard_comparison(analyse) -> None:
    src = """
    import torch
    def grow(pool, estimate):
        free_bytes = torch.cuda.mem_get_info()[0]
        if estimate >= free_bytes:
            return None
        pool.extend(estimate)
    def shrink(pool, cap):
        used = torch.cuda.memory_allocated()
        if used > cap:
            raise MemoryError("over")
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "grow", "compared", "widens", "", "n/a"),
        ("memory_allocated", "shrink", "compared", "narrows", "", "n/a"),
    ]


def test_stale_allocated_errs_small_so_subtracting_it_widens(analyse) -> None:
    src = """
    import functools
    import torch
    @functools.lru_cache
    def used():
        return torch.cuda.memory_allocated()
    def room(cap):
        return cap - used()
    """
    report = analyse({"pkg/m.py": src})
    assert _rows(report) == [
        ("memory_allocated", "room", "subtracted", "narrows", "lru_cache", "unsafe")
    ]
    assert report.rows[0].to_json()["stale_error"] == "small"


def test_cachetools_cached_decorator(analyse) -> None:
    src = """
    from cachetools import TTLCache, cached
    import torch
    @cached(TTLCache(maxsize=1, ttl=5))
    def free():
        return torch.cuda.mem_get_info()[0]
    def room(used):
        return free() - used
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "room", "added", "widens", "cached", "unsafe")
    ]


def test_class_level_dict_memo(analyse) -> None:
    src = """
    import torch
    class Sizer:
        _memo = {}
        def budget(self, key, fraction, cap):
            hit = Sizer._memo.get(key)
            if hit is not None:
                return hit
            free_mem = torch.cuda.mem_get_info()[0]
            value = min(int(free_mem * fraction), cap)
            Sizer._memo[key] = value
            return value
        def chunks(self, key, used):
            return self.budget(key, 0.9, 1 << 30) - used
    """
    got = _rows(analyse({"pkg/m.py": src}))
    assert ("mem_get_info", "chunks", "added", "widens", "memo", "unsafe") in got


def test_module_global_set_once_and_compared(analyse) -> None:
    src = """
    import torch
    _BUDGET = None
    def init_budget():
        global _BUDGET
        _BUDGET = torch.cuda.mem_get_info()[0] // 2
    def forward(need, x):
        if need <= _BUDGET:
            return run_whole(x)
        return run_chunked(x)
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "forward", "compared", "widens", "global", "unsafe")
    ]


def test_functools_cache_applied_as_a_call(analyse) -> None:
    src = """
    import functools
    import torch
    def _walk():
        return sum(s["total_size"] - s["allocated_size"] for s in torch.cuda.memory_snapshot())
    trapped = functools.cache(_walk)
    def takeable(cache):
        return cache - trapped()
    """
    got = _rows(analyse({"pkg/m.py": src}))
    assert ("memory_snapshot", "takeable", "subtracted", "narrows", "cache", "safe") in got


def test_attribute_set_at_start_up_is_kept(analyse) -> None:
    src = """
    import torch
    class Session:
        def __init__(self):
            self.free_at_start = torch.cuda.mem_get_info()[0]
        def segment_cap(self, used):
            return self.free_at_start - used
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "segment_cap", "added", "widens", "start-up", "unsafe")
    ]


def test_remainder_alignment_is_monotone_and_one_site_is_one_term(analyse) -> None:
    src = """
    import torch
    def aligned(align, used):
        free = torch.cuda.mem_get_info()[0]
        return free - free % align - used
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "aligned", "added", "widens", "", "n/a")
    ]


def test_log_metric_and_stats_are_not_budgets(analyse) -> None:
    src = """
    import logging
    import torch
    logger = logging.getLogger(__name__)
    class Stats:
        def __init__(self):
            self.stats = {}
        def report(self, used, gauge):
            free = torch.cuda.mem_get_info()[0]
            logger.info("free %d", free - used)
            gauge.set(free - used)
            self.stats["free"] = free
            self.stats["steps"] = 1
        def steps_left(self, budget):
            return budget - self.stats["steps"]
        def room(self, used):
            return self.stats["free"] - used
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "room", "added", "widens", "", "n/a")
    ]


def test_device_branches_of_one_function_are_one_term(analyse) -> None:
    src = """
    import torch
    def free_memory(device):
        if device == "cuda":
            return torch.cuda.mem_get_info()[0]
        elif device == "xpu":
            return torch.xpu.mem_get_info()[0]
        return torch.npu.mem_get_info()[0]
    def room(device, used):
        return free_memory(device) - used
    """
    assert [r[:3] for r in _rows(analyse({"pkg/m.py": src}))] == [("mem_get_info", "room", "added")]


SCENARIO = """
import functools
import time
import torch

@functools.lru_cache
def reserved():
    return torch.cuda.memory_stats()["reserved_bytes.all.current"]

class Budget:
    def __init__(self):
        self._free = None
        self._trapped_at = float("-inf")

    def free_bytes(self):
        if self._free is None:
            self._free = torch.cuda.mem_get_info()[0]
        return self._free

    def trapped(self):
        now = time.monotonic()
        if now - self._trapped_at >= 30:
            self._trapped = 0
            for seg in torch.cuda.memory_snapshot():
                self._trapped += seg["total_size"] - seg["allocated_size"]
            self._trapped_at = now
        return self._trapped

    def takeable(self):
        return reserved() - self.trapped()

    def spendable(self):
        return self.free_bytes() + self.takeable() - self.granted

    def want(self):
        return self.target - reserved()
"""


def test_design_four_row_table_with_every_term_cached(analyse) -> None:
    """DESIGN.md §1: allocator cache safe in `want`, unsafe in `spendable`; free unsafe;
    trapped safe in `takeable` (and in `spendable`, through it)."""
    report = analyse({"pkg/m.py": SCENARIO})
    table = {
        (r.term.rsplit(".", 1)[-1], r.function.rsplit(".", 1)[-1]): (
            r.operation,
            r.stale_larger,
            r.verdict,
        )
        for r in report.rows
        if r.cached
    }
    assert table[("memory_stats", "want")] == ("subtracted", "narrows", "safe")
    assert table[("memory_stats", "spendable")] == ("added", "widens", "unsafe")
    assert table[("mem_get_info", "spendable")] == ("added", "widens", "unsafe")
    assert table[("memory_snapshot", "takeable")] == ("subtracted", "narrows", "safe")
    assert table[("memory_snapshot", "spendable")] == ("subtracted", "narrows", "safe")
    consumers = [r for r in report.rows if r.function.rsplit(".", 1)[-1] != "trapped"]
    assert all(r.cached for r in consumers)
    # The accumulation itself adds the fresh reading: a row, uncached, no verdict.
    (accumulation,) = [r for r in report.rows if r not in consumers]
    assert (accumulation.operation, accumulation.verdict) == ("added", "n/a")


def test_budget_passed_as_a_lambda_and_a_returned_comparison(analyse) -> None:
    """sglang's MQA logits shape: a dict memo read through a callable handed to a predicate."""
    src = """
    import torch
    def budget_bytes(fraction, cap):
        free_mem, _ = torch.cuda.mem_get_info()
        return min(int(free_mem * fraction), cap)
    def should_chunk(rows, get_budget_bytes):
        return rows * 4 > get_budget_bytes()
    class Indexer:
        _budget: dict = {}
        def _get_budget(self, dev):
            hit = self._budget.get(dev)
            if hit is not None:
                return hit
            value = budget_bytes(0.5, 1 << 30)
            self._budget[dev] = value
            return value
        def forward(self, rows, dev):
            return should_chunk(rows, get_budget_bytes=lambda: self._get_budget(dev))
    """
    got = _rows(analyse({"pkg/m.py": src}))
    # A larger (stale) budget makes `rows * 4 > budget` false more often: fewer chunks.
    assert ("mem_get_info", "should_chunk", "compared", "narrows", "memo", "safe") in got


def test_dataclass_default_factory_with_functools_cache_call(analyse) -> None:
    src = """
    from dataclasses import dataclass, field
    from functools import cache
    import torch
    def free_runs(pool):
        total = 0
        for seg in torch.cuda.memory_snapshot():
            total += seg["total_size"] - seg["allocated_size"]
        return total
    @dataclass
    class State:
        runs: object = field(default_factory=lambda: cache(free_runs))
    def borrow(state: State, need):
        if need <= state.runs(0):
            return True
        return False
    """
    got = _rows(analyse({"pkg/m.py": src}))
    assert ("memory_snapshot", "borrow", "compared", "widens", "cache", "unsafe") in got


def test_values_appended_to_a_kept_list(analyse) -> None:
    src = """
    import torch
    class Sampler:
        def sample(self):
            self.history.append(torch.cuda.mem_get_info()[0])
        def budget(self, used):
            return max(self.history) - used
    """
    assert _rows(analyse({"pkg/m.py": src})) == [
        ("mem_get_info", "budget", "added", "widens", "list", "unsafe")
    ]


def test_walk_into_a_local_list_behind_a_dataclass_cache(analyse) -> None:
    """sglang's graph-pool borrow state: a snapshot walk appended to a local list, cached by
    `field(default_factory=lambda: cache(walk))`, read through the instance."""
    src = """
    from dataclasses import dataclass, field
    from functools import cache
    import torch
    def free_runs(pool):
        runs = []
        for segment in torch.cuda.memory_snapshot(pool):
            runs.append((segment["address"], segment["total_size"] - segment["allocated_size"]))
        return runs
    @dataclass
    class BorrowState:
        snapshot_free_runs: object = field(default_factory=lambda: cache(free_runs))
    def largest_run(state: BorrowState) -> int:
        runs = state.snapshot_free_runs(0)
        return runs[0][1] if runs else 0
    def fits(state: BorrowState, need):
        if need <= largest_run(state):
            return True
        return False
    """
    got = _rows(analyse({"pkg/m.py": src}))
    assert ("memory_snapshot", "fits", "compared", "widens", "cache", "unsafe") in got
