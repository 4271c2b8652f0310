"""Which calls are driver terms: the shipped catalog plus config `driver-terms`, parsed once
here for every analysis that reads them (staleness composes their sign; uniformity treats them as
rank-local readings).

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
    errs: str = "large"  # which way a stale reading errs: large | small | either
    field_errs: tuple[tuple[str, str], ...] = ()

    def errs_of(self, field: str | None = None) -> str:
        return dict(self.field_errs).get(field, self.errs) if field else self.errs


@dataclass(frozen=True)
class TermCatalog:
    specs: tuple[TermSpec, ...]
    not_budget_calls: frozenset[str] = frozenset()
    not_budget_stores: tuple[str, ...] = ()

    def not_budget_call(self, last_name: str) -> bool:
        return last_name in self.not_budget_calls

    def not_budget_store(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pat) for pat in self.not_budget_stores)

    def patterns(self) -> list[str]:
        """Every pattern, configured ones first (what a rank-local reading may be called)."""
        return [pattern for spec in self.specs for pattern in spec.patterns]

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
    errs = entry.get("errs", "large")  # the schema holds it to large | small | either
    field_errs = entry.get("field-errs", {})
    return TermSpec(
        str(entry.get("name") or patterns[0]),
        tuple(patterns),
        element,
        tuple(fields),
        str(entry.get("reason", "")),
        configured,
        errs,
        tuple(sorted(field_errs.items())),
    )


def term_catalog(configured: tuple[Any, ...] = ()) -> TermCatalog:
    """Configured entries first (they may refine a shipped one), then the shipped catalog."""
    specs: list[TermSpec] = []
    for item in configured:
        entry = {"match": [item], "name": item} if isinstance(item, str) else dict(item)
        specs.append(_spec(entry, True, "config driver-terms"))
    data = load_catalog("driver_terms")
    for entry in data["term"]:
        specs.append(_spec(entry, False, "driver_terms.toml"))
    sinks = data.get("consumers", {})
    calls, stores = sinks.get("not-budget-calls", []), sinks.get("not-budget-stores", [])
    return TermCatalog(tuple(specs), frozenset(calls), tuple(stores))
