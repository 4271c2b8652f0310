"""`rankguard rounds`: the round functions and every collective each round reaches.

A configured round function without a `while` loop is a round by its whole body
(`analysis.reach.round_scope`; `scope` says which). With no `rounds` configured (and no
`--round`), the rounds are discovered, as `check` does, and announced on stderr; `--discover`
lists every candidate with its evidence instead (exit 2 when there is none, saying what to
configure). Configured rounds that reach no collective are named on stderr and in `warnings`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rankguard.analysis.discovery import Discovery, none_found_message, require_rounds
from rankguard.analysis.rounds import Round, find_rounds, round_warnings
from rankguard.commands._shared import (
    announce,
    emit_json,
    load_from_path,
    print_errors,
    print_warnings,
)
from rankguard.core.errors import InputError
from rankguard.rules.base import RuleContext

NAME = "rounds"
HELP = "list round functions and the collective events each round reaches, with call chains"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", type=Path, metavar="PATH")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--round",
        action="append",
        metavar="PATTERN",
        help="fnmatch pattern over qualified names (repeatable; overrides config `rounds`)",
    )
    parser.add_argument(
        "--discover",
        action="store_true",
        help="list the round candidates discovery finds, with their evidence, and which are used",
    )


def render_candidates(found: Discovery) -> str:
    used = {c.qualname for c in found.used}
    lines: list[str] = []
    for cand in found.candidates:
        mark = "used" if cand.qualname in used else "not used"
        lines.append(f"{cand.qualname}  ({cand.path}:{cand.line})  score {cand.score}, {mark}")
        lines += [f"    {item}" for item in cand.evidence()]
    return "\n".join(lines) + "\n"


def render_text(rounds: list[Round]) -> str:
    lines: list[str] = []
    for rnd in rounds:
        fn = rnd.function
        scope = "whole body, run once per round" if rnd.whole else f"loop at line {rnd.loop.line}"
        lines.append(f"{fn.qualname}  ({fn.path}:{fn.info.line}, {scope})")
        if not rnd.collectives:
            lines.append("  no collective reached")
        for reached in rnd.collectives:
            site, named = reached.site, reached.event.named_by
            lines.append(
                f"  {site.callee} [{site.kind}]  {site.path}:{site.line}"
                f"  (event: {reached.event.entered} at {named.path}:{named.line})"
            )
            for hop in reversed(reached.chain):  # innermost first, as a stack reads
                lines.append(f"      at {hop.text()}")
            if len(reached.primitives) > 1:
                sites = ", ".join(f"{e.site.path}:{e.site.line}" for e in reached.primitives[1:])
                lines.append(f"      and below the event: {sites}")
        lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    config, program = load_from_path(args, args.path)
    patterns = tuple(args.round) if args.round else config.rounds
    context = RuleContext(program, config)
    if args.discover:
        found = context.discovery
        if not found.candidates:
            raise InputError(none_found_message(args.path.as_posix()))
        if args.format == "json":
            emit_json(
                {
                    "candidates": [c.to_json() for c in found.candidates],
                    "used": [c.qualname for c in found.used],
                    "errors": [e.to_json() for e in program.errors],
                }
            )
        else:
            print(render_candidates(found), end="")
            print_errors(program.errors)
        return 2 if program.errors else 0
    origin = "--round" if args.round else str(config.source or args.path)
    discovered = require_rounds(
        program, patterns, lambda: context.discovery, origin, lambda: context.reach
    )
    if discovered is not None:
        announce(discovered)
    chosen = patterns or context.round_patterns
    rounds = find_rounds(
        program, chosen, context.collectives, context.reach, configured=bool(patterns)
    )
    warnings = round_warnings(program, rounds, chosen, bool(patterns))
    print_warnings(warnings)
    if args.format == "json":
        payload = {
            "rounds": [r.to_json() for r in rounds],
            "errors": [e.to_json() for e in program.errors],
        }
        if warnings:  # an extra field (DESIGN 4): rounds that reach no collective
            payload["warnings"] = [w.to_json() for w in warnings]
        emit_json(payload)
    else:
        print(render_text(rounds), end="")
        print_errors(program.errors)
    return 2 if program.errors else 0
