"""The values of a function's locals (`Resolver._locals`): parameters by their annotations,
names by what is assigned to them, `for` targets by an element of what they iterate, a `with`
target by a library's context manager, and containers by what goes into them.

A local container's elements are learned from what is stored into it (`d[k] = v`,
`xs.append(v)`, `xs.insert(i, v)`, `s.add(v)`; every element of `ys` for `xs.extend(ys)` and
`d.update(ys)`), and read back by iterating it, subscripting it, `.pop()`, `.get()`,
`.values()`. A function returning a container returns its elements too (`return reqs`), and a
library value it returns is seen as a container of that library's values
(`return dist.batch_isend_irecv(ops)`: iterating it gives what `[i]` gives); the parts of a
returned tuple are bound where the tuple is unpacked (`_, reqs = f()`), not where it is bound
whole. A local made from another local is read after the table holds that local (the table is
built once otherwise, every assignment read against the parameters alone), twice, so that a
handle taken from a list filled from another helper's dict is known. Only containers and
elements taken out are learned so: nothing else of a local read from another changes. A
comprehension's variables are locals of the expression alone: each is an element of what it
iterates, bound where a call inside it is resolved (`comprehension_scope`). A mixin of the
resolver.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from rankguard.model.namespaces import dedupe, of_kind
from rankguard.model.stores import bound_names, subscript_root
from rankguard.model.values import BUILTIN_PREFIX, Value, external
from rankguard.summary.ir import (
    ADDS,
    CALL,
    MERGES,
    SUBSCRIPT,
    CallSite,
    Segs,
    Stmt,
    walk_statements,
)

if TYPE_CHECKING:
    from rankguard.model.records import FunctionRecord


class LocalTypes:
    def _instances(self, fn: FunctionRecord, annotation: Segs) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver reads annotations

    def _assigned_value(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        raise NotImplementedError  # the resolver evaluates assignments

    def _value_of(self, fn: FunctionRecord, stmt: Stmt, shape: tuple[Any, ...]) -> list[Value]:
        raise NotImplementedError

    def evaluate(
        self, fn: FunctionRecord, segs: Segs, scope: Scope | None = None
    ) -> tuple[Value, ...]:
        raise NotImplementedError

    def call_results(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        raise NotImplementedError

    def elements(self, value: Value) -> list[Value]:
        raise NotImplementedError

    def stored_items(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        raise NotImplementedError  # `rankguard.model.stores`

    def _build_locals(
        self, fn: FunctionRecord, table: dict[str, tuple[Value, ...]]
    ) -> dict[str, tuple[Value, ...]]:
        params = fn.info.params
        for index, param in enumerate(params):
            items = getattr(param, "items", None)  # absent from summaries cached before it
            if param.annotation:
                table[param.name] = self._instances(fn, param.annotation)
            elif items:
                table[param.name] = tuple(
                    Value("items", v.name, bound=v.kind) for v in self._instances(fn, items)
                )
            elif index == 0 and fn.info.cls and not fn.info.decorated("staticmethod"):
                cls = f"{fn.module}.{fn.info.cls}"
                if fn.info.decorated("classmethod"):
                    table[param.name] = (Value("class", cls),)
                else:  # `self` may be any class derived from this one that runs `fn`
                    table[param.name] = (Value("instance", cls, bound=fn.qualname, via="declared"),)
            else:  # bound here, type unknown: it still shadows any global of that name
                table[param.name.lstrip("*")] = ()
        on_entry = set(table)
        assigned: dict[str, list[Value]] = defaultdict(list)
        stored: list[tuple[str, Stmt]] = []
        # Assignments, `for` targets and `with ... as` targets bind names.
        for stmt in walk_statements(fn.info.body):
            if stmt.kind == "assign":
                stored += [(r, stmt) for r in map(subscript_root, stmt.targets) if r is not None]
            if stmt.kind != "assign" and not (stmt.kind in ("loop", "with") and stmt.targets):
                continue
            for target in stmt.targets:
                name = target[0] if len(target) == 1 else None
                if name is None or name in on_entry or name in fn.info.global_names:
                    continue
                if stmt.kind == "assign":
                    whole = len(stmt.targets) == 1  # not unpacked: a tuple's parts stay in it
                    values = self._assigned_value(fn, stmt)
                    assigned[name].extend(unpacked(values, whole))
                elif stmt.kind == "with":
                    assigned[name].extend(self._entered(fn, stmt))
        # Containers: what is known so far is read by what follows (a local made from another
        # local, a container filled from one), twice, so an element taken from a container
        # filled from another local's container is known too.
        chained = [
            stmt
            for stmt in walk_statements(fn.info.body)
            if stmt.kind == "assign" and any(head in assigned for head in _heads(stmt.value))
        ]
        adds = [
            call
            for stmt in walk_statements(fn.info.body)
            for call in stmt.calls
            if len(call.target) == 2 and call.target[0] in assigned and not call.deferred
        ]
        for _ in range(_CONTAINER_PASSES):
            table.update((name, dedupe(values)) for name, values in assigned.items())
            # A local made from another local (`got = p2p(t)` with `p2p` a local helper that
            # returns a container; `h = handles.pop(k)`): containers, and elements taken.
            for stmt in chained:
                single = len(stmt.targets) == 1
                found = self._value_of(fn, stmt, stmt.value)
                taken = _takes(stmt.value)
                kept = [v for v in found if v.kind == "items" or (taken and _holdable(v))]
                kept = unpacked(kept, single)
                for target in stmt.targets:
                    if len(target) == 1 and target[0] in assigned:
                        assigned[target[0]].extend(kept)
            # `table[k] = f` into a local container: f is one of its elements; so is what
            # `xs.append(v)` adds, and every element of what `xs.extend(ys)` adds.
            for name, stmt in stored:
                if name in assigned and stmt.value[:1] in (("ref",), ("call",)):
                    assigned[name].extend(self.stored_items(fn, stmt))
            table.update((name, dedupe(values)) for name, values in assigned.items())
            for call in adds:
                assigned[call.target[0]].extend(self._added(fn, call))
        table.update((name, dedupe(values)) for name, values in assigned.items())
        # `for x in self.items:` where `items: List[T]`: x is a T; over a generator, what it
        # yields; over an iterator, what its `__next__` returns; over a local container, its
        # elements.
        for stmt in of_kind(fn.info.body, "loop"):
            if not stmt.value or len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
                continue
            name = stmt.targets[0][0]
            if name in on_entry:
                continue
            for value in self._assigned_value(fn, stmt):
                assigned[name].extend(self.elements(value))
        for name, values in assigned.items():
            table[name] = dedupe(values)  # empty: a local we cannot type, never the global
        return table

    def returned_local(self, fn: FunctionRecord, name: str, ret: Stmt) -> list[Value]:
        """The instances `name`, a plain local, may give at the `return` statement `ret`: what
        the stores of it that reach `ret` bind (`opt = A()` in one branch, `opt = B()` in
        another; not `opt = Base()` when `opt = FP16(opt)` always follows it), and for a
        parameter not always rebound first, its type on entry. Where the stores reaching `ret`
        are not known (a `for` or `with` target, an unpacking), what its table holds: every
        binding, and for a parameter, which the table types on entry only, what each
        assignment of it whole binds. The method's own receiver (`return self`) gives nothing
        here."""
        params = fn.info.params
        method = fn.info.cls and not fn.info.decorated("staticmethod")
        receiver = params[0].name if params and method else None
        if name == receiver or name not in bound_names(fn):
            return []  # a global's value is not a local's
        parameter = any(p.name == name for p in params)
        reaching = reaching_stores(fn.info.body, name, ret)
        found: list[Value] = []
        if reaching is None:
            found.extend(self.evaluate(fn, (name,)))
            if parameter:
                for stmt in of_kind(fn.info.body, "assign"):
                    if stmt.targets == ((name,),):
                        found.extend(self._assigned_value(fn, stmt))
        else:
            if parameter and ON_ENTRY in reaching:
                found.extend(self.evaluate(fn, (name,)))  # a parameter's table: its entry type
            for stmt in reaching:
                if stmt is not ON_ENTRY:
                    found.extend(self._assigned_value(fn, stmt))
        return [v for v in found if v.kind == "instance"]

    def comprehension_scope(self, fn: FunctionRecord, call: CallSite) -> Scope | None:
        """The variables of the comprehensions a call is inside (`[et.get() for et in
        self.event_timers]`), each an element of what it iterates, in order, so a later one
        may iterate an earlier one. A variable iterating something unknown, or unpacked, is
        bound to nothing known: it shadows a local or global of its name, as a local we cannot
        type does, and the call is then resolved as an untyped one."""
        if not call.target or all(name != call.target[0] for name, _ in call.bound):
            return None
        scope: Scope = {}
        for name, tree in call.bound:
            iterated: tuple[Value, ...] = ()
            if tree[:1] == ("ref",):
                iterated = self.evaluate(fn, tree[1], scope)
            elif tree[:1] == ("call",) and len(tree) == 4:  # `d.values()`, not `f().m()`
                iterated = self.evaluate(fn, (*tree[1], CALL), scope)
            scope[name] = dedupe(e for v in iterated for e in self.elements(v))
        return scope

    def _entered(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        """`with lib.manager(...) as cm`: a library's context manager is taken to give itself
        (its `__enter__` returns self, as a file, a lock or a coalescing manager does), so
        `cm.wait()` is the library's `wait`. Project classes and builtins are not guessed."""
        if len(stmt.items) != 1 or len(stmt.targets) != 1 or stmt.items[0][:1] != ("call",):
            return []
        values = self.call_results(fn, stmt.items[0][1])
        return [v for v in values if v.kind == "external" and _holdable(v)]

    def _added(self, fn: FunctionRecord, call: CallSite) -> list[Value]:
        """What a container method call adds to its receiver (`xs.append(v)`, and
        `self.xs.append(v)` for an attribute), as elements (`items`)."""
        method = call.target[-1]
        position = ADDS.get(method)
        merged = method in MERGES
        if position is None and not merged:
            return []
        positional = [o for o in call.operands if o.keyword is None]
        if position is None:
            position = 0
        if len(positional) <= position:
            return []
        values = self._operand_values(fn, positional[position])
        if merged:
            values = [e for v in values for e in self.elements(v)]
        return [as_element(v) for v in values if _holdable(v)]

    def _operand_values(self, fn: FunctionRecord, operand: Any) -> list[Value]:
        """What an argument may be: a reference, or one call's result alone."""
        if operand.ref is not None:
            return list(self.evaluate(fn, operand.ref))
        if operand.const is None and not operand.reads and len(operand.calls) == 1:
            return list(self.call_results(fn, operand.calls[0]))
        return []


Scope = dict[str, tuple[Value, ...]]  # names bound inside an expression: their values
# Container methods that take an element out; that give a view of the elements (those that
# add one are `model.stores.ADDS` and `MERGES`).
TAKES = ("pop", "popleft", "get", "setdefault")
VIEWS = ("values", "copy")
TUPLE = "tuple"  # a container returned inside a tuple: bound by unpacking only
_CONTAINER_PASSES = 2


ON_ENTRY: Any = object()  # in `reaching_stores`: what a name holds on entry (a parameter's value)


def reaching_stores(body: tuple[Stmt, ...], name: str, ret: Stmt) -> list[Any] | None:
    """The statements storing local `name` whole (`name = ...`) whose value it may still hold
    at `ret`, a statement of `body`, and ON_ENTRY when no store may have run; None when that
    is not known. Reaching definitions over the statement tree: a store kills those before it
    in its block, so `opt = Base(); opt = FP16(opt); return opt` returns the FP16 wrapper
    alone (the union of every store would have the base's `step` run as well). Branches,
    loop bodies (run any number of times), `match` cases, and, since an exception may leave
    them anywhere, `try` bodies (for their handlers) and `with` bodies (a context manager may
    swallow it) join what they store with what came before. `name += x` (which may give back
    the object itself) and `name: T` alone kill nothing. Not known: `name` bound by a `for` or
    `with` target or by unpacking, or stored in a `finally` (which runs after a `break`)."""
    walk = _Reaching(name, ret)
    if any(walk.binds(s) for t in of_kind(body, "try") for s in walk_statements(t.blocks[2])):
        return None
    walk.block(body, frozenset((id(ON_ENTRY),)))
    if walk.unknown or not walk.seen:
        return None
    return [walk.stores[key] for key in sorted(walk.at_return, key=list(walk.stores).index)]


class _Reaching:
    """One walk of `reaching_stores`: states are sets of store ids."""

    def __init__(self, name: str, ret: Stmt) -> None:
        self.name, self.ret = name, ret
        self.stores: dict[int, Any] = {id(ON_ENTRY): ON_ENTRY}
        self.at_return: frozenset[int] = frozenset()
        self.seen = self.unknown = False
        self.loops: list[tuple[list[frozenset[int]], list[frozenset[int]]]] = []

    def binds(self, stmt: Stmt) -> bool:
        return stmt.kind in ("assign", "loop", "with") and (self.name,) in stmt.targets

    def block(self, stmts: tuple[Stmt, ...], state: frozenset[int]) -> frozenset[int]:
        for stmt in stmts:
            state = self.statement(stmt, state)
        return state

    def stored(self, stmts: tuple[Stmt, ...]) -> frozenset[int]:
        """The stores of the name anywhere in a block: where an exception may leave it."""
        found = [stmt for stmt in walk_statements(stmts) if self.binds(stmt)]
        for stmt in found:
            self.bound(stmt, frozenset())
        return frozenset(id(stmt) for stmt in found)

    def statement(self, stmt: Stmt, state: frozenset[int]) -> frozenset[int]:
        kind, blocks = stmt.kind, stmt.blocks
        if stmt is self.ret:
            self.at_return |= state
            self.seen = True
        if kind in ("return", "raise"):
            return frozenset()
        if kind in ("break", "continue") and self.loops:
            self.loops[-1][kind == "continue"].append(state)
            return frozenset()
        if kind == "if":
            return self.block(blocks[0], state) | self.block(blocks[1], state)
        if kind == "match":
            return state.union(*(self.block(case, state) for case in blocks))
        if kind == "try":
            body = self.block(blocks[0], state)
            handled = state | body | self.stored(blocks[0])
            out = self.block(blocks[1], body)
            out = out.union(*(self.block(handler, handled) for handler in blocks[3:]))
            return self.block(blocks[2], out)
        if kind == "with":
            entered = self.bound(stmt, state)
            return entered | self.block(blocks[0], entered) | self.stored(blocks[0])
        if kind == "loop":
            head = state
            while True:  # to the fixed point: the states only grow, over finitely many stores
                self.loops.append(([], []))
                out = self.block(blocks[0], self.bound(stmt, head))
                breaks, continues = self.loops.pop()
                grown = head.union(out, *continues)
                if grown == head:
                    return self.block(blocks[1], head).union(*breaks)
                head = grown
        return self.bound(stmt, state) if kind == "assign" else state

    def bound(self, stmt: Stmt, state: frozenset[int]) -> frozenset[int]:
        if not self.binds(stmt):
            return state
        self.stores[id(stmt)] = stmt
        if stmt.kind != "assign" or stmt.targets != ((self.name,),):
            self.unknown = True  # `for name in`, `with ... as name`, `a, name = f()`
        elif stmt.tree[:1] in (("arith",), ("other",)):
            return state | {id(stmt)}  # `name += x`, `name: T`: the old value may stay
        return frozenset((id(stmt),))


def unpacked(values: list[Value] | tuple[Value, ...], whole: bool) -> list[Value]:
    """What a target takes of `values`: bound whole, not the parts of a returned tuple;
    unpacked (`_, reqs = f()`), those parts as plain containers."""
    if whole:
        return [v for v in values if v.via != TUPLE]
    return [v._replace(via=None) if v.via == TUPLE else v for v in values]


def _heads(shape: tuple[Any, ...]) -> list[str]:
    """The names a value is read from (`p2p(t)`, `h.pop(k) if k in h else None`)."""
    if shape[:1] == ("either",):
        return [head for side in shape[1] for head in _heads(side)]
    if shape[:1] in (("ref",), ("call",)) and len(shape) == 2 and shape[1]:
        return [shape[1][0]]
    return []


def _takes(shape: tuple[Any, ...]) -> bool:
    """The value read is one element of a container: `xs.pop()`, `d.get(k)`, `xs[i]`."""
    if shape[:1] == ("either",):
        return any(_takes(side) for side in shape[1])
    if shape[:1] == ("call",):
        return len(shape[1]) >= 2 and shape[1][-1] in TAKES
    return shape[:1] == ("ref",) and SUBSCRIPT in shape[1]


def _holdable(value: Value) -> bool:
    """A value kept as an element: a function, class or instance, or a library value."""
    if value.kind == "external":  # a builtin's or a generic's element is known by `items`
        return not value.name.startswith((BUILTIN_PREFIX, "typing."))
    return value.kind in ("function", "class", "instance")


ELEMENT = "element"  # a library's value known only as an element of a container


def element(value: Value) -> Value:
    """An element of the container `value` (`items`), or of a library value (`X()[]`, marked
    ELEMENT: its methods are the library's, and a project method of that name may run too,
    as for an untyped receiver)."""
    if value.kind == "items":
        via = ELEMENT if value.bound == "external" else None
        return Value(value.bound or "external", value.name, via=via)
    return Value("external", value.name + "[]", via=ELEMENT)


def as_element(value: Value) -> Value:
    return Value("items", value.name, bound=value.kind)


def containers(values: tuple[Value, ...]) -> list[Value]:
    """What a function returning `values` hands back as a container: the containers whose
    elements are known, and a library value seen as one (`batch_isend_irecv(ops)`: iterating
    it gives its elements). The library value itself is not returned."""
    out = [v._replace(via=None) for v in values if v.kind == "items"]
    libraries = [v for v in values if v.kind == "external" and _holdable(v)]
    out += [as_element(external(v.name + "[]")) for v in libraries]
    return out
