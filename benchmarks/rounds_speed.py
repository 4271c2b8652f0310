"""Speed and memory of `rankguard rounds` on a real corpus, beside ruff on the same tree.

Not a test: run it by hand and keep the figures in benchmarks/README.md.

    python3 benchmarks/rounds_speed.py [TREE] [--repeat 5] [--parsers]

TREE defaults to sglang 0.5.23's `sglang/srt` (fetched by ../shared/corpus/get-corpus.sh).
Cold = empty cache; warm = same tree, cache filled, nothing changed. Each figure is the median
of --repeat runs; peak memory is the child's maximum resident set size (os.wait4).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = '[tool.rankguard]\nrounds = ["*.event_loop_normal", "*.event_loop_pp"]\n'


def default_tree() -> Path:
    script = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "get-corpus.sh"
    out = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "sglang" / "srt"


def measure(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 2):
        raise SystemExit(f"{argv[0]} exited {code}")
    return wall, usage.ru_maxrss // 1024


def median_of(runs: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def parser_times(tree: Path) -> tuple[float, float]:
    import ast

    import libcst

    sources = [p.read_bytes() for p in sorted(tree.rglob("*.py"))]
    start = time.perf_counter()
    for data in sources:
        ast.parse(data)
    ast_time = time.perf_counter() - start
    start = time.perf_counter()
    for data in sources:
        libcst.parse_module(data)
    return ast_time, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parsers", action="store_true", help="also time ast vs libcst")
    args = parser.parse_args()
    tree = args.tree or default_tree()
    lines = sum(p.read_bytes().count(b"\n") for p in tree.rglob("*.py"))
    files = sum(1 for _ in tree.rglob("*.py"))
    work = Path(tempfile.mkdtemp(prefix="rankguard-bench-"))
    config = work / "rankguard.toml"
    config.write_text(ROUNDS)
    rankguard = [sys.executable, "-m", "rankguard", "rounds", str(tree), "--config", str(config)]
    cold_runs, warm_runs = [], []
    try:
        for i in range(args.repeat):
            cache = work / f"cold-{i}"
            cold_runs.append(measure([*rankguard, "--cache-dir", str(cache)]))
            shutil.rmtree(cache)
        warm_cache = work / "warm"
        measure([*rankguard, "--cache-dir", str(warm_cache)])
        warm_runs = [
            measure([*rankguard, "--cache-dir", str(warm_cache)]) for _ in range(args.repeat)
        ]
        ruff = shutil.which("ruff") or "ruff"
        ruff_runs = [
            measure([ruff, "check", "--isolated", "--no-cache", "--exit-zero", "-q", str(tree)])
            for _ in range(args.repeat)
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cold, warm, ruff_m = median_of(cold_runs), median_of(warm_runs), median_of(ruff_runs)
    print(f"tree: {tree} ({files} files, {lines:,} lines), cores: {os.cpu_count()}")
    print(f"median of {args.repeat} runs      wall s   peak MiB   x ruff")
    for name, (wall, rss) in (
        ("rankguard rounds, cold", cold),
        ("rankguard rounds, warm", warm),
        ("ruff check (no cache)", ruff_m),
    ):
        print(f"{name:<26}{wall:8.2f}{rss:11d}{wall / ruff_m[0]:9.1f}")
    if args.parsers:
        ast_time, cst_time = parser_times(tree)
        print(
            f"parse only, one core: ast {ast_time:.1f} s, libcst {cst_time:.1f} s "
            f"({cst_time / ast_time:.1f}x)"
        )


if __name__ == "__main__":
    main()
