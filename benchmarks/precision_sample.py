"""Draw a labelling sample of blocking findings, or score a labelled one.

A sample is the N blocking findings with the smallest sha1(SALT + fingerprint) hex digest: stable
across tool versions (a finding keeps its place while it keeps its fingerprint) and independent
of how many findings there are. `tests/data/precision/sglang-0.5.23-blocking.json` records which
salt each sample used ("13:" for `after`, "29:" for `independent`, "47:" for `fourth`).

    python3 -m rankguard check SRC --config two.toml --format json > findings.json
    python3 benchmarks/precision_sample.py draw findings.json --salt 29: > sample.json
    python3 benchmarks/precision_sample.py score tests/data/precision/sglang-0.5.23-blocking.json \
        --sample independent
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

RULE = "blocking-before-collective"


def draw(findings: list[dict], salt: str, size: int) -> list[dict]:
    """The `size` blocking findings with the smallest sha1(salt + fingerprint)."""
    blocking = [f for f in findings if f["rule"] == RULE]
    return sorted(
        blocking, key=lambda f: hashlib.sha1((salt + f["fingerprint"]).encode()).hexdigest()
    )[:size]


def score(labels: list[dict]) -> list[str]:
    """Precision per confidence level, and the count of each cause of the others."""
    lines = []
    for level in ("high", "medium", "low", "all"):
        items = [item for item in labels if level in ("all", item["confidence"])]
        true = sum(item["verdict"] == "true" for item in items)
        lines.append(f"{level}: {true}/{len(items)} true ({true / max(len(items), 1):.2f})")
    causes = Counter(item.get("cause", "?") for item in labels if item["verdict"] != "true")
    lines.extend(f"  {count} {cause}" for cause, count in causes.most_common())
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    drawing = commands.add_parser("draw", help="select a sample from `check --format json`")
    drawing.add_argument("findings", type=Path)
    drawing.add_argument("--salt", required=True)
    drawing.add_argument("--size", type=int, default=60)
    scoring = commands.add_parser("score", help="precision of one labelled sample")
    scoring.add_argument("labels", type=Path)
    scoring.add_argument("--sample", required=True)
    args = parser.parse_args(argv)
    if args.command == "draw":
        findings = json.loads(args.findings.read_text("utf-8"))["findings"]
        json.dump(draw(findings, args.salt, args.size), sys.stdout, indent=1)
        return 0
    labels = json.loads(args.labels.read_text("utf-8"))["labels"]
    print("\n".join(score([item for item in labels if item["sample"] == args.sample])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
