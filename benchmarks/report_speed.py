"""Speed of `rankguard report` on sglang 0.5.23 between two revisions that differ in one function.

Not a test: run it by hand and keep the figures in benchmarks/README.md.

    python3 benchmarks/report_speed.py [TREE] [--repeat 3] [--function NAME] [--file REL]

TREE defaults to sglang 0.5.23's `sglang/srt` (fetched by ../shared/corpus/get-corpus.sh). It is
copied into a temporary git repository as `sglang/srt` (base commit); head is base with one
statement added to one function (`Scheduler.get_next_batch_to_run` in managers/scheduler.py by
default).

- cold: empty cache: both sides parse every file, both resolve, both run every rule;
- base warm: the cache holds the base (as after `rankguard check` on the target branch): the
  head parses one file and resolves once; this is the usual CI situation;
- warm: the same report again: every summary and both resolutions come from the cache.

Each figure is the median of --repeat runs of the `rankguard` command in a child process (the
whole CLI: git reads, parse, model, rules on both sides, staleness, literals, ruff, render);
peak memory is the child's maximum resident set size.

Figures (2026-11-30, 2 CPUs, Python 3.11.7, all rules incl. rank-divergent-collective, median of
3, `python3 benchmarks/report_speed.py --repeat 3`):

    cold       72.8 s   peak RSS 2005 MiB
    base warm  29.2 s   peak RSS 1731 MiB
    warm        5.4 s   peak RSS 1904 MiB

Most of a side's analysis time is the rules (rank-divergent-collective about two thirds, the
staleness audit most of the rest, shared by `stale-widening-term` and the report's staleness
section); the side's results are cached by exact file set, so a warm report only reads.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = '[tool.rankguard]\nrounds = ["*.event_loop_normal", "*.event_loop_pp"]\n'
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def default_tree() -> Path:
    script = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "get-corpus.sh"
    out = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "sglang" / "srt"


def git(repo: Path, *argv: str) -> str:
    out = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *argv],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def edit_function(path: Path, name: str) -> int:
    """Add one statement to the function `name` in `path` (before its last statement)."""
    source = path.read_text("utf-8")
    tree = ast.parse(source)
    found = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        ),
        None,
    )
    if found is None:
        raise SystemExit(f"{path}: no function {name}")
    last = found.body[-1]
    lines = source.splitlines(keepends=True)
    indent = " " * last.col_offset
    lines.insert(last.lineno - 1, f"{indent}_edited_by_benchmark = 1\n")
    path.write_text("".join(lines), "utf-8")
    return last.lineno


def make_repo(tree: Path, rel: str, function: str) -> tuple[Path, str, str]:
    repo = Path(tempfile.mkdtemp(prefix="rankguard-report-bench-"))
    # The tree keeps its package path (sglang/srt is a namespace folder inside `sglang`), so
    # module names are those sglang imports by.
    shutil.copytree(tree, repo / "sglang" / "srt", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "sglang" / "__init__.py").write_text("")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    line = edit_function(repo / "sglang" / "srt" / rel, function)
    git(repo, "commit", "-q", "-am", f"edit {function} at {rel}:{line}")
    return repo, base, git(repo, "rev-parse", "HEAD")


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MiB, exit code) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    return wall, usage.ru_maxrss // 1024, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--file", default="managers/scheduler.py")
    parser.add_argument("--function", default="get_next_batch_to_run")
    args = parser.parse_args()
    tree = args.tree or default_tree()
    work = Path(tempfile.mkdtemp(prefix="rankguard-report-bench-work-"))
    config = work / "rankguard.toml"
    config.write_text(CONFIG)
    repo, base, head = make_repo(tree, args.file, args.function)
    rankguard = [sys.executable, "-m", "rankguard"]
    out = work / "report.json"

    def report(cache: Path, b: str = base, h: str = head) -> list[str]:
        return [*rankguard, "report", "--repo", str(repo), "--base", b, "--head", h,
                "--config", str(config), "--cache-dir", str(cache), "--format", "json",
                "-o", str(out)]  # fmt: skip

    figures: dict[str, list[tuple[float, int, int]]] = {"cold": [], "base warm": [], "warm": []}
    try:
        for i in range(args.repeat):
            cache = work / f"cache-{i}"
            # base warm: fill the cache with the base alone (a report of base against itself).
            measure(report(cache, base, base))
            figures["base warm"].append(measure(report(cache)))
            shutil.rmtree(cache)
            figures["cold"].append(measure(report(cache)))
            figures["warm"].append(measure(report(cache)))
            shutil.rmtree(cache)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"tree {tree} ({files} files); head edits {args.function} in {args.file}")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, median of {args.repeat}")
        for name, runs in figures.items():
            wall = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            print(f"  {name:10} {wall:6.2f} s   peak RSS {rss} MiB   exit {runs[0][2]}")
    finally:
        shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
