"""Branches on the hardware platform, decided for the platforms the run analyses.

`if is_npu():`, `if _is_hip:`, `elif current_platform.is_rocm():` pick a platform's path at run
time; on a CUDA deployment those sides never run, and their waits are no stragglers there. The
predicates inside a condition (through `not`, `and`, `or`) are handed to the facts
(`model.facts`) with the rest of what is known, like the group-size facts of `single_rank`.
A probe the object's construction stores (`self.is_npu = is_npu()`) is a class invariant
(`StoredProbes`, given with the asserts of `analysis.context`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rankguard.analysis.stability import (
    ANY_NAME,
    COMPUTED_NAME,
    CONSTRUCTORS,
    SELF,
    Stability,
    class_of,
    statement_writes,
)
from rankguard.catalogs.platforms import Platforms
from rankguard.model.facts import FALSY, TRUTHY, Cond, evaluate, leaf_facts, truth
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, walk_statements


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


class StoredProbes:
    """Platform probes a class's construction stores on the object (`self.is_npu = is_npu()`,
    `self.use_aiter = get_bool_env(...) and _is_hip`), where nothing reassigns them after
    construction (`analysis.stability`): `if self.is_npu and ...:` is decided like `is_npu()`.

    Sound where unsure: every write of the attribute during the construction of any class whose
    methods may run on the object must store the same decided truth (a subclass's constructor
    setting it otherwise, an `or` the probe leaves to its other side, `batch.is_cpu`, a
    `setattr` there: no fact), one of them a constructor's own top-level statement in the
    class's MRO, and none is given to construction itself (it may read before the write)."""

    def __init__(self, program: Program, stability: Stability, platforms: Platforms) -> None:
        self.program = program
        self.stability = stability
        self.platforms = platforms
        self._facts: dict[str, dict[Cond, Any]] = {}
        self._construction: dict[str, list[FunctionRecord]] | None = None

    def facts(self, record: FunctionRecord) -> dict[Cond, Any]:
        """What `self.<attr>` holds on entry to `record` (a method) for each stored probe."""
        cls = class_of(record)
        if cls is None or cls not in self.program.classes:
            return {}
        if record.qualname in self.stability.construction():
            return {}
        found = self._facts.get(cls)
        if found is None:
            found = self._stored(cls)
            self._facts[cls] = found
        return found

    def _stored(self, cls: str) -> dict[Cond, Any]:
        values: dict[str, set[Any]] = defaultdict(set)
        assigned: set[str] = set()  # set by a top-level statement of a constructor in the MRO
        mro = set(self.program.mro(cls))
        related = self.stability.related(cls)
        by_class = self._by_class()
        for owner in sorted(related):
            for record in by_class.get(owner, ()):
                self._note(record, owner in mro, values, assigned)
        if _REFLECTED in values:
            return {}  # `setattr(self, name, v)`, `self.__dict__.update(...)`: names in data
        return {
            ("ref", (SELF, attr)): value
            for attr, decided in sorted(values.items())
            if attr in assigned and len(decided) == 1
            for value in decided
            if value is not None and self.stability.settled(cls, attr)
        }

    def _by_class(self) -> dict[str, list[FunctionRecord]]:
        """Each class's construction functions (`Stability.construction`)."""
        if self._construction is None:
            found: dict[str, list[FunctionRecord]] = defaultdict(list)
            for name in sorted(self.stability.construction()):
                record = self.program.functions[name]
                owner = class_of(record)
                if owner is not None:
                    found[owner].append(record)
            self._construction = dict(found)
        return self._construction

    def _note(
        self,
        record: FunctionRecord,
        in_mro: bool,
        values: dict[str, set[Any]],
        assigned: set[str],
    ) -> None:
        """What one construction function stores in each attribute of `self` (None: what it
        stores is not decided: a part of it, a mutation, a `setattr`), or that it may store
        into any by reflection (`Stability`'s writes)."""
        body = record.info.body
        for stmt in walk_statements(body):
            for target in statement_writes(stmt):
                if target[:1] != (SELF,) or len(target) < 2:
                    continue
                if target[-1] in (ANY_NAME, COMPUTED_NAME):
                    values[_REFLECTED].add(None)
                    continue
                whole = stmt.kind == "assign" and stmt.targets == (target,) and len(target) == 2
                values[target[1]].add(self._truth(stmt.tree) if whole else None)
                top = any(stmt is s for s in body) and record.info.name in CONSTRUCTORS
                if whole and top and in_mro:
                    assigned.add(target[1])

    def _truth(self, tree: Cond) -> Any:
        """TRUTHY / FALSY where the platform probes in `tree` decide its truth (None: not)."""
        facts = platform_facts(tree, self.platforms)
        value = truth(evaluate(tree, facts)) if facts else None
        return None if value is None else (TRUTHY if value else FALSY)


_REFLECTED = "<reflected>"  # no attribute's name: construction sets some by reflection
