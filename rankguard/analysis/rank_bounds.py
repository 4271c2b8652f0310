"""A dimension of one rank has only rank 0.

A rank id is below its group's size, so where the round knows a dimension's size is at most one
(`get_config().pp_size > 1` is false in the loop the dispatcher picks otherwise), the rank read
through the same receiver (`get_config().pp_rank`) is 0, and a later stage's branch
(`if pp_rank > 0: recv(...)`) is not on the round's path. Names pair by the rank-source
catalog's dimension spellings (`rank_sources.toml`: `pp_size`/`pp_rank`, `world_size`/`rank`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.facts import Cond, truth
from rankguard.summary.ir import CALL

_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def lone_ranks(facts: Mapping[Cond, Any], catalog: RankSourceCatalog) -> dict[Cond, Any]:
    """`rank == 0` for each size the facts bound by one."""
    out: dict[Cond, Any] = {}
    for cond, value in facts.items():
        size = _size_of_one(cond, value)
        if size is None:
            continue
        call = size[-1] == CALL
        name = size[-2] if call else size[-1]
        rank = catalog.rank_beside(name)
        if rank is not None:
            head = size[:-2] if call else size[:-1]
            out[("ref", (*head, rank, *((CALL,) if call else ())))] = 0
    return out


def _size_of_one(cond: Cond, value: Any) -> tuple[str, ...] | None:
    """The reference a fact says is at most 1 (`x <= 1`, `x < 2`, `x == 1` truthy; `x` = 1)."""
    if cond[0] == "ref":
        exact = isinstance(value, int) and not isinstance(value, bool) and value <= 1
        return cond[1] if exact else None
    if cond[0] != "cmp" or len(cond[1]) != 1 or truth(value) is not True:
        return None
    op, (left, right) = cond[1][0], cond[2]
    if left[0] == "const" and right[0] == "ref":
        op, left, right = _MIRRORED[op], right, left
    if left[0] != "ref" or right[0] != "const":
        return None
    bound = right[1]
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    limit = {"<=": 1, "==": 1, "<": 2}.get(op)
    return left[1] if limit is not None and bound <= limit else None
