"""Stable rule codes and the redirect table, so a name can change without breaking anyone.

Every rule has a code beside its name (`RG101` beside `blocking-before-collective`, as ruff
has `F401` beside `unused-import`). Wherever a user names a rule (`--select`, `--ignore`,
`# rankguard: ignore[...]`, a baseline's rule column) the name, the code and any old name in
`REDIRECTS` all mean the same rule. Renaming a rule adds a row to `REDIRECTS`; a code is never
reused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rankguard.core.errors import InputError
from rankguard.rules.base import Rule

# Old rule name (or retired code) -> the current name. Add a row when a rule is renamed.
REDIRECTS: dict[str, str] = {}
CODE = re.compile(r"^[A-Z]{1,4}[0-9]{3,4}$")


def aliases(rule: type[Rule]) -> set[str]:
    """Every spelling that names `rule`: its name, its code and the old names redirected to it."""
    out = {rule.name, *([rule.code] if rule.code else [])}
    return out | {old for old, new in REDIRECTS.items() if new == rule.name}


def alias_table(rules: Iterable[type[Rule]]) -> dict[str, str]:
    """Spelling -> current rule name, for the rules given."""
    return {alias: rule.name for rule in rules for alias in sorted(aliases(rule))}


def resolve_names(tokens: Iterable[str], rules: Iterable[type[Rule]]) -> list[str]:
    """Names, codes or old names -> current names; an unknown one is an error naming it."""
    table = alias_table(rules)
    out: list[str] = []
    for token in tokens:
        if token not in table:
            known = ", ".join(sorted(f"{n} ({c})" for c, n in table.items() if CODE.match(c)))
            raise InputError(f"unknown rule '{token}' (known rules: {known or 'none'})")
        out.append(table[token])
    return out


def check_codes(rules: Iterable[type[Rule]]) -> None:
    """Codes are well-formed and unique; two rules sharing one is an error naming both."""
    owner: dict[str, type[Rule]] = {}
    for rule in rules:
        if not rule.code:
            continue
        if not CODE.match(rule.code):
            raise InputError(f"rule '{rule.name}': code '{rule.code}' is not like RG101")
        have = owner.setdefault(rule.code, rule)
        if have is not rule:
            raise InputError(f"rules '{have.name}' and '{rule.name}' share the code {rule.code}")
