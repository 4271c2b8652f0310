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

from rankguard.analysis.intervals import comparison
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.facts import Cond, truth
from rankguard.summary.ir import CALL


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
    """The reference a fact says is exactly 1 (`x == 1`, `x <= 1`, `x < 2` truthy, `x` = 1):
    a size of 0 or less is a sentinel (`world_size <= 0`: take it from the environment), not
    a group of one."""
    if cond[0] == "ref":
        return cond[1] if value == 1 and not isinstance(value, bool) else None
    compared = comparison(cond)
    if compared is None or truth(value) is not True:
        return None
    name, op, bound = compared
    return name[1] if (op, bound) in (("==", 1), ("<=", 1), ("<", 2)) else None
