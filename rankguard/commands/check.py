"""`rankguard check`: run the rules (built-in and plugins) and report findings.

Exit 0 when nothing is found, 1 with findings, 2 when a file could not be read or parsed (the
findings are still printed: an error outranks findings but does not hide them).

Folder arguments are analysed roots; file arguments inside a root restrict its report to the
findings whose chain touches them (`_targets` explains why; it is how the pre-commit hook
works). A baseline (`--baseline`) hides accepted findings by fingerprint; `--strict-baseline`
also fails on accepted findings that are gone, judged against the unrestricted findings so a
file filter never makes an entry look stale. `--report-unused-ignores` adds `unused-ignore`
findings for suppression comments that silenced nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from rankguard.adapters.sources import read_directory
from rankguard.commands._shared import emit_json, load_config, print_errors, print_warnings
from rankguard.commands._targets import plan_targets
from rankguard.core.errors import ErrorRecord, InputError
from rankguard.core.findings import Finding
from rankguard.model.load import load_program, make_cache
from rankguard.pipelines.results_cache import Results, load_results, results_path, store_results
from rankguard.reports.baseline import (
    Entry,
    apply_baseline,
    read_baseline,
    stale_entries,
    write_baseline,
)
from rankguard.reports.sarif import render
from rankguard.rules.base import Rule
from rankguard.rules.engine import (
    CheckResult,
    Suppressed,
    UnusedIgnore,
    choose,
    run_rules,
    touched_paths,
    unused_ignores,
)
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
        "--min-confidence",
        choices=CONFIDENCE,
        default="low",
        help="report only findings at least this sure (those without a confidence always)",
    )
    parser.add_argument(
        "--report-unused-ignores",
        action="store_true",
        help="report `# rankguard: ignore[...]` comments that silence nothing",
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
    if args.strict_baseline and args.baseline is None:
        raise InputError("--strict-baseline needs --baseline FILE")
    options = {"include_round_tail": args.include_round_tail}
    everything = CheckResult()  # every root's findings, before the file restriction
    result = CheckResult()
    errors: list[ErrorRecord] = []
    cache = make_cache(args.cache_dir, enabled=not args.no_cache)
    targets = plan_targets(paths, config, explicit_config=args.config is not None)
    for target in targets:
        tree = read_directory(target.root, config.exclude)
        print_warnings(tree.warnings)
        base = target.root if target.root.is_dir() else target.root.parent
        where = results_path(tree, cache, config, chosen, f"round-tail={args.include_round_tail}")
        # Results cached for this exact file set answer without loading the program (unless
        # an option needs the program itself).
        cached = load_results(where)
        program = None
        if cached is None or args.report_unused_ignores:
            program = load_program(tree, config, cache)
        if cached is not None:
            part, program_errors = cached.check, cached.errors
        else:
            assert program is not None
            part = run_rules(
                program,
                config,
                chosen,
                options,
                read_source=lambda rel, root=base: (root / rel).read_text("utf-8"),
            )
            program_errors = program.errors
            if not part.failures:  # a rule that raised is retried next run, not remembered
                store_results(where, Results(part, None, program_errors))
        if program is not None and args.report_unused_ignores:
            ran = [rule.name for rule in chosen]
            part.findings = sorted([*part.findings, *unused_ignores(program, part, ran, rules)])
        prefix = "" if len(targets) == 1 else base.as_posix().rstrip("/") + "/"
        everything.findings += [_prefixed(f, prefix) for f in part.findings]
        found = target.restrict(part.findings, key=touched_paths)
        result.findings += [_prefixed(f, prefix) for f in found]
        result.suppressed += [
            Suppressed(_prefixed(s.finding, prefix), prefix + s.path, s.line, s.reason)
            for s in target.restrict(part.suppressed, key=lambda s: touched_paths(s.finding))
        ]
        errors += [
            ErrorRecord(prefix + e.path, e.message)
            for e in target.restrict(program_errors, key=lambda e: {e.path})
        ]
        errors += [ErrorRecord(prefix + e.path, e.message) for e in part.failures]
    result.findings = at_least(sorted(result.findings), args.min_confidence)
    everything.findings.sort()
    errors.sort()
    if args.write_baseline is not None:
        count = write_baseline(args.write_baseline, everything.findings)
        print(f"rankguard: wrote {count} fingerprint(s) to {args.write_baseline}", file=sys.stderr)
        print_errors(errors)
        return 2 if errors else 0
    stale: list[Entry] = []
    baselined = 0
    shown_rules = [*chosen, UnusedIgnore] if args.report_unused_ignores else chosen
    if args.baseline is not None:
        entries = read_baseline(args.baseline)
        result.findings, baselined = apply_baseline(result.findings, entries)
        if args.strict_baseline:
            judged = {rule.name for rule in shown_rules}
            stale = stale_entries(entries, everything.findings, judged)
    _emit(args, result, errors, shown_rules, baselined, stale)
    if errors:
        return 2
    return 1 if result.findings or stale else 0


def _emit(
    args: argparse.Namespace,
    result: CheckResult,
    errors: list[ErrorRecord],
    rules: list[type[Rule]],
    baselined: int,
    stale: list[Entry],
) -> None:
    if args.format == "json":
        payload: dict[str, Any] = {
            "findings": [f.to_json() for f in result.findings],
            "errors": [e.to_json() for e in errors],
        }
        if args.show_suppressed:
            payload["suppressed"] = [
                s.to_json() for s in sorted(result.suppressed, key=lambda s: s.finding)
            ]
        if args.baseline is not None:
            payload["baselined"] = baselined
            payload["stale_baseline"] = [e.to_json() for e in stale]
        emit_json(payload)
    elif args.format == "sarif":
        json.dump(render(result.findings, rules, errors), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        text = render_text(result, errors, args.show_suppressed)
        if args.baseline is not None:
            text += f"{baselined} finding(s) in the baseline {args.baseline}\n"
            for entry in stale:
                text += (
                    f"stale baseline entry {entry.fingerprint} {entry.rule} {entry.path}: "
                    "no longer found (remove it, or rewrite the baseline)\n"
                )
        sys.stdout.write(text)
    print_errors(errors)  # on stderr in every format: JSON and SARIF carry them on stdout too
