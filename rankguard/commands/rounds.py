"""`rankguard rounds`: the round functions and every collective each round reaches."""

from __future__ import annotations

import argparse
from pathlib import Path

from rankguard.analysis.rounds import Round, find_rounds
from rankguard.catalogs.catalog import collective_catalog
from rankguard.commands._shared import emit_json, load_from_path, print_errors

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


def render_text(rounds: list[Round]) -> str:
    lines: list[str] = []
    for rnd in rounds:
        fn = rnd.function
        lines.append(f"{fn.qualname}  ({fn.path}:{fn.info.line}, loop at line {rnd.loop.line})")
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
    rounds = find_rounds(program, patterns, collective_catalog(config.collectives))
    if args.format == "json":
        emit_json(
            {
                "rounds": [r.to_json() for r in rounds],
                "errors": [e.to_json() for e in program.errors],
            }
        )
    else:
        if not rounds:
            print(f"no round function matches {list(patterns)} and contains a loop")
        print(render_text(rounds), end="")
        print_errors(program.errors)
    return 2 if program.errors else 0
