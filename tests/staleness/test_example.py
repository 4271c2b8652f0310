"""The bundled example's table: EXPECTED.md §6 (S1-S9), and the command's output and exit code."""

from __future__ import annotations

import json
from pathlib import Path

from rankguard.analysis.staleness import staleness
from rankguard.cli import main
from rankguard.core.config import load
from rankguard.model import load_path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "toysched"
MM = "toysched.managers.memory_mixin"
MIX = f"{MM}.SchedulerMemoryMixin"
MIXP = "toysched/managers/memory_mixin.py"
SCHED = "toysched.managers.scheduler.Scheduler"

# (term, term line, consumer, consumer site, operation, stale_larger, cached, verdict, chain)
EXPECTED = [
    ("torch.cuda.mem_get_info", f"{MIXP}:67", f"{MIX}.spendable_bytes", f"{MIXP}:70",
     "added", "widens", None, "n/a", [f"{MIX}.spendable_bytes"]),
    ("torch.cuda.memory_snapshot", f"{MIXP}:53", f"{MIX}._takeable_cache_bytes", f"{MIXP}:63",
     "subtracted", "narrows", "time-cadence", "safe",
     [f"{MIX}._trapped_cache_bytes", f"{MIX}._takeable_cache_bytes"]),
    ("torch.cuda.memory_snapshot", f"{MIXP}:53", f"{MIX}.spendable_bytes", f"{MIXP}:70",
     "subtracted", "narrows", "time-cadence", "safe",
     [f"{MIX}._trapped_cache_bytes", f"{MIX}._takeable_cache_bytes", f"{MIX}.spendable_bytes"]),
    ("torch.cuda.memory_stats", f"{MIXP}:26", f"{MIX}._takeable_cache_bytes", f"{MIXP}:63",
     "added", "widens", "lru_cache", "unsafe",
     [f"{MM}.memory_reserved", f"{MM}._cached_reserved_bytes", f"{MIX}._allocator_cache_bytes",
      f"{MIX}._takeable_cache_bytes"]),
    ("torch.cuda.memory_stats", f"{MIXP}:26", f"{MIX}.spendable_bytes", f"{MIXP}:70",
     "added", "widens", "lru_cache", "unsafe",
     [f"{MM}.memory_reserved", f"{MM}._cached_reserved_bytes", f"{MIX}._allocator_cache_bytes",
      f"{MIX}._takeable_cache_bytes", f"{MIX}.spendable_bytes"]),
    ("torch.cuda.memory_stats", f"{MIXP}:26", f"{MIX}._pool_release_want", f"{MIXP}:92",
     "subtracted", "narrows", "lru_cache", "safe",
     [f"{MM}.memory_reserved", f"{MM}._cached_reserved_bytes", f"{MIX}._allocator_cache_bytes",
      f"{MIX}._pool_release_want"]),
    ("torch.cuda.memory_stats", f"{MIXP}:26", f"{MIX}._release_pool_slack", f"{MIXP}:97",
     "compared", "narrows", "lru_cache", "safe",
     [f"{MM}.memory_reserved", f"{MM}._cached_reserved_bytes", f"{MIX}._allocator_cache_bytes",
      f"{MIX}._pool_release_want", f"{MIX}._release_pool_slack"]),
    ("toysched.mem_cache.radix_cache.RadixCache.available_size",
     "toysched/managers/scheduler.py:152", f"{SCHED}.get_num_allocatable_reqs",
     "toysched/managers/scheduler.py:152", "added", "widens", None, "n/a",
     [f"{SCHED}.get_num_allocatable_reqs"]),
    ("toysched.mem_cache.radix_cache.RadixCache.available_size",
     "toysched/managers/scheduler.py:152", f"{SCHED}.get_next_batch_to_run",
     "toysched/managers/scheduler.py:163", "compared", "widens", None, "n/a",
     [f"{SCHED}.get_num_allocatable_reqs", f"{SCHED}._local_admit_limit",
      f"{SCHED}.get_next_batch_to_run"]),
]  # fmt: skip


def test_example_table_matches_expected() -> None:
    config = load(None, EXAMPLE)
    report = staleness(load_path(EXAMPLE, config), config)
    got = [
        (
            r.term,
            f"{r.term_path}:{r.term_line}",
            r.function,
            f"{r.path}:{r.line}",
            r.operation,
            r.stale_larger,
            r.cache.kind if r.cache else None,
            r.verdict,
            [h.function for h in r.chain],
        )
        for r in report.rows
    ]
    assert got == EXPECTED
    assert report.errors == []
    cached_where = {r.cache.where for r in report.rows if r.cache}
    assert cached_where == {f"{MM}._cached_reserved_bytes", f"{MIX}._trapped"}


def test_command_json_and_exit_code(capsys) -> None:
    code = main(["staleness", str(EXAMPLE), "--format", "json", "--no-cache"])
    assert code == 1  # S2 and S3: cached and unsafe
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"terms", "errors"}
    first = payload["terms"][0]
    for key in ("term", "cached", "consumer", "operation", "stale_larger", "verdict", "chain"):
        assert key in first
    assert set(first["consumer"]) == {"function", "path", "line"}
    assert len(payload["terms"]) == 9


def test_command_text_and_md(capsys) -> None:
    assert main(["staleness", str(EXAMPLE), "--no-cache"]) == 1
    assert "9 rows, 2 cached and unsafe" in capsys.readouterr().out
    assert main(["staleness", str(EXAMPLE), "--format", "md", "--no-cache"]) == 1
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| term |") and len(table) == 11


def test_command_clean_and_bad_input(tmp_path: Path, capsys) -> None:
    (tmp_path / "m.py").write_text(
        "import torch\ndef f(b):\n    return b + torch.cuda.memory_allocated()\n"
    )
    assert main(["staleness", str(tmp_path), "--no-cache"]) == 0  # uncached: no finding
    assert main(["staleness", str(tmp_path / "missing"), "--no-cache"]) == 2
