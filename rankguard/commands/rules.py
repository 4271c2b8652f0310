"""`rankguard rules [NAME|CODE]`: list the rules (built-in and plugins), or document one.

A rule's documentation has ruff's sections (what it does, why it is bad, an example, what to
use instead, the options it reads, whether `rankguard fix` repairs it), from
`reports.rule_docs`; `--format md` with no rule prints the whole reference (`docs/rules.md`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rankguard.commands._shared import load_config
from rankguard.reports import rule_docs
from rankguard.rules.codes import resolve_names
from rankguard.rules.engine import UnusedIgnore
from rankguard.rules.registry import all_rules

NAME = "rules"
HELP = "list the rules with their codes, or document one (by name or code)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME|CODE", help="the rule to document")
    parser.add_argument("--format", choices=("text", "json", "md"), default="text")
    parser.add_argument(
        "--path", type=Path, default=Path("."), help="where to look for the config (plugins)"
    )


def run(args: argparse.Namespace) -> int:
    rules = {**all_rules(load_config(args, args.path)), UnusedIgnore.name: UnusedIgnore}
    ordered = sorted(rules.values(), key=lambda r: (r.code or "~", r.name))
    if args.name is not None:
        ordered = [rules[name] for name in resolve_names([args.name], rules.values())]
    if args.format == "json":
        payload = [rule_docs.to_json(rule) for rule in ordered]
        print(json.dumps(payload if args.name is None else payload[0], indent=2, sort_keys=True))
    elif args.format == "md":
        if args.name is None:
            print(rule_docs.markdown_reference(ordered), end="")
        else:
            print(rule_docs.to_markdown(ordered[0]), end="")
    elif args.name is not None:
        print(rule_docs.to_text(ordered[0]), end="")
    else:
        width = max((len(rule.name) for rule in ordered), default=0)
        for rule in ordered:
            fix = "fix" if rule.fix else "   "
            print(f"{rule.code or '-':<6} {rule.name:<{width}}  {fix}  {rule.description}")
    return 0
