"""rankguard beside ruff and semgrep on one tree: the table of issue #14, for the current code.

Not a test: run it by hand and keep the figures in benchmarks/README.md.

    python3 benchmarks/side_by_side.py [TREE] [--config FILE] [--repeat 3] [--skip report]

TREE defaults to sglang 0.5.23's `sglang/srt`; the config to /work/cmp/two.toml when it exists
(else the two scheduler loops). The tree is copied (as `sglang/srt`, so module names stay those
sglang imports by) into a scratch folder, and every rankguard run uses a cache folder of its own:

- ruff: `ruff check --isolated --no-cache` (all default rules) on the copy;
- semgrep: one pattern rule (`torch.distributed.all_reduce(...)`), when semgrep is installed;
- check cold: an empty cache each run;
- check warm: the same tree again, nothing changed;
- check one edit: a statement inserted at the top of `--function` in `--file` (a function a
  round reaches; every line below it shifts), a different statement each run, against the
  warm cache;
- report: `rankguard report` between two commits of a scratch repository of the tree (head =
  base plus the same kind of edit), an empty cache each run.

Each wall figure is the median of --repeat runs of a child process; peak RSS is the largest
maximum resident set size of the child (and the workers it waited for) over those runs
(os.wait4). Ratios are against ruff measured in the same run: on a shared machine absolute
figures drift with load (the load average is printed), ratios much less.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_speed import default_tree, make_repo

DEFAULT_CONFIG = Path("/work/cmp/two.toml")
FALLBACK_CONFIG = '[tool.rankguard]\nrounds = ["*.event_loop_normal", "*.event_loop_pp"]\n'
SEMGREP_RULE = """rules:
  - id: all-reduce
    languages: [python]
    severity: INFO
    message: an all_reduce
    pattern: torch.distributed.all_reduce(...)
"""


def measure(argv: list[str], ok: tuple[int, ...] = (0, 1)) -> tuple[float, int]:
    """(wall seconds, peak RSS in MiB) of one child process; a crash stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss // 1024


def cold_runs(argv: list[str], cache: Path, repeat: int) -> list[tuple[float, int]]:
    """`repeat` runs of `argv`, each with an empty cache."""
    runs = []
    for _ in range(repeat):
        runs.append(measure([*argv, "--cache-dir", str(cache)]))
        shutil.rmtree(cache, ignore_errors=True)
    return runs


def insert_at_top(path: Path, function: str, text: str) -> None:
    """Insert the statement `text` before the first statement of `function`'s body."""
    source = path.read_text("utf-8")
    found = next(
        (
            node
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function
        ),
        None,
    )
    if found is None:
        raise SystemExit(f"{path}: no function {function}")
    first = found.body[0]
    lines = source.splitlines(keepends=True)
    lines.insert(first.lineno - 1, " " * first.col_offset + text + "\n")
    path.write_text("".join(lines), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--file", default="managers/scheduler.py")
    parser.add_argument("--function", default="get_next_batch_to_run")
    parser.add_argument("--skip", action="append", default=[], help="semgrep, report, cold")
    args = parser.parse_args()
    tree = args.tree or default_tree()
    work = Path(tempfile.mkdtemp(prefix="rankguard-side-by-side-"))
    config = args.config or (DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None)
    if config is None:
        config = work / "rankguard.toml"
        config.write_text(FALLBACK_CONFIG)
    copy = work / "copy" / "sglang" / "srt"
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy.parent / "__init__.py").write_text("")
    edited = copy / args.file
    original = edited.read_bytes()
    rankguard = [sys.executable, "-m", "rankguard"]
    check = [*rankguard, "check", str(copy), "--config", str(config), "--format", "json"]
    rows = Rows()
    notes: list[str] = []
    repo: Path | None = None
    loads = [os.getloadavg()[0]]
    files = sum(1 for _ in tree.rglob("*.py"))
    print(f"tree: {tree} ({files} files), config: {config}")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, 1-min load average at start "
        f"{loads[0]:.1f}, median of {args.repeat} runs\n"
    )
    print("| run | wall s | peak RSS MiB | x ruff |")
    print("|---|---:|---:|---:|", flush=True)
    try:
        ruff = shutil.which("ruff") or "ruff"
        ruff_argv = [ruff, "check", "--isolated", "--no-cache", "--exit-zero", "-q", str(copy)]
        rows["ruff check, all default rules, no cache"] = [
            measure(ruff_argv) for _ in range(args.repeat)
        ]
        semgrep = shutil.which("semgrep")
        if semgrep and "semgrep" not in args.skip:
            rule = work / "rule.yml"
            rule.write_text(SEMGREP_RULE)
            argv = [semgrep, "scan", "--config", str(rule), "--metrics=off", "--quiet", str(copy)]
            argv.insert(2, "--disable-version-check")
            rows["semgrep, one pattern rule"] = [measure(argv) for _ in range(args.repeat)]
        else:
            notes.append("semgrep: not installed (or skipped)")
        if "cold" not in args.skip:
            rows["rankguard check, cold cache"] = cold_runs(check, work / "cold", args.repeat)
        warm = ["--cache-dir", str(work / "warm")]
        priming = measure([*check, *warm])
        if "cold" in args.skip:  # the priming run is a cold run: keep it, marked as one run
            rows["rankguard check, cold cache (one run)"] = [priming]
        rows["rankguard check, warm, nothing changed"] = [
            measure([*check, *warm]) for _ in range(args.repeat)
        ]
        runs = []
        for i in range(args.repeat):
            edited.write_bytes(original)
            insert_at_top(edited, args.function, f"_edited_by_benchmark = {i}")
            runs.append(measure([*check, *warm]))
        edited.write_bytes(original)
        rows[f"rankguard check, one body edited ({args.function})"] = runs
        if "report" not in args.skip:
            repo, base, head = make_repo(tree, args.file, args.function)
            report = [*rankguard, "report", "--repo", str(repo), "--base", base, "--head", head]
            report += ["--config", str(config), "--format", "json", "-o", str(work / "r.json")]
            rows["rankguard report, base..head, cold cache"] = cold_runs(
                report, work / "report", args.repeat
            )
    finally:
        loads.append(os.getloadavg()[0])
        shutil.rmtree(work, ignore_errors=True)
        if repo is not None:
            shutil.rmtree(repo, ignore_errors=True)
    print("\n1-min load average " + " / ".join(f"{x:.1f}" for x in loads) + " (start / end)")
    for note in notes:
        print(note)


class Rows(dict[str, list[tuple[float, int]]]):
    """Each row is printed as soon as it is measured (a long run interrupted keeps its rows);
    the first row is the peer every ratio is taken against."""

    def __setitem__(self, name: str, runs: list[tuple[float, int]]) -> None:
        super().__setitem__(name, runs)
        peer = statistics.median(r[0] for r in next(iter(self.values())))
        wall = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        print(f"| {name} | {wall:.2f} | {rss:,} | {wall / peer:.2f} |", flush=True)


if __name__ == "__main__":
    main()
