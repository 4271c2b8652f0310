"""Warnings about the inventory's own pin, against the pin the user relocates at.

A table taken on another branch describes code the target may never have had; a table taken
long ago may cite files that changed since. Both are warnings, not errors: relocation by literal
still tells the truth at the target pin, but a reader should know the table's history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankguard.adapters.sources import resolve_revision
from rankguard.core.errors import InputError

_MAX_LISTED = 5


def warning(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, **extra}


def pin_warnings(repo, inventory_pin: str | None, target, cited_paths: Sequence[str]) -> list[dict]:
    """`target` is the resolved commit of `--pin`; `repo` a gitpython Repo."""
    if not inventory_pin:
        return [
            warning("no-inventory-pin", "the inventory has no `pin:` line: ancestry not checked")
        ]
    try:
        own = resolve_revision(repo, inventory_pin)
    except InputError:
        return [
            warning(
                "unknown-inventory-pin",
                f"the inventory's pin '{inventory_pin}' does not resolve in this repository: "
                "ancestry not checked",
                inventory_pin=inventory_pin,
            )
        ]
    if own.hexsha == target.hexsha:
        return []
    out: list[dict] = []
    if not repo.is_ancestor(own, target):
        bases = repo.merge_base(own, target)
        base = bases[0].hexsha if bases else None
        out.append(
            warning(
                "pin-not-ancestor",
                f"the inventory's pin {own.hexsha[:12]} is not an ancestor of "
                f"{target.hexsha[:12]}: the table was taken on another branch"
                + (f" (merge base {base[:12]})" if base else " (no common history)"),
                inventory_pin=own.hexsha,
                merge_base=base,
            )
        )
    paths = sorted(set(cited_paths))
    if paths:
        # Commits the target has and the table's pin has not, touching a cited file.
        log = repo.git.log(
            "--format=%x00%H", "--name-only", f"{own.hexsha}..{target.hexsha}", "--", *paths
        )
        commits: list[str] = []
        touched: set[str] = set()
        for entry in log.split("\x00")[1:]:
            lines = [line for line in entry.splitlines() if line.strip()]
            commits.append(lines[0])
            touched.update(lines[1:])
        if commits:
            listed = ", ".join(c[:12] for c in commits[:_MAX_LISTED])
            more = f" and {len(commits) - _MAX_LISTED} more" if len(commits) > _MAX_LISTED else ""
            out.append(
                warning(
                    "cited-files-changed",
                    f"{len(commits)} commit(s) since the inventory's pin {own.hexsha[:12]} "
                    f"touched cited files {', '.join(sorted(touched))}: {listed}{more}",
                    inventory_pin=own.hexsha,
                    commits=commits,
                    paths=sorted(touched),
                )
            )
    return out
