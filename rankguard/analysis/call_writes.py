"""What one call site, or one function, may change beyond what it assigns by name
(`analysis.clobbers`): the references it hands code the model cannot see or gives `setattr` a
computed name, in the caller's terms; and which references a fact reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache

from rankguard.analysis.call_sites import passed_arguments, receiver_parameter
from rankguard.analysis.reach import FOLLOWED
from rankguard.analysis.stability import ANY_NAME
from rankguard.model.facts import Cond, member, refs
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.model.values import BUILTIN_PREFIX
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Operand, Segs, walk_statements

ANY: Segs = ("<any object>",)  # a write that may land on any object
_DEPTH = 3  # wild references kept this deep (a shorter prefix forgets more)
_SETATTR = frozenset(("setattr", "__setattr__", "delattr", "__delattr__"))
_MUTATORS = frozenset(
    (
        "append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft", "popitem",
        "remove", "clear", "update", "setdefault", "add", "discard", "sort", "reverse",
        "__setitem__", "__delitem__", "put", "put_nowait",
    )
)  # fmt: skip
# Builtin functions that write no attribute of what they are given.
_READERS = frozenset(
    (
        "isinstance", "issubclass", "len", "id", "type", "hash", "repr", "str", "int",
        "float", "bool", "complex", "print", "format", "callable", "hasattr", "getattr",
        "abs", "round", "min", "max", "sum", "any", "all", "sorted", "reversed", "enumerate",
        "zip", "range", "list", "tuple", "set", "frozenset", "dict", "divmod", "pow", "chr",
        "ord", "bin", "hex", "oct", "ascii", "slice", "vars", "dir", "map", "filter",
    )
)  # fmt: skip


def local_wild(call: CallSite, targets: Sequence[Target], program: Program) -> Iterable[Segs]:
    """What the call itself may change any attribute of: the receiver of a computed-name
    `setattr`, and what it hands code the model cannot see (a class of the program built
    without an `__init__` of its own only stores what it is given)."""
    last = call.target[-1:] if call.target else ()
    if last and last[0] in _SETATTR:
        if not any(k == "1" and isinstance(v, str) for k, v in call.literals):
            first = call.operands[0] if call.operands else None
            if first is not None and first.keyword is None:
                yield from _operand_refs(first)
        return
    functions, classes = program.functions, program.classes
    if any(t.kind in FOLLOWED and (t.name in functions or t.name in classes) for t in targets):
        return
    if targets and all(_reader(t.name) for t in targets):
        return
    receiver = _object(call.target[:-1])
    if receiver:
        yield receiver
    for operand in call.operands:
        yield from _operand_refs(operand)


def _reader(name: str) -> bool:
    if not name.startswith(BUILTIN_PREFIX):
        return False
    rest = name[len(BUILTIN_PREFIX) :].split(".")
    return rest[-1] not in _MUTATORS and (len(rest) > 1 or rest[0] in _READERS)


def _operand_refs(operand: Operand) -> Iterable[Segs]:
    refs_ = (operand.ref,) if operand.ref else operand.reads
    for segs in refs_:
        found = _object(segs)
        if found:
            yield found


def _object(segs: Segs) -> Segs:
    """A reference up to its first call or subscript (what is reached through it)."""
    for index, seg in enumerate(segs):
        if seg in (CALL, SUBSCRIPT):
            return segs[:index] if index > 1 else ()
    return segs


def stored_wild(target: Segs) -> Segs | None:
    if target[:2] == ("vars", CALL):
        return ANY
    stripped = target
    while stripped and stripped[-1] == SUBSCRIPT:
        stripped = stripped[:-1]
    if len(stripped) >= 2 and stripped[-1] == "__dict__":
        return _object(stripped[:-1]) or None
    return None


Shape = tuple[frozenset[str], dict[str, list[Segs]]]


def shape(record: FunctionRecord) -> Shape:
    """What `own` reads of a function: its parameters' names and its locals' aliases."""
    return frozenset(p.name.lstrip("*") for p in record.info.params), _aliases(record)


def own(record: FunctionRecord, found: Iterable[Segs], known: Shape | None = None) -> set[Segs]:
    """Those of `found` a caller can name: rooted at a parameter (through a local bound to a
    parameter's attribute or element), or `ANY`; cut to `_DEPTH`. `known`: `shape(record)`,
    when the caller keeps it. Each reference is taken apart from the others: the answer for a
    union is the union of the answers."""
    params, aliases = known or shape(record)
    out: set[Segs] = set()
    for segs in found:
        if segs == ANY:
            out.add(ANY)
            continue
        bases = [segs] if segs[0] in params else [b + segs[1:] for b in aliases.get(segs[0], ())]
        for base in bases:
            if base and base[0] in params:
                out.add(base[:_DEPTH])
    return out


def _aliases(record: FunctionRecord) -> dict[str, list[Segs]]:
    """Locals bound to a reference (`b = batch.inner`, `for req in batch.reqs`)."""
    out: dict[str, list[Segs]] = defaultdict(list)
    for stmt in walk_statements(record.info.body):
        value = stmt.value
        if stmt.kind not in ("assign", "loop") or not value or value[0] != "ref":
            continue
        base = _object(value[1])
        for target in stmt.targets:
            if len(target) == 1 and base:
                out[target[0]].append(base)
    return out


def mapped(callee: FunctionRecord, call: CallSite, inner: Iterable[Segs]) -> list[Segs]:
    """The callee's wild references in the caller's terms: a parameter becomes the argument
    that fills it; one the call fills in a way not read here (`*args`), every argument. The
    answer for a union of references is the union of the answers (what one reference adds,
    it adds whatever the others are)."""
    passed = passed_arguments(callee, call)
    receiver = receiver_parameter(callee, call)
    positional = [o for o in call.operands if o.keyword is None]
    out: list[Segs] = []
    everything = False
    for segs in inner:
        if segs == ANY:
            out.append(ANY)
            continue
        root, rest = segs[0], segs[1:]
        if root == receiver:
            base = _object(call.target[:-1])
            if base:
                out.append(base + rest)
            elif call.target[-2:-1] in ((CALL,), (SUBSCRIPT,)):
                everything = True
            continue
        if root in passed:
            key = passed[root][0]
            operand = positional[int(key)] if key.isdigit() else call.operand(key)
            if operand is None:
                everything = True
            elif operand.ref:
                base = _object(operand.ref)
                if base:
                    out.append(base + rest if base == operand.ref else base)
            else:
                out.extend(_operand_refs(operand))
            continue
        starred = {p.name.lstrip("*") for p in callee.info.params if p.name.startswith("*")}
        everything = everything or root in starred
    if everything:
        for operand in call.operands:
            out.extend(_operand_refs(operand))
    return out


def named_write(call: CallSite) -> Segs | None:
    """`setattr(x, "a", v)`: `x.a`, assigned as a statement would (the walk's own write)."""
    last = call.target[-1:] if call.target else ()
    if last and last[0] in _SETATTR:
        name = next((v for k, v in call.literals if k == "1" and isinstance(v, str)), None)
        first = call.operands[0] if call.operands else None
        if name and first is not None and first.ref and CALL not in first.ref:
            return (*first.ref, name)
    return None


def under(cond: Cond, attributes: tuple[Segs, ...], wild: Iterable[Segs], truth: int = 2) -> bool:
    """`cond` reads an attribute below a wild reference, or takes its truth where the
    reference is `truth` segments long or more (handed to unknown code, a local keeps what it
    is bound to: only an attribute may hold a container that code empties)."""
    for w in wild:
        if w == ANY:
            if attributes:
                return True
            continue
        size = len(w)
        if size >= truth and cond == ("ref", w):
            return True
        if any(len(s) > size and s[:size] == w for s in attributes):
            return True
    return False


def reflected(call: CallSite) -> tuple[Segs, ...]:
    """`setattr(x, name, v)` with a name data spells: `x`."""
    last = call.target[-1:] if call.target else ()
    if not last or last[0] not in _SETATTR:
        return ()
    if any(k == "1" and isinstance(v, str) for k, v in call.literals):
        return ()
    first = call.operands[0] if call.operands else None
    return tuple(_operand_refs(first)) if first is not None and first.keyword is None else ()


def mutated(call: CallSite) -> Segs | None:
    """`xs.append(x)`, `self.queue.clear()`: the container a mutating method changes."""
    target = call.target
    if len(target) >= 2 and target[-1] in _MUTATORS:
        return _object(target[:-1]) or None
    return None


def under_named(cond: Cond, named: Segs) -> bool:
    size = len(named)
    return any(s[:size] == named for s in refs(cond))


@lru_cache(maxsize=1 << 16)
def attribute_refs(cond: Cond) -> tuple[Segs, ...]:
    """The attribute references a fact reads (not a local, not an enum-like member)."""
    if not isinstance(cond, tuple) or not cond or cond[0] not in _TAGS:
        return ()
    return tuple(s for s in refs(cond) if len(s) >= 2 and s[0] != ANY_NAME and not member(s))


@lru_cache(maxsize=1 << 16)
def bare_names(cond: Cond) -> tuple[str, ...]:
    """The bare names a fact reads (a global a callee may assign)."""
    if not isinstance(cond, tuple) or not cond or cond[0] not in _TAGS:
        return ()
    return tuple(s[0] for s in refs(cond) if len(s) == 1)


_TAGS = frozenset(("ref", "cmp", "not", "and", "or", "call"))
