"""Methods looked up by a name computed at run time.

`func = getattr(self.worker, method)` and then `func(*args)` is the shape of an RPC loop: the
loop runs whichever method a message names. Statically that may be any public method of the
receiver's classes (for `f"_handle_{kind}"`, any method whose name starts with `_handle_`; never
a static or class method), so
each is a `fallback` edge (`via="named"`): followed, and marked as a guess. An object looking up
its *own* method by an unconstrained name (`getattr(self, req.method)`) is not followed: every
method of its class, its own loop included, is too wide a guess to pay for itself. A class whose
`__getattr__` returns `getattr(self.x, attr)` forwards the names it lacks to `self.x`, so
`self.x`'s methods are candidates too, and a plain attribute the class lacks is looked up there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rankguard.model.namespaces import dedupe, of_kind
from rankguard.model.values import BUILTIN_PREFIX, DEVICE_MODULES, Value

if TYPE_CHECKING:
    from rankguard.model.records import FunctionRecord
    from rankguard.model.resolve import Resolver
    from rankguard.summary.ir import Segs, Stmt

NAMED = "named"


def name_prefix(text: str) -> str | None:
    """The constant prefix of an attribute name as written: `""` for a variable, `"_handle_"`
    for `f"_handle_{kind}"`; None for a string literal, an exact attribute resolved as such."""
    if text[:1] in ("'", '"'):
        return None
    if text[:2].lower() in ("f'", 'f"'):
        return text[2:].split("{", 1)[0]
    return ""


def named_methods(
    resolver: Resolver, owners: Iterable[Value], prefix: str, seen: frozenset[str] = frozenset()
) -> tuple[Value, ...]:
    """Every method `getattr(owner, <name with this prefix>)` may find on these values."""
    out: list[Value] = []
    for owner in owners:
        if owner.kind != "instance" or owner.name in seen:
            continue
        declared = owner.via == "declared"
        receivers = (
            resolver.hierarchy.receivers_of(owner.name, owner.bound) if declared else (owner.name,)
        )
        for cls in receivers:
            first: dict[str, str] = {}
            for ancestor in resolver.p.mro(cls):
                for name, qual in resolver.p.classes[ancestor].methods.items():
                    first.setdefault(name, qual)
            for name, qual in sorted(first.items()):
                wanted = name.startswith(prefix) if prefix else not name.startswith("_")
                info = resolver.p.functions[qual].info
                # a message names what the object does; a static or class method (a process
                # entry point, a factory) is not called through an instance by name
                if wanted and not (info.decorated("staticmethod") or info.decorated("classmethod")):
                    out.append(Value("function", qual, bound=cls, via=NAMED))
            more = forwarded(resolver, cls)
            out.extend(named_methods(resolver, more, prefix, seen | {owner.name}))
    return dedupe(out)


def forwarded(resolver: Resolver, cls: str) -> tuple[Value, ...]:
    """What `cls.__getattr__` forwards the names it lacks to (`return getattr(self.x, attr)`);
    memoised, and empty while being computed (typing `self.x` may look up an attribute of
    `cls` again: `LazyValue.__getattr__` reads its own `value` property)."""
    memo, cycles, key = resolver.forwarding, resolver.cycles, ("forwarded", cls)
    if cls in memo:
        cycles.read(key)
        return memo[cls] or ()
    return cycles.answer(key, memo, cls, None, lambda: _forwarded(resolver, cls))


def _forwarded(resolver: Resolver, cls: str) -> tuple[Value, ...]:
    qual = next(
        (
            resolver.p.classes[c].methods["__getattr__"]
            for c in resolver.p.mro(cls)
            if "__getattr__" in resolver.p.classes[c].methods
        ),
        None,
    )
    if qual is None:
        return ()
    fn = resolver.p.functions[qual]
    params = fn.info.params
    if len(params) < 2:
        return ()
    for stmt in of_kind(fn.info.body, "return"):
        for call in stmt.calls:
            if call.target == ("getattr",) and tuple(call.args[1:]) == (params[1].name,):
                owner = tuple(call.args[0].split("."))
                if owner[:1] == (params[0].name,):
                    return tuple(v for v in resolver.evaluate(fn, owner) if v.name != cls)
    return ()


def computed_attribute(
    resolver: Resolver, fn: FunctionRecord, stmt: Stmt, callee: Segs
) -> tuple[Value, ...]:
    """`getattr(owner, name)`: a literal name is that attribute; a computed one is the
    device submodules for `torch` (`getattr(torch, device_type)`), else the methods it may
    name (`model.named`)."""
    for call in stmt.calls:
        if call.target != callee or len(call.args) != 2:
            continue
        if not any(v.name == BUILTIN_PREFIX + "getattr" for v in resolver.evaluate(fn, callee)):
            continue
        owner = resolver.evaluate(fn, tuple(call.args[0].split(".")))
        prefix = name_prefix(call.args[1])
        if prefix is None:
            return dedupe(v for o in owner for v in resolver.attribute(o, call.args[1][1:-1]))
        if any(v.kind == "external" and v.name == "torch" for v in owner):
            return DEVICE_MODULES
        if not prefix and _own(fn, call.args[0]):
            return ()  # any method of its own class, the loop itself included: too wide
        return named_methods(resolver, owner, prefix)
    return ()


def _own(fn: FunctionRecord, text: str) -> bool:
    """`text` names the method's own instance (`self`)."""
    params = fn.info.params
    return bool(fn.info.cls and params) and text == params[0].name
