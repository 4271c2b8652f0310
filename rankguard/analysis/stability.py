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
from collections.abc import Iterable, Iterator

from rankguard.analysis.constructors import SELF, hands_on, may_leave, reruns
from rankguard.model.facts import Cond, member
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import (
    CALL,
    SUBSCRIPT,
    CallSite,
    Segs,
    Stmt,
    walk_calls,
    walk_statements,
)

CONSTRUCTORS = frozenset(("__init__", "__post_init__", "__new__"))
_ANY = None  # a write whose receiver's class the model does not know
UNTYPED = "<untyped>"  # the receiver of `setattr(...)` when the call does not name one
ANY_NAME = "<any attribute>"  # `obj.__dict__[k] = v`: any name
COMPUTED_NAME = "<computed name>"  # `setattr(obj, name, v)`: any name the data spells


class Stability:
    """Per program: every attribute write outside construction, and the classes it may reach."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._writes: dict[str, list[tuple[str, Segs]]] | None = None
        self._construction: frozenset[str] | None = None
        self._related: dict[str, frozenset[str]] = {}
        self._owners: dict[tuple[str, Segs], frozenset[str] | None] = {}
        self._settled: dict[tuple[str | None, str], bool] = {}
        self._construction_written: dict[str, list[tuple[str, str]]] | None = None
        self._construction_stores: dict[str, list[tuple[str, str]]] | None = None
        self._constants: dict[str, dict[str, Cond]] = {}
        self._inside: dict[tuple[str, ...], frozenset[str]] = {}
        self._callers_table: dict[str, list[tuple[str, bool]]] | None = None

    def settled(self, cls: str | None, attr: str) -> bool:
        """No function that may run on an object of `cls` assigns `attr` after construction
        (`cls` None: an object of unknown class, so no write anywhere). A property is never
        settled: it computes from state this does not follow."""
        key = (cls, attr)
        found = self._settled.get(key)
        if found is None:
            found = not self.computed(cls, attr) and not self.writers(cls, attr)
            self._settled[key] = found
        return found

    def writers(self, cls: str | None, attr: str) -> frozenset[str]:
        """The functions that may assign `attr` on an object of `cls` after its construction."""
        related = self.related(cls) if cls else None
        writes = self.writes()
        return frozenset(
            function
            for function, target in (
                *writes.get(attr, ()),
                *writes.get(ANY_NAME, ()),
                *writes.get(COMPUTED_NAME, ()),
            )
            for owners in (self._owners_of(function, target),)
            if related is None or owners is _ANY or owners & related
        )

    def computed(self, cls: str | None, attr: str) -> bool:
        """`attr` may be a property of an object of `cls`: its value follows other state."""
        return self._method(self.related(cls) if cls else None, attr)

    def _method(self, related: frozenset[str] | None, attr: str) -> bool:
        """`attr` names a method (a property) of a class whose methods may run on the object
        (of any class, when the object's class is not known)."""
        classes = self.program.classes
        owners = classes if related is None else (c for c in related if c in classes)
        return any(attr in classes[c].methods for c in owners)

    def constants(self, cls: str) -> dict[str, Cond]:
        """Attributes every object of `cls` holds a literal constant in (`False`, `None`,
        `Mode.NULL`, as a condition tree) once constructed, decided by the order construction
        runs, and nothing reassigns after: `super().__init__()` then `self.flag = False` in
        the class's own constructor, or the base's constant no later constructor touches.

        Decided only where every step is plain: the constructors run one after the other
        through a top-level `super().__init__()` (no base outside the program in between, which
        may not hand on); the deciding store is a top-level statement no early exit precedes,
        after which its constructor stores it no more and runs no `__init__`; no other part of
        construction stores it (a helper, `__post_init__`, the constructor of a class derived
        from `cls`, whose object may be the receiver); and every derived class's own
        constructor runs the one it inherits first (`super().__init__()` at its top level,
        with no early exit before; a dataclass may have a generated one that does not)."""
        found = self._constants.get(cls)
        if found is None:
            found = self._constants[cls] = self._find_constants(cls)
        return found

    def _find_constants(self, cls: str) -> dict[str, Cond]:
        classes, functions = self.program.classes, self.program.functions
        if cls not in classes:
            return {}
        mro = self.program.mro(cls)
        for other in sorted(self.related(cls) - set(mro)):
            record = classes[other]
            init = record.methods.get("__init__")
            if record.external_bases or record.info.decorators:
                return {}  # an outside constructor, or a generated one, may not hand on
            body = functions[init].info.body if init else ()
            if init and (not hands_on(body) or reruns(body)):
                return {}
        chain: list[str] = []  # the `__init__`s that run, most derived first
        decided: dict[str, tuple[Cond, int] | None] = {}  # the constant, and where in the MRO
        for index, owner in enumerate(mro):
            init = classes[owner].methods.get("__init__")
            if init is None:
                if classes[owner].external_bases or classes[owner].info.decorators:
                    break  # an outside base's or a generated constructor: it may not hand on
                continue
            chain.append(init)
            body = functions[init].info.body
            stored = {t[1] for stmt in walk_statements(body) for t in _self_stores(stmt)}
            for attr in sorted(stored - set(decided)):
                tree = None if functions[init].info.is_generator else _decider(body, attr)
                decided[attr] = (tree, index) if tree else None
            if stored & {ANY_NAME, COMPUTED_NAME}:
                break  # a name the data spells: what is stored here is not followed
            if classes[owner].external_bases or not hands_on(body) or reruns(body):
                break
        stores = self._construction_stores_of()
        related = self.related(cls)
        out: dict[str, Cond] = {}
        for attr, found in decided.items():
            if found is None or not self.settled(cls, attr):
                continue
            tree, index = found
            allowed = self.inside_super(tuple(mro[index + 1 :])) | frozenset(chain)
            writers = (
                *stores.get(attr, ()),
                *stores.get(ANY_NAME, ()),
                *stores.get(COMPUTED_NAME, ()),
            )
            if all(f in allowed for f, owner in writers if owner in related):
                out[attr] = tree
        return out

    def inside_super(self, bases: tuple[str, ...]) -> frozenset[str]:
        """What construction runs only inside a constructor's `super().__init__()`: the
        constructors of the classes after it in the MRO, and the helpers only those (or other
        such helpers) call. What they store, the constructor's own later store overrides."""
        found = self._inside.get(bases)
        if found is None:
            classes = self.program.classes
            inside = {
                classes[b].methods["__init__"] for b in bases if "__init__" in classes[b].methods
            }
            callers = self._callers()
            helpers = sorted(self.construction() - inside)
            changed = True
            while changed:
                changed = False
                for name in helpers:
                    sites = callers.get(name)
                    if name not in inside and sites and all(c in inside for c, _ in sites):
                        inside.add(name)
                        changed = True
            found = self._inside[bases] = frozenset(inside)
        return found

    def _construction_stores_of(self) -> dict[str, list[tuple[str, str]]]:
        """attribute -> (construction function, its class) for each store on `self` there:
        assignments, mutating calls, `setattr(self, ...)` (`statement_writes`)."""
        if self._construction_stores is None:
            found: dict[str, list[tuple[str, str]]] = defaultdict(list)
            for name in sorted(self.construction()):
                record = self.program.functions[name]
                owner = class_of(record)
                if owner is None:
                    continue
                for stmt in walk_statements(record.info.body):
                    for target in _self_stores(stmt):
                        found[target[1]].append((name, owner))
            self._construction_stores = dict(found)
        return self._construction_stores

    def holders(self, attr: str) -> frozenset[str]:
        """The classes whose own methods (construction included) assign `self.<attr>` by name:
        the objects known to carry that attribute."""
        functions = self.program.functions
        found = {owner for _, owner in self.construction_writes().get(attr, ())}
        for function, target in self.writes().get(attr, ()):
            owner = class_of(functions[function]) if target[:1] == (SELF,) else None
            if owner is not None:
                found.add(owner)
        return frozenset(found)

    def construction_writes(self) -> dict[str, list[tuple[str, str]]]:
        """attribute -> (construction function, its class) for each `self.a = ...` there."""
        if self._construction_written is None:
            found: dict[str, list[tuple[str, str]]] = defaultdict(list)
            for name in sorted(self.construction()):
                owner = class_of(self.program.functions[name])
                if owner is None:
                    continue
                record = self.program.functions[name]
                for stmt in walk_statements(record.info.body):
                    for target in stmt.targets:
                        if len(target) >= 2 and target[0] == SELF:
                            found[target[1]].append((name, owner))
            self._construction_written = dict(found)
        return self._construction_written

    def table(self) -> tuple[list[tuple[str, str]], list[str]]:
        """What the answers depend on, in a stable order (a key for kept summaries): each
        attribute with the class its `self` writes land on, or the function and receiver of
        another write; an edit that adds a write the table already holds changes nothing."""
        found: set[tuple[str, str]] = set()
        for attr, sites in self.writes().items():
            for function, target in sites:
                owner = class_of(self.program.functions[function])
                own = target[:1] == (SELF,) and len(target) == 2 and owner
                found.add((attr, owner if own else repr((function, target))))
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
        """attribute name -> (function, receiver + name) of each write that is not the object's
        own construction (a constructor setting another object's attribute still counts).

        A write is an assignment, an item stored into the attribute (`self.flags[k] = v`), a
        mutating method called on it (`self.queue.append(x)`), or `setattr(obj, "name", v)` /
        `object.__setattr__(obj, "name", v)`; `obj.__dict__[...] = v` may write any name."""
        if self._writes is None:
            construction = self.construction()
            found: dict[str, list[tuple[str, Segs]]] = defaultdict(list)
            for name in sorted(self.program.functions):
                record = self.program.functions[name]
                for stmt in walk_statements(record.info.body):
                    for target in statement_writes(stmt):
                        if len(target) < 2:
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
            owner = class_of(record)
            if owner is not None:
                owners = frozenset((owner,))
        elif target[:1] != (UNTYPED,):
            # Only program instances: an external call's result may be the object itself
            # (`typing.cast(S, x)`, `weakref.proxy(self)`, `type(self)`).
            values = self.program.evaluate(function, target[:-1])
            if values and all(v.kind == "instance" for v in values):
                owners = frozenset(v.name for v in values)
        if owners is _ANY and target[-1] in (ANY_NAME, COMPUTED_NAME):
            # Reflection with a computed name on a receiver the model cannot type
            # (`setattr(module, attr_name, t)`) is not followed, as an unresolved call is not:
            # taken as any name on any object it would unsettle every fact in the program.
            owners = frozenset()
        self._owners[key] = owners
        return owners

    # -- construction ---------------------------------------------------------------------------
    def construction(self) -> frozenset[str]:
        """Constructors, and methods only construction calls, each time on `self`."""
        if self._construction is None:
            functions = self.program.functions
            found = {n for n, r in functions.items() if r.info.name in CONSTRUCTORS}
            found -= self._run_again()
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
        name some unresolved call spells may be reached from anywhere (no entry). A scan of the
        whole program, asked by `construction()` and by every `inside_super(bases)`: built
        once, as the program does not change under this object (read it, never change it)."""
        if self._callers_table is None:
            self._callers_table = self._build_callers()
        return self._callers_table

    def _build_callers(self) -> dict[str, list[tuple[str, bool]]]:
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
        for name in unresolved | self._used_otherwise():
            for method in by_name.get(name, ()):
                callers.pop(method, None)
        return callers

    def _run_again(self) -> set[str]:
        """Constructors some method calls explicitly (`self.__init__(...)` in `reset`): their
        writes happen after construction too."""
        found: set[str] = set()
        for caller in sorted(self.program.calls):
            if self.program.functions[caller].info.name in CONSTRUCTORS:
                continue
            for resolved in self.program.calls[caller]:
                if resolved.call.target[-1:] == ("__init__",):
                    found.update(t.name for t in resolved.targets)
        return found

    def _used_otherwise(self) -> set[str]:
        """Method names used other than by a call: passed or stored as a value (a callback, a
        dispatch table, `partial(self.m)`), named in `getattr(x, "m")`, or an explicit
        `x.__init__(...)` (a constructor run again later)."""
        names: set[str] = set()
        for record in self.program.functions.values():
            names.update(ref[-1] for ref, _line in record.info.value_refs if ref)
            for call in walk_calls(record.info.body):
                if call.target[-1:] == ("getattr",):
                    names.update(str(v) for k, v in call.literals if k == "1")
        return names


_MUTATORS = frozenset(
    (
        "append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft", "popitem",
        "remove", "clear", "update", "setdefault", "add", "discard", "sort", "reverse",
        "__setitem__", "__delitem__", "put", "put_nowait",
    )
)  # fmt: skip
_SETATTR = frozenset(("setattr", "__setattr__"))


def statement_writes(stmt: Stmt) -> Iterator[Segs]:
    """What one statement writes (`Stability.writes`): its assignment targets, what its calls
    mutate, the names `setattr` spells (`COMPUTED_NAME` where data spells them)."""
    for segs in [*map(_written, stmt.targets), *map(_mutated, stmt.calls)]:
        if segs is not None:
            yield segs


def _written(target: Segs) -> Segs | None:
    """What an assignment target writes: `self.a[k] = v` stores into `self.a`."""
    while target and target[-1] == SUBSCRIPT:
        target = target[:-1]
    if not target or target[-1] == CALL:
        return None
    if len(target) >= 2 and target[-1] == "__dict__":
        return (*target[:-1], ANY_NAME)  # `obj.__dict__[k] = v`: any attribute of obj
    return target


def _self_stores(stmt: Stmt) -> Iterator[Segs]:
    """What one statement stores on `self` (`self.a`, also `self.a[k]`, `self.a.append(x)`)."""
    for target in statement_writes(stmt):
        if len(target) >= 2 and target[0] == SELF:
            yield target


def _decider(body: tuple[Stmt, ...], attr: str) -> Cond | None:
    """The literal constant (a tree) a constructor leaves in `self.<attr>`: its last statement
    that stores it is a top-level `self.<attr> = <constant>`, no early exit before it (`if
    lazy: return` keeps the base's value), and nothing after it runs an `__init__` (a base's
    constructor, run later, would store it again)."""
    names = {attr, ANY_NAME, COMPUTED_NAME}
    for index in range(len(body) - 1, -1, -1):
        stmt = body[index]
        if not any({t[1] for t in _self_stores(s)} & names for s in walk_statements((stmt,))):
            continue
        if stmt.kind != "assign" or stmt.targets != ((SELF, attr),) or not _constant(stmt.tree):
            return None
        if may_leave(body[:index]):
            return None
        if any(c.target[-1:] == ("__init__",) for c in walk_calls(body[index + 1 :])):
            return None
        return stmt.tree if not any(t[1] != attr for t in _self_stores(stmt)) else None
    return None


def _constant(tree: Cond) -> bool:
    """A literal (`False`, `None`, `3`, `"x"`) or an enum-like member (`Mode.NULL`)."""
    if not tree:
        return False
    return tree[0] == "const" or (tree[0] == "ref" and member(tree[1]))


def class_of(record: FunctionRecord) -> str | None:
    """The qualified name of the class a method is defined in (None: not a method)."""
    return f"{record.module}.{record.info.cls}" if record.info.cls else None


def _mutated(call: CallSite) -> Segs | None:
    """What a call writes: `self.queue.append(x)` changes `self.queue`; `setattr(obj, "a",
    v)` and `object.__setattr__(obj, "a", v)` set `obj.a` (a computed name: any attribute)."""
    target = call.target
    if target and target[-1] in _SETATTR:
        name = next((v for k, v in call.literals if k == "1"), None)
        first = call.operands[0].ref if call.operands and call.operands[0].keyword is None else None
        receiver = first if first else (UNTYPED,)
        return (*receiver, str(name) if isinstance(name, str) else COMPUTED_NAME)
    if len(target) >= 3 and target[-1] in _MUTATORS:
        return _written(target[:-1])
    return None


def _method_names(functions: Iterable[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for qualname in functions:
        out[qualname.rsplit(".", 1)[-1]].append(qualname)
    return out
