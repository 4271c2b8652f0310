"""Line-free identities of IR records: what an edit above a function does not change.

Kept analyses (`analysis.function_keys`, the uniformity walks) and per-function resolution
reuse (`model.load`) key a function by its record with every line made relative to a base
line, so code that only moved keeps its key.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from rankguard.summary.ir import FileSummary, FunctionInfo

_ATOMS = (str, int, float, bool, type(None), bytes)
_FIELDS: dict[type, tuple[str, ...]] = {}


def digest(*parts: str) -> str:
    hashed = hashlib.blake2b(digest_size=20)
    for part in parts:
        hashed.update(part.encode("utf-8", "surrogatepass"))
        hashed.update(b"\0")
    return hashed.hexdigest()


def lineless(value: Any, base: int) -> Any:
    """`value` (an IR record, or tuples of them) as plain tuples, with every line number made
    relative to `base`; columns and everything else kept."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple or kind is list:
        return tuple(lineless(v, base) for v in value)
    if kind is dict:
        return tuple((lineless(k, base), lineless(v, base)) for k, v in value.items())
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return repr(value)
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
    out: list[Any] = [kind.__name__]
    for name in names:
        item = getattr(value, name)
        if name in ("line", "end_line"):
            out.append(item - base)
        elif name == "value_refs" and kind is FunctionInfo:
            out.append(tuple((segs, line - base) for segs, line in item))
        else:
            out.append(lineless(item, base))
    return tuple(out)


def function_digests(summary: FileSummary) -> dict[str, str]:
    """Each function of a file by its line-free digest, which covers the functions that
    enclose it too (a nested function reads their locals): a function keeps its digest
    while nothing but lines changed in it and around it. Computed once per summary (at
    parse time, so it is cached with it)."""
    found = summary.facts.get("digests")
    if not isinstance(found, dict):
        found = summary.facts["digests"] = _function_digests(summary)
    return found


def _function_digests(summary: FileSummary) -> dict[str, str]:
    infos = {info.qualname: info for info in summary.functions}
    found: dict[str, str] = {}
    own: dict[str, str] = {}
    for qual, info in infos.items():
        own[qual] = repr(lineless(info, info.line))
    for qual in infos:
        parts = qual.split(".<locals>.")
        chain = [".<locals>.".join(parts[: i + 1]) for i in range(len(parts))]
        found[qual] = digest(*(f"{q}\0{own.get(q, '')}" for q in chain))
    return found
