"""Which attributes of an object stay as its construction left them.

A fact about `self.mode` learnt before a round (the branch that selects the round, a
constructor's assert, a setting the constructor copies) holds through the round only if nothing
that may run on that object assigns `mode` again. Asking this by attribute name across the whole
program is sound but blind: one unrelated class that sets its own `pp_size` later unsettles every
class's `pp_size`. So writes are attributed to the classes they may land on:

- `self.a = ...` in a method of class `K` lands on objects whose class has `K` in its MRO;
- `x.a = ...` lands on the classes the model gives `x` (any class when it knows none);
- a write during the object's construction does not count: its constructors, and the helpers
  only constructors call on `self` (`self._init_mode()` from `__init__`).

An object of class `C` at run time is of `C` or a class derived from it, so the classes whose
methods may run on it are the MROs of those classes (mixin siblings included).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rankguard.model.program import Program
from rankguard.summary.ir import CALL, SUBSCRIPT, Segs, walk_statements

CONSTRUCTORS = frozenset(("__init__", "__post_init__", "__new__"))
SELF = "self"
_ANY = None  # a write whose receiver's class the model does not know


class Stability:
    """Per program: every attribute write outside construction, and the classes it may reach."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._writes: dict[str, list[tuple[str, Segs]]] | None = None
        self._construction: frozenset[str] | None = None
        self._related: dict[str, frozenset[str]] = {}
        self._owners: dict[tuple[str, Segs], frozenset[str] | None] = {}
        self._settled: dict[tuple[str | None, str], bool] = {}

    def settled(self, cls: str | None, attr: str) -> bool:
        """No function that may run on an object of `cls` assigns `attr` after construction
        (`cls` None: an object of unknown class, so no write anywhere)."""
        key = (cls, attr)
        found = self._settled.get(key)
        if found is None:
            related = self.related(cls) if cls else None
            found = True
            for function, target in self.writes().get(attr, ()):
                owners = self._owners_of(function, target)
                if related is None or owners is _ANY or owners & related:
                    found = False
                    break
            self._settled[key] = found
        return found

    def table(self) -> tuple[list[tuple[str, str]], list[str]]:
        """What the answers depend on, in a stable order (a key for kept summaries): each
        attribute with the class its `self` writes land on, or the function and receiver of
        another write; an edit that adds a write the table already holds changes nothing."""
        found: set[tuple[str, str]] = set()
        for attr, sites in self.writes().items():
            for function, target in sites:
                record = self.program.functions[function]
                own = target[:1] == (SELF,) and len(target) == 2 and record.info.cls
                found.add(
                    (
                        attr,
                        f"{record.module}.{record.info.cls}" if own else repr((function, target)),
                    )
                )
        return sorted(found), sorted(self.construction())

    # -- what runs on an object -----------------------------------------------------------------
    def related(self, cls: str) -> frozenset[str]:
        """Classes whose methods may run on an object of `cls`: the MRO of `cls` and of every
        class derived from it."""
        found = self._related.get(cls)
        if found is None:
            classes: set[str] = set()
            work, seen = [cls], {cls}
            while work:
                current = work.pop()
                classes.update(self.program.mro(current))
                for sub in self.program.subclasses.get(current, ()):
                    if sub not in seen:
                        seen.add(sub)
                        work.append(sub)
            found = frozenset(classes)
            self._related[cls] = found
        return found

    # -- writes ---------------------------------------------------------------------------------
    def writes(self) -> dict[str, list[tuple[str, Segs]]]:
        """attribute name -> (function, target) of each assignment that is not the object's own
        construction (a constructor setting another object's attribute still counts)."""
        if self._writes is None:
            construction = self.construction()
            found: dict[str, list[tuple[str, Segs]]] = defaultdict(list)
            for name in sorted(self.program.functions):
                record = self.program.functions[name]
                for stmt in walk_statements(record.info.body):
                    for target in stmt.targets:
                        if len(target) < 2 or target[-1] in (CALL, SUBSCRIPT):
                            continue
                        own = len(target) == 2 and target[0] == SELF
                        if own and name in construction:
                            continue
                        found[target[-1]].append((name, target))
            self._writes = dict(found)
        return self._writes

    def _owners_of(self, function: str, target: Segs) -> frozenset[str] | None:
        """The program classes the write may land on, or `_ANY`."""
        key = (function, target)
        if key in self._owners:
            return self._owners[key]
        record = self.program.functions[function]
        owners: frozenset[str] | None = _ANY
        if target[:1] == (SELF,) and len(target) == 2:
            if record.info.cls:
                owners = frozenset((f"{record.module}.{record.info.cls}",))
        else:
            values = self.program.evaluate(function, target[:-1])
            if values and all(v.kind in ("instance", "external") for v in values):
                owners = frozenset(v.name for v in values if v.kind == "instance")
        self._owners[key] = owners
        return owners

    # -- construction ---------------------------------------------------------------------------
    def construction(self) -> frozenset[str]:
        """Constructors, and methods only construction calls, each time on `self`."""
        if self._construction is None:
            functions = self.program.functions
            found = {n for n, r in functions.items() if r.info.name in CONSTRUCTORS}
            callers = self._callers()
            candidates = sorted(n for n, r in functions.items() if r.info.cls and n not in found)
            changed = True
            while changed:
                changed = False
                for name in candidates:
                    sites = callers.get(name)
                    if name in found or not sites:
                        continue
                    if all(on_self and caller in found for caller, on_self in sites):
                        found.add(name)
                        changed = True
            self._construction = frozenset(found)
        return self._construction

    def _callers(self) -> dict[str, list[tuple[str, bool]]]:
        """method -> (caller, called on `self`) for each call that may reach it; a method whose
        name some unresolved call spells may be reached from anywhere (no entry)."""
        callers: dict[str, list[tuple[str, bool]]] = defaultdict(list)
        unresolved: set[str] = set()
        for caller in sorted(self.program.calls):
            for resolved in self.program.calls[caller]:
                spelled = resolved.call.target
                if not resolved.targets:
                    unresolved.add(spelled[-1] if spelled else "")
                on_self = spelled[:-1] in ((SELF,), ("super()",))
                for target in resolved.targets:
                    callers[target.name].append((caller, on_self))
        by_name = _method_names(self.program.functions)
        for name in unresolved:
            for method in by_name.get(name, ()):
                callers.pop(method, None)
        return callers


def _method_names(functions: Iterable[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for qualname in functions:
        out[qualname.rsplit(".", 1)[-1]].append(qualname)
    return out
