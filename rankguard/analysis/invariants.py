"""Class invariants: what a constructor asserts about `self`, where it holds once construction
ends.

The assert is read with its helpers written in (`analysis.predicates`): a pipeline engine's
`assert self.zero_stage() < Stage.gradients`, where `zero_stage()` is `return
self._config.zero_stage`, is a fact about `self._config.zero_stage`, and decides every test of
the same written through helpers (`if self.partition_gradients():`, which returns
`self.zero_stage() >= Stage.gradients`), in the round and in the methods it calls on `self`.
A comparison's complement is known with it (`a < X` true: `a >= X` false).

Kept only where it stays true: what it reads is stable (`RoundContext.stable`; an attribute of
an object of unknown class named like an undecorated method is no property, `field_settled`),
nothing after the assert in its constructor stores it, and no other part of construction does,
but for the constructors a top-level `super().__init__()` runs before the assert (what they
store is what the assert checks), and only where no constructor of the family runs a base's
`__init__` again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankguard.analysis.constructors import (
    OLD_SUPER_INIT,
    SELF,
    SUPER_INIT,
    hands_on,
    may_leave,
    reruns,
)
from rankguard.analysis.predicates import Predicates
from rankguard.analysis.stability import CONSTRUCTORS, Stability
from rankguard.model.facts import Cond, assume, complemented, refs
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import SUBSCRIPT, Segs, Stmt, walk_calls, walk_statements

SelfFacts = Callable[[Mapping[Cond, Any], str | None], dict[Cond, Any]]


class Invariants:
    """Per program: each class's invariants, and which fields of unknown objects are settled."""

    def __init__(
        self, program: Program, stability: Stability, predicates: Predicates, self_facts: SelfFacts
    ) -> None:
        self.program = program
        self.stability = stability
        self.predicates = predicates
        self.self_facts = self_facts
        self._found: dict[str, dict[Cond, Any]] = {}
        self._fields: dict[str, bool] = {}

    def field_settled(self, attr: str) -> bool:
        """`attr` of an object of unknown class (`self._config.zero_stage`): nothing assigns
        it after construction, and no class makes it a property. A method of that name without
        decorators (an engine's `zero_stage()` getter) is no property: read without a call it
        is a bound method, never a value a test compares."""
        found = self._fields.get(attr)
        if found is None:
            functions = self.program.functions
            found = self.stability.settled(None, attr) or (
                not self.stability.writers(None, attr)
                and not any(
                    functions[c.methods[attr]].info.decorators
                    for c in self.program.classes.values()
                    if attr in c.methods and c.methods[attr] in functions
                )
            )
            self._fields[attr] = found
        return found

    def of_class(self, cls: str) -> dict[Cond, Any]:
        """What the constructors an object of `cls` runs assert about it, found once per class."""
        found = self._found.get(cls)
        if found is None:
            found = self._found[cls] = self._find(cls)
        return found

    def _find(self, cls: str) -> dict[Cond, Any]:
        out: dict[Cond, Any] = {}
        mro = self.program.mro(cls)
        for position in range(len(mro) - 1, -1, -1):
            for name in CONSTRUCTORS:
                method = self.program.classes[mro[position]].methods.get(name)
                if method is None:
                    continue
                record = self.program.functions[method]
                body = record.info.body
                for index, stmt in enumerate(body):
                    if stmt.kind != "expr" or not stmt.cond or may_leave(body[:index]):
                        continue  # past `if lazy: return`, a lazily built object skips it
                    test = self.predicates.expanded(record, stmt).cond
                    facts = self.self_facts(complemented(assume(test, True)), cls)
                    earlier = self._earlier(cls, mro[position + 1 :], method, body[:index])
                    rest = body[index + 1 :]
                    out.update(
                        (c, v)
                        for c, v in facts.items()
                        if self._kept_after(cls, method, earlier, rest, c)
                    )
        return out

    def _earlier(
        self, cls: str, bases: Sequence[str], constructor: str, before: Sequence[Stmt]
    ) -> frozenset[str]:
        """The construction functions that run only inside a top-level `super().__init__()`
        (or its old spelling in the constructor's own class, `super(Pipe, self).__init__()`)
        before the assert (`before`: what precedes it), so before it; none where a constructor
        of the family may run a base's `__init__` again."""
        info = self.program.functions[constructor].info
        if info.name != "__init__" or not hands_on(tuple(before), info.cls):
            return frozenset()
        classes, functions = self.program.classes, self.program.functions
        for other in self.stability.related(cls):
            init = classes[other].methods.get("__init__") if other in classes else None
            if init is not None and _reruns(functions[init]):
                return frozenset()
        return self.stability.inside_super(tuple(bases))

    def _kept_after(
        self,
        cls: str,
        constructor: str,
        earlier: frozenset[str],
        rest: Sequence[Stmt],
        cond: Cond,
    ) -> bool:
        """Nothing after the assert in its constructor, and no other part of construction but
        what ran before it (`earlier`), writes what it reads (a helper, a subclass's
        constructor run after `super().__init__()`)."""
        read = [s for s in refs(cond) if s[0] == SELF and len(s) >= 2]
        names = {s[1] for s in read}
        for stmt in walk_statements(rest):  # `self._config.pipeline[k] = v` keeps `_config.stage`
            for t in stmt.targets:
                if t[:1] == (SELF,) and any(_overlap(t, s) for s in read):
                    return False
        related = self.stability.related(cls)
        writes = self.stability.construction_writes()
        return all(
            function in (constructor, *earlier) or owner not in related
            for name in names
            for function, owner in writes.get(name, ())
        )


def _overlap(target: Segs, read: Segs) -> bool:
    """A store to `target` may change what `read` reads: one is a prefix of the other. An item
    store (`self._config["stage"] = 3`) may write any key, and an attribute-style config
    (AttrDict, OmegaConf) reads keys as fields: it counts from its container up."""
    if SUBSCRIPT in target:
        target = target[: target.index(SUBSCRIPT)]
    size = min(len(target), len(read))
    return target[:size] == read[:size]


def _reruns(record: FunctionRecord) -> bool:
    """A constructor runs some `__init__` again (`stability.reruns`), but for the old spelling
    of `super().__init__()` in its own class (`super(Engine, self).__init__()`)."""
    body = record.info.body
    if not reruns(body):
        return False
    calls = list(walk_calls(body))
    own = any(
        c.target == ("super",) and c.operands and c.operands[0].ref == (record.info.cls,)
        for c in calls
    )
    named = [c for c in calls if c.target[-1:] == ("__init__",) and c.target != SUPER_INIT]
    return not own or any(c.target != OLD_SUPER_INIT for c in named)
