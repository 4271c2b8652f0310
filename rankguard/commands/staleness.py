"""`rankguard staleness`: the staleness direction of every driver term, cached or not."""

from __future__ import annotations

import argparse
from pathlib import Path

from rankguard.analysis.staleness import StalenessReport, TermRow, staleness
from rankguard.commands._shared import emit_json, load_from_path, print_errors

NAME = "staleness"
HELP = "list driver terms, the sign with which each reaches its consumers, and cached-term verdicts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", type=Path, metavar="PATH")
    parser.add_argument("--format", choices=("text", "json", "md"), default="text")


def _cached(row: TermRow) -> str:
    if row.cache is None:
        return "no"
    where = row.cache.where.rsplit(".", 1)[-1] if row.cache.kind != "memo" else row.cache.where
    return f"yes: {row.cache.kind} ({where})"


def _term(row: TermRow) -> str:
    if row.composite is not None:
        return f"{row.term} = {row.composite.expression}"
    return row.term


def render_text(report: StalenessReport) -> str:
    lines: list[str] = []
    for row in report.rows:
        flag = "  [smaller is risky]" if row.smaller_is_risky else ""
        lines.append(
            f"{row.verdict:7} {row.operation:10} {row.stale_larger:7} {_term(row)}"
            f"  ({row.term_path}:{row.term_line})"
        )
        lines.append(f"        consumer {row.function} ({row.path}:{row.line}){flag}")
        lines.append(f"        cached   {_cached(row)}")
        lines.append("        chain    " + " -> ".join(h.function for h in row.chain))
    unsafe = len(report.unsafe_cached)
    lines.append(f"{len(report.rows)} rows, {unsafe} cached and unsafe")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_md(report: StalenessReport) -> str:
    lines = [
        "| term | term site | consumer | consumer site | operation | stale_larger | cached "
        "| verdict | chain |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        chain = " → ".join(f"`{h.function}`" for h in row.chain)
        lines.append(
            f"| `{_cell(_term(row))}` | {row.term_path}:{row.term_line} | `{row.function}` "
            f"| {row.path}:{row.line} | {row.operation} | {row.stale_larger} "
            f"| {_cell(_cached(row))} | {row.verdict} | {chain} |"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    config, program = load_from_path(args, args.path)
    report = staleness(program, config)
    errors = sorted([*program.errors, *report.errors])
    if args.format == "json":
        payload = report.to_json()
        payload["errors"] = [e.to_json() for e in errors]
        emit_json(payload)
    else:
        print(render_md(report) if args.format == "md" else render_text(report), end="")
        print_errors(errors)
    if errors:
        return 2
    return 1 if report.unsafe_cached else 0
