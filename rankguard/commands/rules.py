"""`rankguard rules [NAME]`: list the rules (built-in and plugins), or explain one."""

from __future__ import annotations

import argparse
from pathlib import Path

from rankguard.commands._shared import load_config
from rankguard.core.errors import InputError
from rankguard.rules.base import Example, Rule
from rankguard.rules.registry import all_rules

NAME = "rules"
HELP = "list the rules, or explain one with its examples"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="the rule to explain")
    parser.add_argument(
        "--path", type=Path, default=Path("."), help="where to look for the config (plugins)"
    )


def _example(example: Example, label: str) -> list[str]:
    lines = [f"  {label}" + (f" (config: {example.config})" if example.config else "") + ":"]
    lines += [f"    {line}" for line in example.code.rstrip().splitlines()]
    return lines


def explain(rule: type[Rule]) -> str:
    lines = [rule.name, "", rule.description, ""]
    if rule.help:
        lines += [rule.help, ""]
    for i, example in enumerate(rule.INVALID, start=1):
        lines += [*_example(example, f"reported #{i}"), ""]
    for i, example in enumerate(rule.VALID, start=1):
        lines += [*_example(example, f"not reported #{i}"), ""]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    rules = all_rules(load_config(args, args.path))
    if args.name is None:
        width = max((len(n) for n in rules), default=0)
        for name, rule in rules.items():
            print(f"{name:<{width}}  {rule.description}")
        return 0
    rule = rules.get(args.name)
    if rule is None:
        raise InputError(f"unknown rule '{args.name}' (known rules: {', '.join(rules)})")
    print(explain(rule), end="")
    return 0
