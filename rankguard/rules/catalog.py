"""Catalogs as data: what is a collective (and, for other analyses, what blocks)."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def load_toml(name: str) -> dict:
    """A TOML file shipped in `rankguard/rules/`."""
    return tomllib.loads(resources.files("rankguard.rules").joinpath(name).read_text("utf-8"))


@dataclass(frozen=True)
class CollectiveCatalog:
    primitives: frozenset[str]
    point_to_point: frozenset[str]
    patterns: tuple[str, ...] = ()

    def kind(self, qualname: str) -> str | None:
        """ "collective", "p2p" or None for a resolved callee's qualified name."""
        if qualname in self.point_to_point:
            return "p2p"
        if qualname in self.primitives:
            return "collective"
        if any(fnmatch.fnmatchcase(qualname, pat) for pat in self.patterns):
            return "collective"
        return None


@cache
def _shipped() -> tuple[frozenset[str], frozenset[str]]:
    data = load_toml("collectives.toml")
    mods = data["modules"]
    coll = frozenset(f"{m}.{n}" for m in mods for n in data["collective"])
    p2p = frozenset(f"{m}.{n}" for m in mods for n in data["point-to-point"])
    return coll, p2p


def collective_catalog(extra_patterns: tuple[str, ...] = ()) -> CollectiveCatalog:
    coll, p2p = _shipped()
    return CollectiveCatalog(coll, p2p, tuple(extra_patterns))
