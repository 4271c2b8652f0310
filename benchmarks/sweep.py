"""Run every rankguard command over real corpora and report crashes, errors by cause, findings
per rule, time and peak memory. Not a test: the bar is zero crashes, and every `errors` entry
must be a property of the input.

    python3 benchmarks/sweep.py [--corpus NAME ...] [--cache-dir DIR]

Corpora are fetched with ../shared/corpus/get-corpus.sh (pinned versions below); a wheel the
script cannot unpack is unpacked here from its download folder.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve()
GET_CORPUS = HERE.parents[2] / "shared" / "corpus" / "get-corpus.sh"


@dataclass(frozen=True)
class Corpus:
    spec: str  # NAME==VERSION on PyPI
    package: str  # folder to analyse, inside the unpacked distribution
    rounds: tuple[str, ...]


CORPORA = {
    "sglang": Corpus(
        "sglang==0.5.23",
        "sglang/srt",
        (
            "*.event_loop_normal",
            "*.event_loop_overlap",
            "*.event_loop_pp*",
            "*.event_loop_*disagg*",
        ),
    ),
    "megatron-core": Corpus(
        "megatron-core==0.14.0",
        "megatron/core",
        ("*.forward_backward_*", "*.run_engine"),
    ),
    "deepspeed": Corpus(
        "deepspeed==0.17.5",
        "deepspeed",
        ("*.PipelineEngine._exec_schedule", "*.PipelineEngine.train_batch"),
    ),
    "vllm": Corpus(
        "vllm==0.10.1",
        "vllm",
        ("*.EngineCoreProc.run_busy_loop", "*.WorkerProc.worker_busy_loop", "*busy_loop*"),
    ),
}


def fetch(spec: str) -> Path:
    proc = subprocess.run(["bash", str(GET_CORPUS), spec], capture_output=True, text=True)
    if proc.returncode == 0:
        return Path(proc.stdout.strip().splitlines()[-1])
    # get-corpus.sh stops on a wheel whose name uses `_` when its `-` glob finds nothing.
    name, version = spec.split("==")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rankguard-corpus"
    wheels = sorted((cache / "dl").glob(f"{name.replace('-', '_')}-{version}*.whl"))
    if not wheels:
        raise SystemExit(f"{spec}: cannot fetch: {proc.stderr.strip()[-300:]}")
    out = cache / f"{name}-{version}"
    if not (out / ".done").exists():
        zipfile.ZipFile(wheels[0]).extractall(out)
        (out / ".done").touch()
    return out


def run(argv: list[str]) -> dict:
    """Exit code, crash, wall time and peak RSS (GNU time's %M) of one command."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "RSS_KB=%M", *argv], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    err_lines = proc.stderr.rstrip().splitlines()
    rss = err_lines.pop() if err_lines and err_lines[-1].startswith("RSS_KB=") else "RSS_KB=0"
    err = "\n".join(err_lines)
    code = proc.returncode
    return {
        "code": code,
        "crash": code not in (0, 1, 2) or "Traceback (most recent call last)" in err,
        "seconds": round(wall, 1),
        "peak_mib": int(rss.split("=")[1]) // 1024,
        "stdout": proc.stdout,
        "stderr": err,
    }


def causes(errors: list[dict]) -> dict[str, int]:
    """Group `errors` by their reason with names and numbers folded away."""
    counter: collections.Counter[str] = collections.Counter()
    for error in errors:
        reason = re.sub(r"\d+", "N", error["message"])
        reason = re.sub(r"module \S+ already read from \S+", "module already read", reason)
        counter[reason.split(":")[0] if "syntax error" in reason else reason] += 1
    return dict(counter.most_common())


def sample_inventory(tree: Path, folder: Path) -> Path:
    """A small inventory of real log literals, to exercise `inventory relocate` and `census`."""
    pattern = re.compile(r'logger\.(?:info|warning)\(\s*"([A-Za-z][^"{}%\\]{15,60})"')
    rows = []
    for path in sorted(tree.rglob("*.py")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = pattern.search(line)
            if match and len(rows) < 5:
                rel = path.relative_to(tree.parent).as_posix()
                rows.append(f"| L{len(rows) + 1} | {rel}:{number + 3} | {match.group(1)} |")
    table = folder / "inventory.md"
    table.write_text("| id | site | literal |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    return table


def sweep(name: str, corpus: Corpus, cache: Path) -> dict:
    dist = fetch(corpus.spec)
    tree = dist / corpus.package
    work = Path(tempfile.mkdtemp(prefix=f"sweep-{name}-"))
    config = work / "rankguard.toml"
    config.write_text(
        "[tool.rankguard]\n"
        f"rounds = {json.dumps(list(corpus.rounds))}\n"
        'watchdog-hooks = ["on_blocked_recv"]\n'
    )
    common = ["--config", str(config), "--cache-dir", str(cache)]
    rg = [sys.executable, "-m", "rankguard"]
    # A one-commit repository of the tree, for the git-backed commands.
    repo = work / "repo"
    subprocess.run(["cp", "-r", str(dist / corpus.package.split("/")[0]), str(repo)], check=True)
    git = ["git", "-c", "user.email=s@s", "-c", "user.name=s"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "corpus"], cwd=repo, check=True)
    # A second commit that edits one module, for `report` between the two.
    edited = sorted(repo.rglob("*.py"))[len(list(repo.rglob("*.py"))) // 2]
    edited.write_text(edited.read_text(errors="replace") + "\n\ndef _sweep_added():\n    pass\n")
    subprocess.run([*git, "commit", "-qam", "edit one module"], cwd=repo, check=True)
    inventory = sample_inventory(tree, work)
    log = work / "boot.log"
    log.write_text("\n".join(f"INFO line {i} of a boot log" for i in range(1000)) + "\n")
    at_head = ["--repo", str(repo), "--pin", "HEAD", *common, "--format", "json"]
    commands = {
        "rounds": [*rg, "rounds", str(tree), *common, "--format", "json"],
        "graph": [*rg, "graph", str(tree), *common, "--format", "json"],
        "check": [*rg, "check", str(tree), *common, "--format", "json"],
        "staleness": [*rg, "staleness", str(tree), *common, "--format", "json"],
        "fix stamp-watchdog": [*rg, "fix", "stamp-watchdog", str(tree), *common],
        "inventory relocate": [*rg, "inventory", "relocate", str(inventory), *at_head],
        "inventory census": [*rg, "inventory", "census", str(inventory), str(log), *at_head],
        "report": [
            *rg,
            "report",
            "--repo",
            str(repo),
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
            *common,
            "--format",
            "json",
            "--fail-on",
            "none",
        ],
        "rules": [*rg, "rules", *common],
    }
    report: dict = {"tree": str(tree), "files": sum(1 for _ in tree.rglob("*.py")), "commands": {}}
    for label, argv in commands.items():
        result = run(argv)
        entry = {k: result[k] for k in ("code", "crash", "seconds", "peak_mib")}
        try:
            payload = json.loads(result["stdout"]) if result["stdout"].strip() else {}
        except json.JSONDecodeError:
            payload = {}
        if label == "check":
            entry["findings"] = dict(
                collections.Counter(f["rule"] for f in payload.get("findings", []))
            )
        if label == "rounds":
            entry["rounds"] = {r["round"]: len(r["collectives"]) for r in payload.get("rounds", [])}
            entry["errors"] = causes(payload.get("errors", []))
        if label == "staleness":
            entry["rows"] = len(payload.get("terms", []))
        if result["crash"]:
            entry["stderr"] = result["stderr"][-2000:]
        report["commands"][label] = entry
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "rg-sweep")
    args = parser.parse_args()
    results = {}
    for name in args.corpus or sorted(CORPORA):
        results[name] = sweep(name, CORPORA[name], args.cache_dir)
        print(json.dumps({name: results[name]}, indent=1), flush=True)
    crashes = sum(e["crash"] for r in results.values() for e in r["commands"].values())
    print(f"crashes: {crashes}")


if __name__ == "__main__":
    main()
