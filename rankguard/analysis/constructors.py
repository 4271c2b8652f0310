"""How a constructor chain runs: whether a constructor hands on to the next one in the MRO
(`super().__init__()` at its top level, nothing leaving before it) and whether it runs some
`__init__` again. Stability (`analysis.stability`) and getter invariants
(`analysis.invariants`) both read a class's construction this way.
"""

from __future__ import annotations

from rankguard.summary.ir import CALL, Stmt, walk_calls, walk_statements

SELF = "self"
SUPER_INIT = ("super()", "__init__")
OLD_SUPER_INIT = ("super", CALL, "__init__")  # `super(Engine, self).__init__()`


def hands_on(body: tuple[Stmt, ...], own: str | None = None) -> bool:
    """A constructor runs the next one in the MRO whenever it runs: `super().__init__(...)`
    as a statement at the top level of its body, no early exit before it (`if lazy: return`:
    the bases' stores never run, and a class attribute may stand). Given the constructor's
    class (`own`, as `FunctionInfo.cls` spells it), its old spelling `super(Own,
    self).__init__(...)` counts too: the same next class, on the same object."""
    for index, stmt in enumerate(body):
        if stmt.kind == "expr" and _runs_super_init(stmt, own):
            return not may_leave(body[:index])
    return False


def _runs_super_init(stmt: Stmt, own: str | None) -> bool:
    if any(c.target == SUPER_INIT for c in stmt.calls):
        return True
    if own is None or not any(c.target == OLD_SUPER_INIT for c in stmt.calls):
        return False
    return any(
        c.target == ("super",) and [o.ref for o in c.operands] == [(own,), (SELF,)]
        for c in stmt.calls
    )


def may_leave(body: tuple[Stmt, ...]) -> bool:
    """An early exit anywhere in `body` (in a branch, loop, `try`): `return`, `raise`, `yield`."""
    return any(s.kind in ("return", "raise") or s.yields for s in walk_statements(body))


def reruns(body: tuple[Stmt, ...]) -> bool:
    """A constructor runs some `__init__` other than through `super().__init__()`
    (`Base.__init__(self)`): a base's constructor may run again after those before it."""
    return any(c.target[-1:] == ("__init__",) and c.target != SUPER_INIT for c in walk_calls(body))
