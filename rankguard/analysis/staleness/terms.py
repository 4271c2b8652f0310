"""Which calls are driver terms: the shipped catalog plus config `driver-terms`.

Matching is on the callee's resolved dotted name (`torch.cuda.mem_get_info`, or a project
function's qualified name such as `toysched.mem_cache.radix_cache.RadixCache.available_size`),
never on the text as written, so aliases and re-exports are seen through.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from rankguard.catalogs.loader import check_entry, load_catalog


@dataclass(frozen=True)
class TermSpec:
    name: str  # the catalog's name; a row names the callee actually matched
    patterns: tuple[str, ...]
    element: int | None = None  # the tuple item that is the term (mem_get_info: free)
    fields: tuple[str, ...] = ()  # the record attributes that are terms (NVML: free, used)
    reason: str = ""
    configured: bool = False


@dataclass(frozen=True)
class TermCatalog:
    specs: tuple[TermSpec, ...]

    def match(self, callee: str) -> TermSpec | None:
        for spec in self.specs:
            if any(fnmatch.fnmatchcase(callee, pat) for pat in spec.patterns):
                return spec
        return None


def _spec(entry: dict[str, Any], configured: bool, origin: str) -> TermSpec:
    check_entry("driver_terms", entry, origin)
    patterns = entry.get("match") or [entry.get("pattern") or entry["name"]]
    element = entry.get("element")
    fields = entry.get("fields", ())
    return TermSpec(
        str(entry.get("name") or patterns[0]),
        tuple(patterns),
        element,
        tuple(fields),
        str(entry.get("reason", "")),
        configured,
    )


def term_catalog(configured: tuple[Any, ...] = ()) -> TermCatalog:
    """Configured entries first (they may refine a shipped one), then the shipped catalog."""
    specs: list[TermSpec] = []
    for item in configured:
        entry = {"match": [item], "name": item} if isinstance(item, str) else dict(item)
        specs.append(_spec(entry, True, "config driver-terms"))
    for entry in load_catalog("driver_terms")["term"]:
        specs.append(_spec(entry, False, "driver_terms.toml"))
    return TermCatalog(tuple(specs))
