"""Summaries pickled so that loading them makes one object per identifier and reference.

The extractor makes a fresh tuple for every reference it meets, and a pickle keeps only the
sharing it is given: loaded back, every `("self", "tp_group", "all_reduce")` of every file is
a tuple of its own, and on a large program such copies are most of a run's memory
(`benchmarks/README`, sixth session: sglang's loaded summaries held 8.4 M tuples, 2.2 M of
them distinct).

`dumps` writes each string, each int the interpreter does not share already, and each *plain*
tuple (of strings, None and plain tuples) as a pickle *persistent id*, equal plain tuples of
one file as one; `loads` hands each back through a `Table`, which keeps the first object
equal to it that the loading phase met. Only values whose equality is exact go through the
table: Python holds `1 == True == 1.0`, so a tuple holding a number is never merged (its
strings still are). Tuples holding anything mutable are never merged either, since something
may hold them by identity.

The table lives for one loading phase (`summary.parse.parse_all`): a dictionary of every
distinct value costs about a tenth of what sharing saves, and what it shared stays shared
after it is dropped.
"""

from __future__ import annotations

import io
import pickle
from typing import Any


class Table(dict[Any, Any]):
    """The values one loading phase has met, each its own key: looking a value up hands back
    the first one equal to it. Keys are strings, ints and plain tuples, and no key is ever
    equal to one of another type."""

    def __missing__(self, key: Any) -> Any:
        self[key] = key
        return key


def dumps(value: Any) -> bytes:
    """`value` pickled with its strings, ints and plain tuples shareable by `loads`."""
    plain: dict[int, bool] = {}  # by id: every object is alive until the dump returns
    first: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # a file's equal plain tuples: one

    def is_plain(items: tuple[Any, ...]) -> bool:
        known = plain.get(id(items))
        if known is None:
            known = plain[id(items)] = all(
                type(item) is str or item is None or (type(item) is tuple and is_plain(item))
                for item in items
            )
        return known

    def persistent_id(obj: Any) -> Any:
        kind = type(obj)
        if kind is str:
            return obj
        if kind is tuple:
            return first.setdefault(obj, obj) if is_plain(obj) else None
        if kind is int and not -5 <= obj <= 256:
            return obj
        return None

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.persistent_id = persistent_id  # type: ignore[method-assign]
    pickler.dump(value)
    return buffer.getvalue()


def loads(data: bytes, table: Table) -> Any:
    """What `dumps` wrote, its shareable values taken from (and given to) `table`."""
    unpickler = pickle.Unpickler(io.BytesIO(data))
    unpickler.persistent_load = table.__getitem__  # type: ignore[method-assign]
    return unpickler.load()
