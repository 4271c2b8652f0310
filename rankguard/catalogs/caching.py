"""The caching catalog (`caching.toml`): decorators that cache, calls that wrap a function in a
cache, and the functions that run once at start-up. Blocking and staleness read the same list."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cache

from rankguard.catalogs.catalog import load_toml
from rankguard.core.errors import InputError

_KEYS = {"decorators", "wrappers", "start-up"}


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


def _names(data: dict, key: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(f"caching.toml: `{key}` must be a list of names")
    return value


@cache
def caching_catalog() -> CachingCatalog:
    data = load_toml("caching.toml")
    unknown = set(data) - _KEYS
    if unknown:
        raise InputError(f"caching.toml: unknown key(s) {sorted(unknown)}")
    return CachingCatalog(
        frozenset(_names(data, "decorators")),
        frozenset(_names(data, "wrappers")),
        tuple(_names(data, "start-up")),
    )
