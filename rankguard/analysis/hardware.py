"""Branches on the hardware platform, decided for the platforms the run analyses.

`if is_npu():`, `if _is_hip:`, `elif current_platform.is_rocm():` pick a platform's path at run
time; on a CUDA deployment those sides never run, and their waits are no stragglers there. The
predicates inside a condition (through `not`, `and`, `or`) are handed to the facts
(`model.facts`) with the rest of what is known, like the group-size facts of `single_rank`.
"""

from __future__ import annotations

from typing import Any

from rankguard.catalogs.platforms import Platforms
from rankguard.model.facts import FALSY, TRUTHY, Cond, leaf_facts
from rankguard.summary.ir import CALL


def platform_facts(cond: Cond, platforms: Platforms) -> dict[Cond, Any]:
    """The platform predicates inside `cond`, each with its value on the selected platforms."""

    def decide(part: Cond) -> Any:
        value = platforms.predicate(part[1][-1]) if _predicate(part) else None
        return None if value is None else (TRUTHY if value else FALSY)

    return leaf_facts(cond, decide)


def _predicate(part: Cond) -> bool:
    """A call with no arguments (`is_npu()`, `current_platform.is_rocm()`), a module flag
    (`_is_hip`: a private global, not a parameter someone named `is_cpu`), or an attribute of
    what a bare getter returns (`get_platform().is_hip`); not an object's own attribute
    (`tensor.is_cpu`, `buf.contiguous().is_cuda` say where one tensor lives)."""
    tag = part[0] if part else None
    if tag == "call":
        return bool(part[1]) and not part[2] and not part[3]
    if tag == "ref":
        segs = part[1]
        if len(segs) == 1:
            return segs[0].startswith("_")
        return len(segs) == 3 and segs[1] == CALL
    return False
