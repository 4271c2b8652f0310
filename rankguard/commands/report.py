"""`rankguard report`: what a pull request changes, base vs head, for a PR comment or for CI.

Both revisions are read from git objects (no checkout: a dirty or bare repository is fine) and
share the parse cache. Sections: findings new / resolved / moved (by fingerprint), staleness
rows new or changed, emitted literals added / removed / changed / moved, inventory rows broken
(`--inventory`), ruff parity on the changed files; a one-line verdict on top.

Configuration comes from `--config` (a file the user trusts), else from the base revision's git
objects, never from the working tree: in CI that is the pull request's head, and a change must
not choose its own judge (`pipelines.report.trust`). Plugins that would run code from the
analysed repository need `--allow-local-plugins`. The same configuration serves both sides, so
differences are the code's. Exit codes follow `--fail-on`: `new` (default) exits 1 when the
head adds a finding, `any` when the head has any finding, `none` never; an error (a head file
that does not parse, ruff failing, a malformed inventory row, no round at head) exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rankguard.analysis.inventory.table import read_inventory
from rankguard.commands._shared import announce, print_errors, write_output
from rankguard.model.load import make_cache
from rankguard.pipelines.report import build_report
from rankguard.pipelines.report.build import FAIL_ON
from rankguard.pipelines.report.staleness import audit_rows
from rankguard.pipelines.report.trust import report_config
from rankguard.reports.render import render_html, render_markdown
from rankguard.reports.sarif import render
from rankguard.rules.engine import choose
from rankguard.rules.registry import all_rules

NAME = "report"
HELP = "per-pull-request report, base vs head: new findings, staleness, literals, ruff parity"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path("."), metavar="R", help="git repository")
    parser.add_argument("--base", required=True, metavar="REV", help="the revision merged into")
    parser.add_argument("--head", required=True, metavar="REV", help="the proposed revision")
    parser.add_argument("--format", choices=("md", "html", "json", "sarif"), default="md")
    parser.add_argument("-o", "--output", type=Path, metavar="OUT", help="write here, not stdout")
    parser.add_argument(
        "--inventory", type=Path, metavar="FILE", help="also list the rows of this audit table "
        "(Markdown, CSV or JSON) whose relocation the change alters"
    )  # fmt: skip
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="new",
        help="exit 1 on new findings (default), on any finding at head, or never",
    )
    parser.add_argument(
        "--allow-local-plugins",
        action="store_true",
        help="run config plugins whose code lives in the analysed repository (off: a pull "
        "request could run its own code in the CI job)",
    )
    parser.add_argument(
        "--subdir",
        default="",
        metavar="DIR",
        help="analyse only this folder of the repository (paths are then relative to it)",
    )


def run(args: argparse.Namespace) -> int:
    config = report_config(args.repo, args.base, args.subdir, args.config, args.allow_local_plugins)
    rules = choose(all_rules(config))
    inventory = read_inventory(args.inventory) if args.inventory is not None else None
    cache = make_cache(args.cache_dir, enabled=not args.no_cache)
    report = build_report(
        args.repo,
        args.base,
        args.head,
        config,
        cache,
        rules,
        subdir=args.subdir,
        inventory=inventory,
        staleness_source=audit_rows,
    )
    if report.head.discovery is not None:
        announce(report.head.discovery)
    data = report.to_json()
    if args.format == "json":
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    elif args.format == "sarif":
        sarif = render(report.findings.new, rules, report.errors)
        text = json.dumps(sarif, indent=2, sort_keys=True) + "\n"
    elif args.format == "html":
        text = render_html(data)
    else:
        text = render_markdown(data)
    write_output(text, args.output)
    if args.output is not None or args.format != "md":
        print(data["summary"]["text"], file=sys.stderr)
    print_errors(report.errors)
    return report.exit_code(args.fail_on)
