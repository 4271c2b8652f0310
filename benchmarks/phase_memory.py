"""Peak resident memory of `rankguard check` by phase, in one process.

Not a test: run it by hand and keep the figures in benchmarks/README.md.

    python3 benchmarks/phase_memory.py TREE --config CONFIG [--cache-dir DIR] [--select R,...]
        [--json FILE]

The phases are those of `pipelines.check.run_check` with the results cache left out (the rules
always run): parse (summaries, from the cache or the parallel workers), resolve (the program),
rounds, then each chosen rule in turn. Before each phase the process's peak is reset (Linux:
`5` written to /proc/self/clear_refs), so each row's peak is that phase's own; `children` is the
largest peak of a waited-for child (the parse workers). `--json` writes the findings (sorted
fingerprints, paths, lines, rules) for comparing two versions of the code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import resource
import time
import tracemalloc
from pathlib import Path

from rankguard.adapters.keyed import KeyedStore
from rankguard.adapters.sources import read_directory
from rankguard.analysis.discovery import require_rounds
from rankguard.core.config import load
from rankguard.core.stack import deep_recursion
from rankguard.model.load import make_cache, paused_gc, program_from_summaries
from rankguard.pipelines.collector import frozen
from rankguard.pipelines.results_cache import kept_path
from rankguard.rules.base import RuleContext
from rankguard.rules.engine import choose, run_rules
from rankguard.rules.registry import all_rules
from rankguard.summary.parse import parse_all


def _status() -> tuple[int, int]:
    text = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    return rss, hwm


def _reset() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


class Phases:
    def __init__(self) -> None:
        self.start = time.monotonic()
        self.last = self.start

    def begin(self) -> None:
        _reset()
        self.last = time.monotonic()

    def end(self, name: str) -> None:
        rss, hwm = _status()
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        now = time.monotonic()
        print(
            f"{name:<32} {now - self.last:8.1f} s  peak {hwm / 1024:7.0f} MiB  "
            f"after {rss / 1024:7.0f} MiB  children {children / 1024:6.0f} MiB",
            flush=True,
        )


def _top(snapshot: tracemalloc.Snapshot, count: int = 14) -> None:
    total = sum(s.size for s in snapshot.statistics("filename"))
    print(f"  traced now: {total / 2**20:.0f} MiB", flush=True)
    for stat in snapshot.statistics("traceback")[:count]:
        print(f"  {stat.size / 2**20:7.1f} MiB {stat.count:>9} blocks", flush=True)
        for frame in stat.traceback.format(most_recent_first=True)[::2]:
            print(f"      {frame.strip()}", flush=True)
    by_file = snapshot.statistics("lineno")[:count]
    for stat in by_file:
        print(f"  line {stat.size / 2**20:7.1f} MiB {stat.traceback[0]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--select", default="")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        metavar="N",
        help="trace the rules' allocations (tracemalloc, N frames) and print the largest",
    )
    args = parser.parse_args()
    phases = Phases()
    config = load(args.config, args.tree)
    rules = all_rules(config)
    chosen = choose(rules, [n for n in args.select.split(",") if n])
    cache = make_cache(args.cache_dir)
    phases.begin()
    tree = read_directory(args.tree, config.exclude)
    phases.end("read")
    phases.begin()
    with paused_gc():
        summaries, errors = parse_all(tree.files, cache)
    phases.end(f"parse ({cache.misses} parsed)")
    phases.begin()
    program = program_from_summaries(tree, summaries, errors, cache)
    del tree, summaries
    phases.end("resolve")
    found = []
    with frozen() as release:
        kept = KeyedStore(kept_path(cache))
        context = RuleContext(
            program,
            config,
            {"include_round_tail": True},
            read_source=lambda rel: (args.tree / rel).read_text("utf-8"),
            kept=kept,
        )
        phases.begin()
        with deep_recursion():
            require_rounds(
                program,
                config.rounds,
                lambda: context.discovery,
                str(args.config),
                lambda: context.reach,
            )
            _ = context.rounds
        phases.end("rounds")
        if args.trace:
            tracemalloc.start(args.trace)
        for index, rule in enumerate(chosen):
            if index:  # as `run_rules` does between rules: the rule before's frozen garbage
                started = time.monotonic()
                release()
                rss = _status()[0]
                print(
                    f"  released in {time.monotonic() - started:.1f} s, then {rss / 1024:.0f} MiB",
                    flush=True,
                )
            phases.begin()
            part = run_rules(program, config, [rule], context=context)
            found += part.findings
            phases.end(f"rule {rule.name} ({len(part.findings)})")
            if part.failures:
                print(part.failures)
            print(
                f"  kept store: {len(kept._pending)} pending, "
                f"{sum(map(len, kept._pending.values())) / 2**20:.0f} MiB",
                flush=True,
            )
            if args.trace:
                _top(tracemalloc.take_snapshot())
        kept.close()
    if args.json is not None:
        rows = sorted(
            (f.fingerprint, f.path, f.line, f.rule, f.message)
            for f in sorted(found, key=lambda f: f.fingerprint)
        )
        args.json.write_text(json.dumps(rows, indent=0))
    print(
        f"total {time.monotonic() - phases.start:.1f} s, process peak "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (since reset)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
