"""The caching catalog (`caching.toml`): decorators that cache, calls that wrap a function in a
cache, and the functions that run once at start-up. Blocking and staleness read the same list."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cache

from rankguard.catalogs.loader import load_catalog


@dataclass(frozen=True)
class CachingCatalog:
    decorators: frozenset[str]
    wrappers: frozenset[str]
    start_up: tuple[str, ...]

    def decorator(self, segs: tuple[str, ...]) -> str | None:
        """The caching decorator's name when `segs` (as written, call stripped) is one."""
        return segs[-1] if segs and segs[-1] in self.decorators else None

    def runs_once(self, function_name: str) -> bool:
        return any(fnmatch.fnmatchcase(function_name, pat) for pat in self.start_up)


@cache
def caching_catalog() -> CachingCatalog:
    data = load_catalog("caching")  # validated against schemas/caching.schema.json
    return CachingCatalog(
        frozenset(data["decorators"]), frozenset(data["wrappers"]), tuple(data["start-up"])
    )
