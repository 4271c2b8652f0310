"""What an argument the call constructs says in the callee: its class and a record's fields.

A dispatcher that branches on its argument's class (`if isinstance(action, Free): ... elif
isinstance(action, Backup): ...`) runs one branch per call site when the caller builds the
argument right there (`apply(Free(pages))`): the object is exactly that class. Class-hierarchy
analysis alone walks every branch from every caller, so a backup reached only through the
`Backup` branch would be charged to the caller that frees. The walk hands the callee each such
test's value as an entry fact; an assignment to the parameter forgets it (`facts.forget`), and a
test the model cannot decide (a class outside the program, a base it cannot see) stays open.

A parameters record built at the call (`match(Params(key=k))`, a dataclass or a
`msgspec.Struct`) also carries its fields: those left out hold the class's literal default
(`params.req is None`), those given a literal hold it. Only fields nothing reassigns after
construction (`analysis.stability`) count, and only where the record's constructor is the
generated one (no `__init__`/`__post_init__` of its own).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankguard.analysis.call_sites import passed_arguments
from rankguard.analysis.precision import lone_call, producer
from rankguard.analysis.stability import CONSTRUCTORS, Stability
from rankguard.model.facts import FALSY, TRUTHY, UNKNOWN, Cond
from rankguard.model.program import Program
from rankguard.model.records import ClassRecord, FunctionRecord
from rankguard.summary.ir import CALL, NOT_LITERAL, CallSite, Operand, Segs, walk_statements

_ISINSTANCE = ("isinstance",)
# Builtin classes no program class derives from unless it names a base outside the program.
_BUILTINS = frozenset(("int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set"))

# Bases outside the program whose classes are records: the constructor stores the fields it
# is given, and the class's defaults for the rest (a program `@dataclass` is one too).
_RECORD_BASES = frozenset(("Struct", "NamedTuple"))
# Bases outside the program that neither construct nor test instances in their own way:
# `typing.Generic` only adds type parameters (`class Spec(Generic[T])`).
_PLAIN_BASES = frozenset(("object", "typing.Generic", "typing_extensions.Generic"))
# (parameter, the test, the classes each listed element names; None: one the model cannot place)
_Test = tuple[str, Cond, tuple[frozenset[str] | None, ...]]


class Instances:
    """Per program: the `isinstance` tests of each function on its parameters, and which
    classes construct plainly enough to say what their instances are."""

    def __init__(self, program: Program, stability: Stability) -> None:
        self.program = program
        self.stability = stability
        self._tests: dict[str, tuple[_Test, ...]] = {}
        self._records: dict[str, dict[str, Any] | None] = {}
        self._written: _Writes | None = None
        self._singletons: dict[tuple[str, str], str | None] = {}
        self._plain: dict[str, bool] = {}

    def entry_facts(
        self,
        caller: FunctionRecord,
        callee: FunctionRecord,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        known: Mapping[Cond, Any],
    ) -> dict[Cond, Any]:
        """What holds on entry of each parameter whose argument `call` constructs (`Cls(...)`
        is an instance of exactly `Cls`): the value of each `isinstance(param, ...)` in
        `callee`, and a record's fields the constructor leaves at their defaults or sets to a
        literal (`Params(key=k).req is None`)."""
        if not any(lone_call(o) or _bare_name(o) for o in call.operands):
            return {}  # asked at every call the walk enters: most pass no constructed object
        passed = passed_arguments(callee, call)
        positional = [o for o in call.operands if o.keyword is None]
        out: dict[Cond, Any] = {}
        for param, (key, _) in passed.items():
            operand = positional[int(key)] if key.isdigit() else call.operand(key)
            if operand is None:
                continue
            cls = self._constructed(caller, operand)
            if cls is None and self._kept(callee, param):
                cls = _handed_on(operand, known) or self._singleton(caller, call, operand)
            if cls is None:
                continue
            if self._kept(callee, param):
                out[exactly(param)] = cls  # for a call that hands the parameter on
            for name, cond, elements in self.tests(callee):
                value = self._decides(cls, elements) if name == param else None
                if value is not None:
                    out[cond] = TRUTHY if value else FALSY
            made = producer(stmt_calls, call, operand.calls[0]) if operand.calls else None
            if made is not None:
                out.update(self._fields(param, cls, made, known))
        return out

    def _fields(
        self, param: str, cls: str, made: CallSite, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        """`param.field` for each field of the record `made` constructs that no method
        reassigns after construction: the literal passed, what the caller knows of a name
        passed (`cow=cow` with `cow` False on the path), or the class's default where the
        field is left out. Only keyword arguments are read (positions follow field order)."""
        if any(o.keyword in (None, "*", "**") for o in made.operands):
            return {}
        defaults = self._defaults(cls)
        if defaults is None:
            return {}
        values: dict[str, Any] = dict(defaults)
        for operand in made.operands:
            values.pop(str(operand.keyword), None)
            passed = known.get(("ref", operand.ref), UNKNOWN) if operand.ref else UNKNOWN
            if passed is not UNKNOWN:
                values[str(operand.keyword)] = passed
        values.update(made.literals)
        return {
            ("ref", (param, name)): value
            for name, value in values.items()
            if self.stability.settled(cls, name)
        }

    def _defaults(self, cls: str) -> dict[str, Any] | None:
        """A record class's literal field defaults, or None where the class is no record
        whose generated constructor only stores its fields. Fields come from the record
        classes of its MRO, bases first, so a subclass's field (literal or not) hides its
        base's; a plain subclass's class attribute is no field."""
        if cls not in self._records:
            classes = [self.program.classes[c] for c in self.program.mro(cls)]
            records = [c for c in classes if _record(c)]
            foreign = _foreign(classes)
            own = any(m in c.methods for c in classes for m in CONSTRUCTORS)
            defaults: dict[str, Any] = {}
            for c in reversed(records):
                defaults.update(c.info.defaults)
            plain = records and not foreign and not own and not _metaclass(classes)
            found = {k: v for k, v in defaults.items() if v != NOT_LITERAL}
            self._records[cls] = found if plain else None
        return self._records[cls]

    def tests(self, callee: FunctionRecord) -> tuple[_Test, ...]:
        """`callee`'s `isinstance` tests on its parameters, each listed class placed once."""
        name = callee.qualname
        if name not in self._tests:
            params = {p.name for p in callee.info.params}
            found: dict[Cond, _Test] = {}
            for stmt in walk_statements(callee.info.body):
                for cond in _isinstance_tests(stmt.cond):
                    param = cond[2][0][1][0]
                    if param in params and cond not in found:
                        elements = tuple(self._classes(callee, e) for e in _listed(cond[2][1]))
                        found[cond] = (param, cond, elements)
            self._tests[name] = tuple(found.values())
        return self._tests[name]

    def _constructed(self, caller: FunctionRecord, operand: Operand) -> str | None:
        """The class an argument that is one call's result alone is exactly an instance of."""
        return self._exact(caller, operand.calls[0]) if lone_call(operand) else None

    def _kept(self, callee: FunctionRecord, param: str) -> bool:
        """`param` is a named parameter of `callee` that nothing rebinds in it (in any form: a
        walrus, `match ... as`, an import, a nested function's `nonlocal`), and no code of the
        program assigns an object's `__class__`: a class known on entry holds all through."""
        named = any(p.name == param for p in callee.info.params)
        return named and not self.program.binds(callee.qualname, param) and not self._writes().cls

    def built_plainly(self, cls: str) -> bool:
        """`_built_plainly`, once per class (asked for every receiver a call builds)."""
        if cls not in self._plain:
            self._plain[cls] = self._built_plainly(cls)
        return self._plain[cls]

    def _built_plainly(self, cls: str) -> bool:
        """Calling the class by name builds exactly that class, with the methods it defines:
        no `__new__`, metaclass, class decorator or base outside the program may hand back
        another object, its name is bound once in its module (`_rebound`), and no code stores
        an attribute named like one of its methods (`Cls.check = Other.check`) or assigns an
        object's `__class__`."""
        if cls not in self.program.classes:
            return False
        record = self.program.classes[cls]
        classes = [self.program.classes[c] for c in self.program.mro(cls)]
        writes = self._writes()
        external = {b for c in classes for b in c.external_bases}
        if any("__new__" in c.methods for c in classes) or _metaclass(classes):
            return False
        if external - _PLAIN_BASES - {"abc.ABC"}:  # `abc.ABC` hooks `isinstance`, not building
            return False
        if record.info.decorators or writes.cls or "." in record.info.qualname:
            return False
        names = {c.info.name for c in classes}
        methods = {method for c in classes for method in c.methods}
        if any(h in names and a in methods for h, a in writes.on_names):
            return False  # `Quiet.check = Noisy.check`; data (`Cls._cache = x`) is no method
        name = record.info.name
        binders = self.program.resolver.module_binders(record.module, name)
        return binders == (("class", cls),) and not self._rebound(record.module, name, 0)

    def _writes(self) -> _Writes:
        if self._written is None:
            self._written = _writes_of(self.program)
        return self._written

    def _singleton(self, caller: FunctionRecord, call: CallSite, operand: Operand) -> str | None:
        """`build(_SPEC)` where the module's one binding of the global `_SPEC` is `_SPEC =
        Spec(...)` at its top level: a module-level instance handed to a dispatcher is as exact
        as `build(Spec(...))`. A name the caller or an enclosing function binds (a parameter,
        a local, a comprehension's variable), or a global bound again anywhere (`global`, a
        loop, an import, an item store), decides nothing."""
        if not _bare_name(operand):
            return None
        assert operand.ref is not None
        name = operand.ref[0]
        if any(name == bound for bound, _ in call.bound) or self._local(caller, name):
            return None
        key = (caller.module, name)
        if key not in self._singletons:  # asked at every call passing a bare name
            self._singletons[key] = self._module_singleton(*key)
        return self._singletons[key]

    def _module_singleton(self, module: str, name: str) -> str | None:
        binders = self.program.resolver.module_binders(module, name)
        if len(binders) != 1 or binders[0][0] != "assign":
            return None
        stmt = binders[0][1]
        shape = stmt.value
        if len(stmt.targets) != 1 or not shape or shape[0] != "call" or len(shape) > 2:
            return None
        if self._rebound(module, name):
            return None
        return self._exact(self.program.functions[module], shape[1])

    def _rebound(self, module: str, name: str, assigned: int = 1) -> bool:
        """The module binds `name` more than once anywhere in its body (under `if`, `try`,
        `with ... as`), takes names from a star import, lets a function rebind it (`global`) or
        calls `globals()`; or some code stores an attribute of that name (`mod.NAME = ...`,
        `setattr(x, "NAME", ...)`), which may be the module's."""
        writes = self._writes()
        if name in writes.attributes or {module, _ANY_MODULE} & writes.dynamic:
            return True
        body = self.program.functions[module]
        stores = sum((name,) in s.targets for s in walk_statements(body.info.body))
        star = any(i.bound == "*" for i in self.program.modules[module].summary.imports)
        return stores != assigned or star or (module, name) in writes.declared

    def _local(self, caller: FunctionRecord, name: str) -> bool:
        """`name` is a parameter or a binding of the caller or of a function enclosing it."""
        parts = caller.qualname.split(".<locals>.")
        for depth in range(len(parts), 0, -1):
            record = self.program.functions.get(".<locals>.".join(parts[:depth]))
            if record is None:
                continue
            if name in record.info.global_names:
                return False  # declared global: the module's binding, which the binders list
            if record.info.bound and name in record.info.bound:
                return True
            if any(p.name == name for p in record.info.params):
                return True
        return False

    def _exact(self, caller: FunctionRecord, callee: Segs) -> str | None:
        """The class whose instance calling `callee` exactly makes: not where `__new__` or a
        metaclass may hand back another class's object, nor where a base outside the program
        (other than a record's) may."""
        values = self.program.resolver.evaluate(caller, (*callee, CALL))
        names = {v.name for v in values}
        exact = len(names) == 1 and all(v.kind == "instance" and v.via is None for v in values)
        cls = next(iter(names)) if exact else None
        if cls is None or cls not in self.program.classes:
            return None
        classes = [self.program.classes[c] for c in self.program.mro(cls)]
        if any("__new__" in c.methods for c in classes) or _metaclass(classes):
            return None
        return None if _foreign(classes) else cls

    def _classes(self, callee: FunctionRecord, element: Cond) -> frozenset[str] | None:
        """The classes a listed element names: program classes that decide `isinstance` by
        their bases alone, or a builtin. A class with a base outside the program (`abc.ABC`,
        whose `register` adds virtual subclasses; a runtime-checkable `Protocol`) or a
        metaclass (whose `__instancecheck__` decides) decides nothing here; a record base
        (`msgspec.Struct`) tests plainly."""
        if element[0] != "ref":
            return None
        classes = self.program.classes
        values = self.program.resolver.evaluate(callee, element[1])
        if values and all(v.kind == "class" and v.name in classes for v in values):
            mros = [[classes[c] for c in self.program.mro(v.name)] for v in values]
            hooked = any(_metaclass(m) or _foreign(m) for m in mros)
            return None if hooked else frozenset(v.name for v in values)
        name = element[1][0] if len(element[1]) == 1 else None
        if name in _BUILTINS or name == "object":
            return frozenset((name,)) if all(v.kind == "builtin" for v in values) else None
        return None

    def _decides(self, cls: str, elements: tuple[frozenset[str] | None, ...]) -> bool | None:
        """Whether an instance of exactly `cls` passes the test, where the model can tell."""
        mro = self.program.mro(cls)
        external = any(self.program.classes[c].external_bases for c in mro)
        unknown = False
        for names in elements:
            if names is None:
                unknown = True
            elif "object" in names or any(n in mro for n in names):
                return True
            elif external and names & _BUILTINS:
                unknown = True  # `class Count(int)`: a base outside the program
        return None if unknown else False


_ANY_MODULE = "<any module>"


@dataclass(frozen=True, slots=True)
class _Writes:
    """What the program writes that may change a name's value or an object's class unseen."""

    attributes: frozenset[str]  # attribute names stored (`x.NAME = ...`, `setattr(x, "NAME", ...)`)
    on_names: frozenset[tuple[str, str]]  # (name, attribute) of `Cls.NAME = ...` stores
    declared: frozenset[tuple[str, str]]  # (module, name) a function declares `global`
    dynamic: frozenset[str]  # modules writing their own namespace (`globals()`), `_ANY_MODULE`
    cls: bool  # some code assigns an object's `__class__`


def _writes_of(program: Program) -> _Writes:
    """Names written by attribute (`x.NAME = v`, `setattr(x, "NAME", v)`, `x.__setattr__("NAME",
    v)`); modules whose namespace is written by `globals()`/`vars()`; and, where code writes
    some module's namespace by a computed name (`setattr(sys.modules[m], k, v)`, a module's
    `__dict__`), every module (`_ANY_MODULE`)."""
    attributes: set[str] = set()
    on_names: set[tuple[str, str]] = set()
    dynamic: set[str] = set()
    for record in program.functions.values():
        for stmt in walk_statements(record.info.body):
            attributes.update(t[-1] for t in stmt.targets if len(t) > 1)
            on_names.update((t[0], t[1]) for t in stmt.targets if len(t) == 2)
            for segs in (*stmt.targets, *(c.target for c in stmt.calls)):
                if segs[:1] in (("globals",), ("vars",)):
                    dynamic.add(record.module)
                elif "__dict__" in segs and "modules" in segs:
                    dynamic.add(_ANY_MODULE)
            for call in stmt.calls:
                named = _set_name(call)
                if named is not None and named[:1] in ("'", '"'):
                    attributes.add(named.strip("'\""))
                    on_names.add((call.args[0], named.strip("'\"")))
                elif named is not None and "modules" in call.args[0]:
                    dynamic.add(_ANY_MODULE)
    declared = frozenset(
        (record.module, name)
        for record in program.functions.values()
        for name in record.info.global_names
    )
    return _Writes(
        frozenset(attributes),
        frozenset(on_names),
        declared,
        frozenset(dynamic),
        "__class__" in attributes,
    )


def _set_name(call: CallSite) -> str | None:
    """The name argument's text of `setattr(x, name, v)` / `object.__setattr__(x, name, v)`
    / `x.__setattr__(name, v)`."""
    if call.target in (("setattr",), ("object", "__setattr__")) and len(call.args) > 1:
        return call.args[1]
    if call.target[-1:] == ("__setattr__",) and call.args:
        return call.args[0]
    return None


def exactly(name: str) -> Cond:
    """The fact key under which a parameter's exact class is known (`type(name)`): assigning
    the name forgets it as it forgets every fact that reads the name."""
    return ("call", ("type",), (("ref", (name,)),), ())


def _handed_on(operand: Operand, known: Mapping[Cond, Any]) -> str | None:
    """`super().build(spec)` inside a dispatcher entered with `spec` exactly a `Spec`."""
    if not _bare_name(operand):
        return None
    assert operand.ref is not None
    cls = known.get(exactly(operand.ref[0]))
    return cls if isinstance(cls, str) else None


def _bare_name(operand: Operand) -> bool:
    """The argument is one plain name (`f(_SPEC)`), not an attribute or a call."""
    return operand.ref is not None and len(operand.ref) == 1 and not operand.calls


def _record(cls: ClassRecord) -> bool:
    """A record class itself: a `@dataclass`, or one based on `msgspec.Struct`/`NamedTuple`."""
    return any(d[-1] == "dataclass" for d in cls.info.decorators) or any(
        b.rsplit(".", 1)[-1] in _RECORD_BASES for b in cls.external_bases
    )


def _metaclass(classes: Sequence[ClassRecord]) -> bool:
    return any(c.info.metaclass for c in classes)


def _foreign(classes: Sequence[ClassRecord]) -> bool:
    """A base outside the program other than a record's (`msgspec.Struct`, `NamedTuple`,
    which construct and test plainly) or a plain one (`_PLAIN_BASES`): it may define
    `__new__`, `__post_init__`, or be an `abc.ABC` whose `register` makes virtual subclasses."""
    external = [b for c in classes for b in c.external_bases if b not in _PLAIN_BASES]
    return any(b.rsplit(".", 1)[-1] not in _RECORD_BASES for b in external)


def _isinstance_tests(cond: Cond) -> Iterator[Cond]:
    """The `isinstance(name, classes)` leaves of a test, through `not`, `and`, `or`."""
    if not cond:
        return
    tag = cond[0]
    if tag == "not":
        yield from _isinstance_tests(cond[1])
    elif tag in ("and", "or"):
        for part in cond[1]:
            yield from _isinstance_tests(part)
    elif (
        tag == "call"
        and cond[1] == _ISINSTANCE
        and len(cond[2]) == 2
        and not cond[3]
        and cond[2][0][0] == "ref"
        and len(cond[2][0][1]) == 1
    ):
        yield cond


def _listed(classes: Cond) -> tuple[Cond, ...]:
    """`isinstance(x, A)` lists A; `isinstance(x, (A, B))` lists both."""
    return tuple(classes[1]) if classes[0] == "tuple" else (classes,)
