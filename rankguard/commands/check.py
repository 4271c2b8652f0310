"""`rankguard check`: run the rules (built-in and plugins) and report findings.

Exit 0 when nothing is found, 1 with findings, 2 when a file could not be read or parsed (the
findings are still printed: an error outranks findings but does not hide them).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from rankguard.adapters.sources import read_directory
from rankguard.commands._shared import emit_json, load_config, print_errors
from rankguard.errors import ErrorRecord
from rankguard.model.load import load_program, make_cache
from rankguard.rules.base import Finding
from rankguard.rules.engine import CheckResult, Suppressed, choose, run_rules
from rankguard.rules.registry import all_rules

NAME = "check"
HELP = "run the rules: calls that block before collectives, rank-divergent collectives, ..."


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=[Path(".")], type=Path, metavar="PATH")
    parser.add_argument("--select", metavar="RULE,...", help="run only these rules")
    parser.add_argument("--ignore", metavar="RULE,...", help="do not run these rules")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument(
        "--include-round-tail",
        action="store_true",
        help="also report work after a round's last collective (it delays the next round)",
    )
    parser.add_argument(
        "--show-suppressed",
        action="store_true",
        help="also list findings silenced by `# rankguard: ignore[...]`, with their reasons",
    )


def _prefixed(finding: Finding, prefix: str) -> Finding:
    """With several PATHs, paths are given relative to the working folder."""
    if not prefix:
        return finding

    def fix(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (prefix + v if k == "path" and isinstance(v, str) else fix(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    return Finding(
        prefix + finding.path, finding.line, finding.rule, finding.message,
        finding.fingerprint, fix(finding.extra),
    )  # fmt: skip


def _short(qualname: str) -> str:
    """`pkg.mod.Cls.meth` -> `Cls.meth` when a class is in it, else the last two parts."""
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[i:])
    return ".".join(parts[-2:])


def render_text(result: CheckResult, errors: list[ErrorRecord], show_suppressed: bool) -> str:
    lines: list[str] = []
    blocking = [f for f in result.findings if f.rule == "blocking-before-collective"]
    others = [f for f in result.findings if f.rule != "blocking-before-collective"]
    groups: dict[str, dict[tuple[str, str, int], list[Finding]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for finding in blocking:
        c = finding.extra["collective"]
        groups[finding.extra["round"]][(c["callee"], c["path"], c["line"])].append(finding)
    for round_name in sorted(groups):
        lines.append(f"round {round_name}")

        # Collectives in the order the round reaches them (its call site in the round first).
        def order(item: tuple[tuple[str, str, int], list[Finding]]) -> tuple[int, str, int]:
            chain = item[1][0].extra["collective"].get("chain") or [{"line": 0}]
            return (chain[0]["line"], item[0][1], item[0][2])

        for (callee, path, line), findings in sorted(groups[round_name].items(), key=order):
            lines.append(f"  before {callee}  ({path}:{line})")
            for finding in sorted(findings):
                b = finding.extra["blocking"]
                flags = [b["kind"]]
                if finding.extra.get("cadenced"):
                    flags.append("cadenced")
                if finding.extra.get("confidence") != "high":
                    flags.append(f"confidence {finding.extra.get('confidence')}")
                lines.append(f"    {b['callee']}  [{', '.join(flags)}]  `{b['text']}`")
                for hop in reversed(finding.extra["chain"]):  # innermost first, as a stack reads
                    lines.append(
                        f"        at {_short(hop['function'])} ({hop['path']}:{hop['line']})"
                    )
                lines.append(f"      why: {b['reason']}")
                if finding.extra.get("cadence"):
                    lines.append(f"      cadence: {finding.extra['cadence']}")
                if finding.extra.get("confidence_note"):
                    lines.append(f"      note: {finding.extra['confidence_note']}")
                more = len(finding.extra.get("collectives", ())) - 1
                if more > 0:
                    lines.append(
                        f"      also delays {more} other collective(s) (see --format json)"
                    )
                lines.append(f"      fingerprint {finding.fingerprint}")
        lines.append("")
    for finding in sorted(others):
        lines.append(f"{finding.path}:{finding.line}: {finding.rule}: {finding.message}")
    if show_suppressed and result.suppressed:
        lines.append("suppressed:")
        for item in sorted(result.suppressed, key=lambda s: s.finding):
            f = item.finding
            reason = item.reason or "no reason given"
            lines.append(f"  {f.path}:{f.line}: {f.rule} (at {item.path}:{item.line}: {reason})")
    count = len(result.findings)
    lines.append(
        f"{count} finding{'s' if count != 1 else ''}"
        f", {len(result.suppressed)} suppressed"
        + (f", {len(errors)} file error(s)" if errors else "")
    )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    paths: list[Path] = list(args.paths) or [Path(".")]
    config = load_config(args, paths[0])
    rules = all_rules(config)
    chosen = choose(rules, _names(args.select), _names(args.ignore))
    options = {"include_round_tail": args.include_round_tail}
    result = CheckResult()
    errors: list[ErrorRecord] = []
    cache = make_cache(config, args.cache_dir, enabled=not args.no_cache)
    for path in paths:
        tree = read_directory(path, config.exclude)
        program = load_program(tree, config, cache)
        options["read_source"] = lambda rel, root=path: (root / rel).read_text("utf-8")
        part = run_rules(program, config, chosen, options)
        prefix = "" if len(paths) == 1 else path.as_posix().rstrip("/") + "/"
        result.findings += [_prefixed(f, prefix) for f in part.findings]
        result.suppressed += [
            Suppressed(_prefixed(s.finding, prefix), prefix + s.path, s.line, s.reason)
            for s in part.suppressed
        ]
        errors += [ErrorRecord(prefix + e.path, e.message) for e in program.errors]
    result.findings.sort()
    errors.sort()
    if args.format == "json":
        payload: dict[str, Any] = {
            "findings": [f.to_json() for f in result.findings],
            "errors": [e.to_json() for e in errors],
        }
        if args.show_suppressed:
            payload["suppressed"] = [
                s.to_json() for s in sorted(result.suppressed, key=lambda s: s.finding)
            ]
        emit_json(payload)
    elif args.format == "sarif":
        from rankguard.reports.sarif import render

        json.dump(render(result.findings, chosen, errors), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(result, errors, args.show_suppressed))
        print_errors(errors)
    if errors:
        return 2
    return 1 if result.findings else 0
