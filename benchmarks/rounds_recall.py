"""Recall of the rounds on a real tree: collective events and unresolved calls in their reach.

Not a test: run it by hand and keep the figures in benchmarks/README.md.

    python3 benchmarks/rounds_recall.py TREE --config CONFIG [--cache-dir DIR] [--top N]

For each round: its collective rows, its distinct collective *events* (call sites in the round
function's loop, or in project code below it, that lead to a primitive), and the distinct
primitive sites; then, over every function the rounds reach by calls, the resolved and
unresolved call sites (an unresolved call is where recall can still be lost), with the most
frequent unresolved call texts by their last name.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.analysis.reach import reach_from
from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from rankguard.core.config import load
from rankguard.model.load import load_program, make_cache


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    config = load(args.config, args.tree)
    tree = read_directory(args.tree, config.exclude)
    program = load_program(tree, make_cache(args.cache_dir))
    rounds = find_rounds(program, config.rounds, collective_catalog(config.collectives))
    for rnd in rounds:
        rows = [c.to_json() for c in rnd.collectives]
        events = {(r["event"]["path"], r["event"]["line"], r["event"]["callee"]) for r in rows}
        primitives = {(p["path"], p["line"]) for r in rows for p in r["primitives"]}
        print(
            f"{rnd.function.qualname}: {len(rows)} rows, {len(events)} events, "
            f"{len(primitives)} primitive sites"
        )
    reached = reach_from(program, [r.function.qualname for r in rounds])
    resolved = unresolved = 0
    texts: Counter[str] = Counter()
    for name in reached:
        for item in program.calls.get(name, ()):
            if item.targets:
                resolved += 1
            else:
                unresolved += 1
                texts[item.call.text.rsplit(".", 1)[-1]] += 1
    print(
        f"reach: {len(reached)} functions, {resolved} resolved call sites, {unresolved} unresolved"
    )
    for text, count in texts.most_common(args.top):
        print(f"  {count:>5}  .{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
