"""`rankguard check`: run the rules (built-in and plugins) and report findings.

Exit 0 when nothing is found, 1 with findings, 2 on an input error (a missing path, a bad
config, a round pattern matching nothing, no round found) or when a file could not be read or
parsed (the findings are still printed: an error outranks findings but does not hide them).
The pipeline is `pipelines.check`; the text output is `reports.text`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from rankguard.commands._shared import (
    announce,
    emit_json,
    load_config,
    print_errors,
    print_warnings,
)
from rankguard.core.errors import InputError
from rankguard.core.findings import Finding
from rankguard.pipelines.check import CheckOptions, CheckRun, run_check
from rankguard.reports.baseline import fingerprint_versions, judge, write_baseline
from rankguard.reports.sarif import render
from rankguard.reports.text import Style, render_text, use_colour
from rankguard.rules.engine import choose
from rankguard.rules.registry import all_rules

NAME = "check"
HELP = "run the rules: calls that block before collectives, rank-divergent collectives, ..."


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=[Path(".")], type=Path, metavar="PATH")
    parser.add_argument(
        "--select", metavar="RULE,...", help="run only these rules (names or codes, e.g. RG101)"
    )
    parser.add_argument("--ignore", metavar="RULE,...", help="do not run these rules")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument(
        "--include-round-tail",
        action="store_true",
        default=True,
        help="report work after a round's last collective as before the next round's first "
        "collective (the default; the switch is kept for scripts that pass it)",
    )
    parser.add_argument(
        "--no-round-tail",
        dest="include_round_tail",
        action="store_false",
        help="leave out work after a round's last collective",
    )
    parser.add_argument(
        "--show-suppressed",
        action="store_true",
        help="also list findings silenced by `# rankguard: ignore[...]`, with their reasons",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="report only findings whose fingerprint is not in FILE",
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="record the current findings' fingerprints in FILE (sorted) and exit 0",
    )
    parser.add_argument(
        "--strict-baseline",
        action="store_true",
        help="with --baseline, also fail on baseline entries that no longer occur",
    )
    parser.add_argument(
        "--report-unused-ignores",
        action="store_true",
        help="report `# rankguard: ignore[...]` comments that silence nothing",
    )
    parser.add_argument(
        "--min-confidence",
        choices=CONFIDENCE,
        default="low",
        help="report only findings at least this sure (those without a confidence always)",
    )
    parser.add_argument(
        "--statistics", action="store_true", help="text: one count per rule instead of findings"
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="text: the findings only (no summary)"
    )


CONFIDENCE = ("low", "medium", "high")


def at_least(findings: list[Finding], level: str) -> list[Finding]:
    """Findings whose `confidence` is at least `level` (findings that carry none stay)."""
    floor = CONFIDENCE.index(level)
    return [
        f
        for f in findings
        if f.extra.get("confidence") not in CONFIDENCE
        or CONFIDENCE.index(f.extra["confidence"]) >= floor
    ]


def run(args: argparse.Namespace) -> int:
    paths: list[Path] = list(args.paths) or [Path(".")]
    config = load_config(args, paths[0])
    rules = all_rules(config)
    chosen = choose(rules, _names(args.select), _names(args.ignore))
    if args.strict_baseline and args.baseline is None:
        raise InputError("--strict-baseline needs --baseline FILE")
    options = CheckOptions(
        include_round_tail=args.include_round_tail,
        report_unused_ignores=args.report_unused_ignores,
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        warn=print_warnings,
    )
    run = run_check(paths, config, args.config is not None, chosen, rules, options)
    run.result.findings = at_least(run.result.findings, args.min_confidence)
    if not args.quiet:
        for found in run.discoveries:
            announce(found)
    if args.write_baseline is not None:
        count = write_baseline(
            args.write_baseline, run.everything, fingerprint_versions(rules.values())
        )
        print(f"rankguard: wrote {count} fingerprint(s) to {args.write_baseline}", file=sys.stderr)
        print_errors(run.errors)
        return 2 if run.errors else 0
    if args.baseline is not None:
        print_warnings(judge(run, args.baseline, args.strict_baseline))
    _emit(args, run, fingerprint_versions(rules.values()))
    return run.exit_code()


def _emit(args: argparse.Namespace, run: CheckRun, versions: dict[str, int]) -> None:
    result = run.result
    if args.format == "json":
        payload: dict[str, Any] = {
            "findings": [f.to_json() for f in result.findings],
            "errors": [e.to_json() for e in run.errors],
        }
        if versions:  # an extra field: a saved output used as a baseline says what it holds
            payload["fingerprint_versions"] = versions
        if run.warnings:  # an extra field (DESIGN 4): rounds that reach no collective, ...
            payload["warnings"] = [w.to_json() for w in run.warnings]
        if args.show_suppressed:
            payload["suppressed"] = [
                s.to_json() for s in sorted(result.suppressed, key=lambda s: s.finding)
            ]
        if args.baseline is not None:
            payload["baselined"] = run.baselined
            payload["stale_baseline"] = [e.to_json() for e in run.stale]
        emit_json(payload)
    elif args.format == "sarif":
        sarif = render(result.findings, run.rules, run.errors)
        json.dump(sarif, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        style = Style(use_colour(sys.stdout, os.environ))
        text = render_text(
            run, args.show_suppressed, statistics=args.statistics, quiet=args.quiet, style=style
        )
        sys.stdout.write(text)
    print_errors(run.errors)  # on stderr in every format: JSON and SARIF carry them on stdout too
