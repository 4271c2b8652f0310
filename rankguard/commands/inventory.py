"""`rankguard inventory relocate|census`: audit tables checked against a pinned revision.

relocate: find each row's literal in emitting calls at `--pin`, classify the row, tell whether
its sites are reachable from the rounds, and regenerate the table. Exit 1 when a row is not
`held`. census: count bare and genuine hits of each row in logs. Exit 1 when a row is not `held`
(its counts rest on a relocated or missing site). Either exits 2 on an input error, including
malformed rows (reported after the output, which still covers every good row).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rankguard.analysis.inventory.table import Inventory, read_inventory
from rankguard.commands._shared import emit_json, load_config, print_errors, write_output
from rankguard.core.errors import InputError
from rankguard.model.load import make_cache
from rankguard.pipelines import inventory as pipeline
from rankguard.reports import inventory as render

NAME = "inventory"
HELP = "relocate audit-table rows by emitted literal at a pin, and count genuine log emissions"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inventory", type=Path, metavar="INVENTORY", help="Markdown, CSV or JSON")
    parser.add_argument("--repo", type=Path, required=True, metavar="R", help="git repository")
    parser.add_argument("--pin", required=True, metavar="REV", help="revision to relocate at")
    # The global options again, so they may also follow the action's name; SUPPRESS keeps a
    # value given before the action from being reset to the default.
    hidden = {"default": argparse.SUPPRESS, "help": argparse.SUPPRESS}
    parser.add_argument("--config", type=Path, **hidden)
    parser.add_argument("--cache-dir", type=Path, **hidden)
    parser.add_argument("--no-cache", action="store_true", **hidden)
    parser.add_argument(
        "--across-fields",
        action="store_true",
        help="let a literal span format fields (fields match anything)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    rel = sub.add_parser(
        "relocate", help="relocate rows by literal, classify them, regenerate the table"
    )
    _common(rel)
    rel.add_argument(
        "--round",
        action="append",
        metavar="PATTERN",
        help="fnmatch pattern over qualified names (repeatable; overrides config `rounds`)",
    )
    rel.add_argument("--format", choices=("md", "json"), default="md")
    rel.add_argument("-o", "--output", type=Path, metavar="OUT", help="write here, not stdout")
    rel.add_argument(
        "--in-place", action="store_true", help="rewrite the (Markdown) inventory itself"
    )
    cen = sub.add_parser("census", help="count bare and genuine hits of each row in logs")
    _common(cen)
    cen.add_argument("logs", nargs="+", type=Path, metavar="LOG")
    cen.add_argument("--format", choices=("text", "json", "md"), default="text")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _destination(args: argparse.Namespace, inv: Inventory) -> Path | None:
    """Where relocate writes (None: stdout); refuses to overwrite the input by accident."""
    if args.in_place:
        if args.output is not None:
            raise InputError("--in-place and -o are exclusive")
        if inv.format != "md" or args.format != "md":
            raise InputError("--in-place rewrites Markdown inventories only (with --format md)")
        return args.inventory
    if args.output is not None and _same_file(args.output, args.inventory):
        raise InputError(f"{args.output}: is the inventory itself; pass --in-place to rewrite it")
    return args.output


def _load(args: argparse.Namespace) -> tuple[Inventory, pipeline.Pinned, object]:
    config = load_config(args, args.repo)
    inv = read_inventory(args.inventory)
    cache = make_cache(args.cache_dir, enabled=not args.no_cache)
    return inv, pipeline.load_pinned(args.repo, args.pin, config, cache), config


def _exit(outcome: pipeline.Outcome) -> int:
    if outcome.errors:
        return 2
    return 1 if any(rel.status != "held" for rel in outcome.relocations) else 0


def run_relocate(args: argparse.Namespace) -> int:
    inv, pinned, config = _load(args)
    destination = _destination(args, inv)
    outcome = pipeline.relocate(inv, pinned, config, args.round, args.across_fields)
    if args.format == "json":
        if destination is None:
            emit_json(render.relocate_json(outcome))
        else:
            with _open_out(destination) as handle:
                emit_json(render.relocate_json(outcome), handle)
    else:
        write_output(render.regenerate_markdown(inv, outcome), destination)
        for line in render.relocate_text_changes(outcome) + render.relocate_text_warnings(outcome):
            print(line, file=sys.stderr)
    print_errors(outcome.errors)
    return _exit(outcome)


def _open_out(path: Path):
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def run_census(args: argparse.Namespace) -> int:
    inv, pinned, config = _load(args)
    outcome = pipeline.relocate(inv, pinned, config, None, args.across_fields, reach=False)
    pipeline.census(outcome, args.logs, args.across_fields)
    if args.format == "json":
        emit_json(render.census_json(outcome))
    elif args.format == "md":
        sys.stdout.write(render.census_markdown(outcome))
    else:
        sys.stdout.write(render.census_text(outcome))
    print_errors(outcome.errors)
    return _exit(outcome)


def run(args: argparse.Namespace) -> int:
    if args.action == "relocate":
        return run_relocate(args)
    return run_census(args)
