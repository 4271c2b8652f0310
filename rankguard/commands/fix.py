"""`rankguard fix stamp-watchdog`: add the watchdog stamps `unwatched-collective` asks for.

Check-only by default, so a pre-commit hook can run it: exit 1 when a file would change (the
files are listed; `--diff` prints a unified diff), 0 when nothing is missing. Files are written
only with `--write` (then exit 0 once written). A file that no longer parses is an error (exit 2).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext

from rankguard.codemods.stamp_watchdog import StampSite, StampWatchdogCommand, sites_from_findings
from rankguard.commands._shared import load_from_path, print_errors
from rankguard.rules.engine import run_rules
from rankguard.rules.unwatched_collective import UnwatchedCollective

NAME = "fix"
HELP = "apply codemods for reported findings (stamp-watchdog: add missing watchdog stamps)"
FIXES = ("stamp-watchdog",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fix", choices=FIXES, metavar="FIX", help="stamp-watchdog")
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", default=[Path(".")])
    parser.add_argument("--diff", action="store_true", help="print a unified diff of the changes")
    parser.add_argument("--write", action="store_true", help="write the changed files")


def stamp_source(source: str, sites: list[StampSite], hooks: tuple[str, ...], path: str) -> str:
    """The file's source with every site stamped (unchanged when nothing applies)."""
    context = CodemodContext(filename=path)
    hook = hooks[0] if hooks else None
    command = StampWatchdogCommand(context, hook=hook, sites=sites)
    return command.transform_module(cst.parse_module(source)).code


def _changes(path: Path, args: argparse.Namespace) -> tuple[list[tuple[Path, str, str]], int]:
    config, program = load_from_path(args, path)
    print_errors(program.errors)
    if not config.watchdog_hooks:
        print(
            f"rankguard: {path}: no `watchdog-hooks` configured: nothing to stamp", file=sys.stderr
        )
        return [], 0
    result = run_rules(program, config, [UnwatchedCollective])
    if result.failures:
        print_errors(result.failures)
        return [], 1
    sites = sites_from_findings([f.to_json() for f in result.findings])
    root = Path(program.root)
    out: list[tuple[Path, str, str]] = []
    failed = 0
    for rel in sorted({s.path for s in sites}):
        file = root / rel
        mine = [s for s in sites if s.path == rel]
        before = file.read_text("utf-8")
        try:
            after = stamp_source(before, mine, config.watchdog_hooks, str(file))
        except cst.ParserSyntaxError as exc:
            print(f"rankguard: {rel}: cannot parse: {exc.message}", file=sys.stderr)
            failed += 1
            continue
        if after != before:
            out.append((file, before, after))
    return out, failed


def run(args: argparse.Namespace) -> int:
    changed: list[tuple[Path, str, str]] = []
    failed = 0
    for path in args.paths:
        found, bad = _changes(path, args)
        changed.extend(found)
        failed += bad
    for file, before, after in changed:
        if args.diff:
            sys.stdout.writelines(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    fromfile=f"a/{file}",
                    tofile=f"b/{file}",
                )
            )
        if args.write:
            file.write_text(after, "utf-8")
            print(f"stamped {file}", file=sys.stderr)
        elif not args.diff:
            print(f"would stamp {file}")
    if failed:
        return 2
    if changed and not args.write:
        return 1
    return 0
