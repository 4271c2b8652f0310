"""Census throughput on a generated ~1 GB boot log, with `grep -c` on the same file as a peer.

    python3 benchmarks/census_throughput.py [--size-mb 1024] [--keep DIR]

The repository is the bundled toysched example committed to a temporary git repository; the
inventory is its seven emitted literals (EXPECTED.md §7). The log mixes scheduler chatter,
genuine emissions of every row (with log prefixes and varied field values), prose that quotes
the literals (the false positives a bare grep counts), invalid UTF-8 and a few long lines.

It prints lines/s and MB/s for `rankguard inventory census` (whole command: relocation at the
pin included) and for `grep -c -F` (one pattern, and all seven patterns in one run), and the
census process's peak RSS (resource.getrusage of the child).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "toysched"

ROWS = [
    ("E1", "toysched/utils/logs.py:19", "Logging configured for TP"),
    ("E2", "toysched/managers/scheduler.py:215", "Profiler trigger"),
    ("E3", "toysched/managers/memory_mixin.py:98", "Asking the pool to release"),
    (
        "E4",
        "toysched/managers/grammar.py:60",
        "compiles run on two worker threads, so requests with a schema",
    ),
    ("E5", "toysched/distributed/comm.py:51", "tensor parallel group is not initialized"),
    ("E6", "toysched/managers/scheduler.py:114", "Watchdog: blocked in"),
    ("E7", "—", "budget shrank below the running width"),
]


def genuine_line(rng: random.Random) -> str:
    n = rng.randrange(7)
    if n == 0:
        return f"Logging configured for TP{rng.randrange(8)} PP{rng.randrange(4)} at level 20"
    if n == 1:
        return f"Profiler trigger 'start' read from /tmp/trigger{rng.randrange(100)}"
    if n == 2:
        return f"Asking the pool to release {rng.randrange(1 << 30)} bytes of cached KV"
    if n == 3:
        return (
            "Grammar backlog is large: compiles run on two worker threads, so requests with a "
            "schema may wait several rounds before they are scheduled"
        )
    if n == 4:
        return "RuntimeError: tensor parallel group is not initialized"
    return f"Watchdog: blocked in recv_requests for {rng.random() * 60:.1f} s"


def prose_line(rng: random.Random) -> str:
    literal = rng.choice(ROWS)[2]
    return rng.choice(
        [
            f'config help: "{literal}" is logged when the condition holds; see docs',
            f"DEBUG dump of message table: {{'msg': '{literal}', 'count': 3}}",
            f"note: {literal} (quoted by an operator)",
        ]
    )


def chatter(rng: random.Random) -> str:
    return rng.choice(
        [
            f"Prefill batch. #new-seq: {rng.randrange(64)}, #new-token: {rng.randrange(8192)}, "
            f"#cached-token: {rng.randrange(8192)}, token usage: {rng.random():.2f}",
            f"Decode batch. #running-req: {rng.randrange(256)}, #token: {rng.randrange(1 << 20)}, "
            f"gen throughput (token/s): {rng.random() * 5000:.2f}, #queue-req: 0",
            f'INFO:     127.0.0.1:{rng.randrange(65536)} - "POST /generate HTTP/1.1" 200 OK',
        ]
    )


def generate(path: Path, size: int, seed: int = 7) -> tuple[int, int]:
    """Write ~`size` bytes; return (lines, genuine lines written)."""
    rng = random.Random(seed)
    # A few MB of distinct lines, repeated with a varying prefix: realistic, and fast to write.
    body: list[bytes] = []
    genuine = 0
    for i in range(40_000):
        roll = rng.random()
        if roll < 0.10:
            text, genuine = genuine_line(rng), genuine + 1
        elif roll < 0.13:
            text = prose_line(rng)
        else:
            text = chatter(rng)
        raw = text.encode()
        if i % 997 == 0:
            raw = b"\xff\xfe bad bytes " + raw  # invalid UTF-8 in the prefix
        body.append(raw)
    long_line = b"x" * (2 << 20) + b" Watchdog: blocked in loop for 1.0 s"
    lines = written = genuine_total = 0
    with path.open("wb") as out:
        rep = 0
        while written < size:
            prefix = (
                f"[2024-05-01 12:{rep // 60 % 60:02d}:{rep % 60:02d} TP{rep % 8} PP0] ".encode()
            )
            chunk = b"".join(prefix + line + b"\n" for line in body)
            if rep % 50 == 0:
                chunk += long_line + b"\n"
                lines += 1
                genuine_total += 1
            out.write(chunk)
            written += len(chunk)
            lines += len(body)
            genuine_total += genuine
            rep += 1
    return lines, genuine_total


def make_repo(folder: Path) -> str:
    repo = folder / "repo"
    shutil.copytree(EXAMPLE, repo)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "toysched"], cwd=repo, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{cmd[0]} failed ({done.returncode}): {done.stderr}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path, help="generate into DIR and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="rg-census-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        pin = make_repo(folder)
        inventory = folder / "inventory.md"
        table = ["| id | site | literal |", "|---|---|---|"]
        table += [f"| {i} | {s} | `{lit}` |" for i, s, lit in ROWS]
        inventory.write_text(f"pin: {pin}\n\n" + "\n".join(table) + "\n")
        log = folder / "boot.log"
        start = time.perf_counter()
        lines, genuine = generate(log, args.size_mb << 20)
        size = log.stat().st_size
        print(
            f"generated {size / 1e6:.0f} MB, {lines:,} lines in {time.perf_counter() - start:.1f} s"
        )

        cmd = [sys.executable, "-m", "rankguard", "inventory", "census", str(inventory), str(log)]
        cmd += ["--repo", str(folder / "repo"), "--pin", pin, "--format", "json", "--no-cache"]
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm page cache
        census_s, out = timed(cmd)
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        payload = json.loads(out)
        grep1_s, grep1 = timed(["grep", "-c", "-F", "Watchdog: blocked in", str(log)])
        patterns = [arg for _, _, lit in ROWS for arg in ("-e", lit)]
        grep7_s, grep7 = timed(["grep", "-c", "-F", *patterns, str(log)])

        print(
            f"census (7 rows, whole command): {census_s:.2f} s, "
            f"{lines / census_s / 1e6:.2f} M lines/s, {size / census_s / 1e6:.0f} MB/s, "
            f"peak RSS {peak_kb / 1024:.0f} MiB"
        )
        print(
            f"grep -c -F, 1 pattern:  {grep1_s:.2f} s, {lines / grep1_s / 1e6:.2f} M lines/s "
            f"({grep1.strip()} lines)"
        )
        print(
            f"grep -c -F, 7 patterns: {grep7_s:.2f} s, {lines / grep7_s / 1e6:.2f} M lines/s "
            f"({grep7.strip()} lines)"
        )
        print(f"lines counted by census: {payload['logs'][0]['lines']:,} (generated {lines:,})")
        print(f"genuine lines generated (rows E1-E6): {genuine:,}")
        for row in payload["rows"]:
            print(
                f"  {row['id']}: bare {row['bare']:>10,}  genuine {row['genuine']:>10,}  "
                f"{row['status']}"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
