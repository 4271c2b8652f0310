"""Draw a labelling sample of blocking findings, score a labelled one, or rescore them all.

A sample is the N blocking findings with the smallest sha1(SALT + fingerprint) hex digest: stable
across tool versions (a finding keeps its place while it keeps its fingerprint) and independent
of how many findings there are. `tests/data/precision/sglang-0.5.23-blocking.json` records which
salt each sample used ("13:" for `after`, "29:" for `independent`, "47:" for `fourth`).

    python3 -m rankguard check SRC --config two.toml --format json > findings.json
    python3 benchmarks/precision_sample.py draw findings.json --salt 29: > sample.json
    LABELS=tests/data/precision/sglang-0.5.23-blocking.json
    python3 benchmarks/precision_sample.py score $LABELS --sample independent
    python3 benchmarks/precision_sample.py rescore $LABELS findings.json
    HELD=tests/data/precision/heldout-vllm-megatron.json   # one run per corpus
    python3 benchmarks/precision_sample.py rescore $HELD vllm.json --sample vllm

`rescore` matches every label against a run as the opt-in acceptance test does (`site`,
`reported`): per sample, the precision of the labels still reported, at each finding's current
confidence; the true labels no longer reported and the gone false ones back; and a bound that
counts a false label while its site is reported through any chain (a finding is one per site
and round, shown with the first chain found, so a labelled chain can go while its site stays).
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


def site(item: dict) -> tuple[str, str, str, str]:
    """(round, function, callee, text) of a finding or a label: its site, line-free. A true
    label with `moved` is held at the earlier call named there."""
    if "chain" in item:  # a finding
        function, callee, text = (
            item["chain"][-1]["function"],
            item["blocking"]["callee"],
            item["blocking"]["text"],
        )
        return (item["round"], function, callee, text)
    text = item.get("moved", {}).get("text", item["text"])
    return (item["round"], item["function"], item["callee"], text)


def reported(found: list[dict], label: dict) -> bool:
    """A true label by its site (its chain may change), a false one by its chain."""
    if label["verdict"] == "true":
        return any(site(f) == site(label) for f in found)
    return any(f["fingerprint"] == label["fingerprint"] for f in found)


def rescore(
    labels: list[dict], findings: list[dict], platform: str = "cuda", sample: str | None = None
) -> list[str]:
    """Every sample's labels against one run (see the module's docstring); with `sample`,
    that sample's only. A held-out label names its `corpus` (its sample) and was reported
    when judged."""
    found = [f for f in findings if f["rule"] == RULE]
    sites: dict[tuple[str, str, str, str], list[dict]] = {}
    for finding in found:
        sites.setdefault(site(finding), []).append(finding)
    chains = {f["fingerprint"]: f for f in found}
    levels = ["low", "medium", "high"]
    counts: dict[str, Counter] = {}
    bound: dict[str, Counter] = {}
    lost, back = [], []
    for label in labels:
        name = label.get("sample", label.get("corpus"))
        if platform not in label.get("platforms", [platform]) or sample not in (None, name):
            continue
        true = label["verdict"] == "true"
        hits = sites.get(site(label), []) if true else []
        if not true and label["fingerprint"] in chains:
            hits = [chains[label["fingerprint"]]]
        if site(label) in sites or hits:
            bound.setdefault(name, Counter()).update(n=1, true=int(true))
        if not hits:
            if true:
                lost.append(label["id"])
            continue
        if not true and not label.get("reported", True):
            back.append(label["id"])
        level = max((h["confidence"] for h in hits), key=levels.index)
        for key in ("all", level):
            counts.setdefault(name, Counter()).update({f"{key} n": 1, f"{key} true": int(true)})
    lines = []
    for name, count in counts.items():
        parts = [
            f"{key}: {count[key + ' true']}/{count[key + ' n']}"
            for key in ("all", "high", "medium", "low")
            if count[key + " n"]
        ]
        by_site = bound[name]
        parts.append(f"(by site: {by_site['true']}/{by_site['n']})")
        lines.append(f"{name}: " + "  ".join(parts))
    lines.append(f"true labels no longer reported: {', '.join(lost) or 'none'}")
    lines.append(f"gone false labels back: {', '.join(back) or 'none'}")
    return lines


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
    rescoring = commands.add_parser("rescore", help="every sample's labels against a run")
    rescoring.add_argument("labels", type=Path)
    rescoring.add_argument("findings", type=Path)
    rescoring.add_argument("--sample", help="one sample's labels (a held-out corpus's)")
    args = parser.parse_args(argv)
    if args.command == "draw":
        findings = json.loads(args.findings.read_text("utf-8"))["findings"]
        json.dump(draw(findings, args.salt, args.size), sys.stdout, indent=1)
        return 0
    labels = json.loads(args.labels.read_text("utf-8"))["labels"]
    if args.command == "rescore":
        findings = json.loads(args.findings.read_text("utf-8"))["findings"]
        print("\n".join(rescore(labels, findings, sample=args.sample)))
        return 0
    print("\n".join(score([item for item in labels if item["sample"] == args.sample])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
