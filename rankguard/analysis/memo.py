"""Work a memo attribute caches: it runs while the attribute is unset, and sets it.

Two shapes are a cache in serving code: an early return of the memo (`memo = getattr(args,
"_config", None); if memo is not None: return memo; ...build...; args._config = built`) and a
guarded build (`if self._tok is None: self._tok = load()`). What runs on the building side runs
once per object that holds the memo (every round, if the object is the round's batch); it is
still reported (the round it runs in stalls), marked cadenced like a `functools.cache` body. A
module global built the same way (`global _h; if _h is None: _h = load()`) is built once per
process. A test of an attribute the function never assigns is no cache: something else sets it,
maybe every round."""

from __future__ import annotations

from collections.abc import Callable

from rankguard.analysis.stability import ANY_NAME, COMPUTED_NAME, SELF, Stability, class_of
from rankguard.model.records import FunctionRecord
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import CALL, SUBSCRIPT, Segs, Stmt, segs_text, walk_statements

PROCESS = "once per process"  # a module global's memo: the cadence says so
# A memo shape: the cadence of the work an `if` statement caches, if it is one.
MemoShape = Callable[[FunctionRecord, Stmt, Stability], str | None]


def past_return(record: FunctionRecord, stmt: Stmt, stability: Stability) -> str | None:
    """The cadence of what follows `if memo is not None: return memo`, if `stmt` is that; the
    return may sit under a test of the memo's key (`if built_from == path: return memo`), and
    then what follows runs also when the key changed, which rebuilds and sets it too."""
    body = stmt.blocks[0] if stmt.kind == "if" and stmt.blocks else ()
    tested = _tested(stmt.cond, False)
    returns = [s for s in walk_statements(body) if s.kind == "return"]
    if any(stmt.blocks[1:]) or not returns or tested is None:
        return None
    if any(s.tree != ("ref", tested) for s in returns):
        return None  # `if self.paused: return`: a flag, not a memo handed back
    return _cached(record, stmt, tested, stability)


def building(record: FunctionRecord, stmt: Stmt, stability: Stability) -> str | None:
    """The cadence of the body of `if self._x is None: self._x = ...`, if `stmt` is that."""
    tested = _tested(stmt.cond, True) if stmt.kind == "if" and stmt.blocks else None
    reason = _cached(record, stmt, tested, stability) if tested else None
    attribute = _attribute_of(record, tested) if reason and tested else None
    if attribute is None:
        return None
    built = any(attribute in s.targets for s in walk_statements(stmt.blocks[0]))
    return reason if built else None


def held_by(record: FunctionRecord, stmt: Stmt) -> str | None:
    """What holds the memo `stmt` tests (`self`, or a parameter's name), if it is a memo test
    of either shape."""
    for unset in (False, True):
        tested = _tested(stmt.cond, unset) if stmt.kind == "if" else None
        attribute = _attribute_of(record, tested) if tested else None
        if attribute is not None:
            return attribute[0]
    return None


def _cached(record: FunctionRecord, stmt: Stmt, tested: Segs, stability: Stability) -> str | None:
    """`tested` reads a memo attribute: of `self` or of a parameter (an object that outlives
    the call), set to a value after `stmt` by this function, and unset by no other function
    but constructors (one that resets it, maybe every round, makes it no cache)."""
    attribute = _attribute_of(record, tested)
    if attribute is not None and len(attribute) == 1:
        return _global_cached(record, stmt, attribute[0], stability)
    if attribute is None or len(attribute) != 2:
        return None
    root, name = attribute
    if root != SELF and root not in {p.name for p in record.info.params}:
        return None
    writes = [
        s
        for s in walk_statements(record.info.body)
        if attribute in s.targets and s.line > stmt.line and s.tree != ("const", None)
    ]
    owner = class_of(record) if root == SELF else None
    if not writes or _reset_elsewhere(record, owner, name, stability):
        return None
    where = f"{record.path}:{writes[0].line}"
    held = segs_text(attribute)
    return f"cached in `{held}`: runs while it is unset and sets it, once per object ({where})"


def _global_cached(
    record: FunctionRecord, stmt: Stmt, name: str, stability: Stability
) -> str | None:
    """`global _h; if _h is None: _h = load()`: a module global this function sets after the
    test and nothing unsets (`= None`, `setattr(mod, "_h", None)`): not this function (a builder
    that clears it when its key changes rebuilds with the key, maybe every round), no other
    function of its module, and no function anywhere through an attribute of that name
    (`cache._h = None` from another module; another object's private attribute of the same
    name is taken for it, a miss that only keeps a finding high). Built once per process
    (`PROCESS` in the cadence; `analysis.warm` lowers what it builds)."""
    sets = [s for s in walk_statements(record.info.body) if (name,) in s.targets]
    writes = [s for s in sets if s.line > stmt.line and s.tree != ("const", None)]
    if not writes or any(map(_unsets, sets)):
        return None
    for other in stability.program.functions.values():
        if other is record or other.module != record.module:
            continue
        if name not in other.info.global_names:
            continue
        if any(_unsets(s) for s in walk_statements(other.info.body) if (name,) in s.targets):
            return None
    for function, target in stability.writes().get(name, ()):
        if target[0] == SELF:
            continue
        body = stability.program.functions[function].info.body
        sets = [s for s in walk_statements(body) if target in s.targets]
        if not sets or any(map(_unsets, sets)):  # no store: `setattr(cache, "_h", None)`
            return None
    where = f"{record.path}:{writes[0].line}"
    held = f"the module global `{name}`"
    return f"cached in {held}: runs while it is unset and sets it, {PROCESS} ({where})"


def _unsets(stmt: Stmt) -> bool:
    """A store that leaves a memo unset, or may: anything but assigning it a value."""
    return stmt.kind != "assign" or stmt.tree == ("const", None)


def _reset_elsewhere(
    record: FunctionRecord, owner: str | None, name: str, stability: Stability
) -> bool:
    """Another function may unset the memo: it writes the attribute otherwise than by
    assigning it a value (`= None`, `del`, `setattr`, a mutating call). Another that fills
    it (a hook building the same cached object) leaves it a cache. A private memo (`_name`)
    is not written by a name computed at run time on another object (`setattr(args, key, v)`
    over a mapping, `new.__dict__.update(state)`): such names come from data, settings and
    copied state, which do not spell a module's private memo. A public memo may be one of
    them, and an object may clear its own caches by the names it lists (`setattr(self, name,
    None)`) or through its `__dict__`."""
    writers = stability.writers(owner, name) - {record.qualname}
    if name.startswith("_"):
        writes = stability.writes()
        computed = {f for key in _COMPUTED for f, _ in writes.get(key, ())}
        named = {f for f, _ in writes.get(name, ())}
        writers -= computed - named - _clearing_itself(stability, owner, name)
    for function in writers:
        body = stability.program.functions[function].info.body
        sets = [s for s in walk_statements(body) if any(t[-1:] == (name,) for t in s.targets)]
        if not sets or any(map(_unsets, sets)):
            return True
    return False


_COMPUTED = (COMPUTED_NAME, ANY_NAME)  # `setattr(obj, name, v)`, `obj.__dict__[name] = v`


def _clearing_itself(stability: Stability, owner: str | None, name: str) -> set[str]:
    """Methods that set computed names on their own object (`setattr(self, name, None)` over
    the names it lists, `self.__dict__.pop(name)`) where that object may hold the memo: of the
    memo's class, or, for a memo on an object of unknown class, of a class that assigns
    `self.<name>` itself. An attribute hook (`__setattr__`) sets what an assignment names:
    those are counted already."""
    functions = stability.program.functions
    holders = stability.related(owner) if owner else stability.holders(name)
    writes = stability.writes()
    return {
        function
        for key in _COMPUTED
        for function, target in writes.get(key, ())
        if target[:1] == (SELF,)
        and functions[function].info.name != "__setattr__"
        and class_of(functions[function]) in holders
    }


def _tested(cond: Cond, unset: bool) -> Segs | None:
    """The reference `cond` tests for being unset (`unset`) or set: `x is None`, `not x`
    against `x is not None`, `x`."""
    if not cond:
        return None
    if cond[0] == "not":
        return _tested(cond[1], not unset)
    if cond[0] == "ref":
        return None if unset else cond[1]
    if cond[0] == "cmp" and len(cond[1]) == 1 and cond[1][0] in ("is", "is not"):
        left, right = cond[2]
        if left[0] == "ref" and right == ("const", None):
            return left[1] if (cond[1][0] == "is") is unset else None
    return None


def _attribute_of(record: FunctionRecord, segs: Segs) -> Segs | None:
    """The attribute a tested reference is: itself (`self._tok`), or what a local read it
    from (`memo = getattr(args, "_config", None)`, `memo = args._config`)."""
    if CALL in segs or SUBSCRIPT in segs:
        return None
    if len(segs) >= 2 or segs[0] in record.info.global_names:
        return segs
    sources = [
        _read_attribute(s.tree)
        for s in walk_statements(record.info.body)
        if s.kind == "assign" and s.targets == (segs,)
    ]
    if len(sources) != 1 or sources[0] is None:
        return None
    return sources[0]


def _read_attribute(tree: Cond) -> Segs | None:
    if tree[0] == "ref" and len(tree[1]) >= 2 and CALL not in tree[1]:
        return tree[1]
    if tree[0] == "call" and tree[1] == ("getattr",) and len(tree[2]) >= 2:
        owner, name = tree[2][0], tree[2][1]
        if owner[0] == "ref" and name[0] == "const" and isinstance(name[1], str):
            return (*owner[1], name[1])
    return None
