"""A helper that only tests something decides a branch as its test would, written in place.

Serving code names its mode tests: `if self.model_runner.graphs_enabled():` where the helper
is `parallel = get_parallel(); return get_exec().backend is not None and parallel.max_ep > 1`.
A call's truth is unknown to the facts a round carries (its loop's mode, the validation's
implications, call-site constants), so such a branch stayed walked on every side. Seen at its
call, the helper's test is an ordinary condition over the caller's references: `self` becomes
the receiver, a parameter the reference the call passes (`results.at_call`), a local bound
once what it was bound to; what would name something else at the call (a module global of the
helper's, a local bound to a call, a value a call makes afresh) is unknown there.

A parameter the call leaves out is its literal default there, a literal argument its value
(`mode.is_extend()` with `def is_extend(self, draft=False)`), and one the call passes anything
else for unknown, which leaves the rest of the test to decide. Only what can be seen whole is
expanded: a helper that is one `return` after locals bound once, where exactly one function
can run (a call several overrides may answer, a generator, a coroutine, a decorated helper or
one returning a constant stays a call of unknown truth, and a platform probe is left to the
platform catalog). Helpers inside the test are expanded the same way, a few levels
deep.

An enum's member spelled in lower case (`Stage.gradients`, which `model.facts` cannot tell
from an attribute) is written in as the member itself, named by its class's qualified name, so
the helper's test and the caller's mean the same member wherever either module imports it
from (`self.zero_stage() >= Stage.gradients` and a constructor's `assert self.zero_stage() <
Stage.gradients` then test the same thing, `context.invariants`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rankguard.analysis.reach import followed
from rankguard.analysis.results import PLAIN_DECORATORS, at_call, in_callee_terms
from rankguard.analysis.settings import NOT_GETTERS
from rankguard.model.enums import Enums
from rankguard.model.facts import Cond, Symbol, member, refs
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, CallSite, Segs, Stmt

_DEPTH = 3  # helpers calling helpers: a few levels reach the tests written this way
_UNKNOWN: Cond = ("other",)


class Predicates:
    """Per program: tests with their helpers expanded, found once per statement."""

    def __init__(self, program: Program, decided: Callable[[Cond], bool]) -> None:
        self.program = program
        self.decided = decided  # calls the facts decide by name (a platform probe)
        self._statements: dict[int, Stmt] = {}
        self._tests: dict[tuple[str, int], Cond | None] = {}
        self._enums = Enums(program)
        self._members: dict[tuple[str, Segs], Cond | None] = {}

    def expanded(self, record: FunctionRecord, stmt: Stmt) -> Stmt:
        """`stmt` with each helper call in its test replaced by the helper's test (`stmt`
        itself when there is none)."""
        found = self._statements.get(id(stmt))
        if found is None:
            cond = self._expand(record.qualname, stmt.cond, stmt.calls, 0)
            cond = self._named(record.qualname, cond)
            found = stmt if cond == stmt.cond else replace(stmt, cond=cond)
            self._statements[id(stmt)] = found
        return found

    def _expand(self, function: str, cond: Cond, calls: tuple[CallSite, ...], depth: int) -> Cond:
        tag = cond[0] if cond else "other"
        if tag == "call":
            return self._called(function, cond, calls, depth) or cond
        if tag == "not":
            return ("not", self._expand(function, cond[1], calls, depth))
        if tag in ("and", "or"):
            return (tag, tuple(self._expand(function, c, calls, depth) for c in cond[1]))
        if tag == "cmp":
            parts = tuple(self._expand(function, c, calls, depth) for c in cond[2])
            return ("cmp", cond[1], parts)
        return cond

    def _called(
        self, function: str, cond: Cond, calls: tuple[CallSite, ...], depth: int
    ) -> Cond | None:
        """The test of the one helper this call runs, restated in the caller's terms."""
        if len(cond) > 4 or CALL in cond[1] or depth >= _DEPTH or self.decided(cond):
            return None
        sites = [c for c in calls if c.target == cond[1]]
        if len(sites) != 1:
            return None
        targets = followed(self.program, function, sites[0])
        if len(targets) != 1 or targets[0].kind != "call":
            return None
        helper = self.program.functions.get(targets[0].name)
        test = None if helper is None else self._test(helper, depth)
        if helper is None or test is None:
            return None
        restated = at_call(helper, sites[0], [test])
        return restated[0] if restated else None

    def _test(self, helper: FunctionRecord, depth: int) -> Cond | None:
        """What `helper` returns, in its own terms (`results.in_callee_terms`), if it only
        tests something."""
        key = (helper.qualname, depth)
        if key not in self._tests:
            self._tests[key] = self._read_test(helper, depth)
        return self._tests[key]

    def _read_test(self, helper: FunctionRecord, depth: int) -> Cond | None:
        info = helper.info
        body = info.body
        if info.is_generator or info.is_async or not body or body[-1].kind != "return":
            return None
        if any(d and d[-1] not in PLAIN_DECORATORS for d in info.decorators):
            return None  # a decorator may stand in for the result
        params = {p.name.lstrip("*") for p in info.params}
        local: dict[str, Cond] = {}
        for stmt in body[:-1]:
            if stmt.kind != "assign" or len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
                return None
            (name,) = stmt.targets[0]
            if name in local or name in params or not stmt.tree:
                return None  # a parameter rebound (`ex = ex.draft`) is not what the call passes
            local[name] = stmt.tree
        final = body[-1]
        if not final.tree or not any(refs(final.tree)):
            return None  # a constant is a default something replaces (a probe's stub, a hook)
        test = self._expand(helper.qualname, final.tree, final.calls, depth + 1)
        test = self._named(helper.qualname, test)
        return _confined(in_callee_terms(test, local, params))

    def _named(self, function: str, cond: Cond) -> Cond:
        """`cond` with each lower-case enum member it reads inside `function` (`Stage.gradients`)
        the member itself (`("const", Symbol("pkg.mod.Stage.gradients"))`)."""
        tag = cond[0] if cond else "other"
        if tag == "ref":
            return self._member(function, cond[1]) or cond
        if tag == "not":
            return ("not", self._named(function, cond[1]))
        if tag in ("and", "or"):
            return (tag, tuple(self._named(function, c) for c in cond[1]))
        if tag == "cmp":
            return ("cmp", cond[1], tuple(self._named(function, c) for c in cond[2]))
        return cond

    def _member(self, function: str, segs: Segs) -> Cond | None:
        """`Owner.name` where `Owner` names one enum class of the program inside `function`,
        and `name` is no method of it and not private."""
        if len(segs) != 2 or member(segs) or segs[1][:1] == "_" or CALL in segs:
            return None
        key = (function, segs)
        if key not in self._members:
            found = None
            values = self.program.evaluate(function, segs[:1])
            if len(values) == 1 and values[0].kind == "class":
                cls = self.program.classes.get(values[0].name)
                mro = self.program.mro(cls.qualname) if cls is not None else ()
                methods = any(segs[1] in self.program.classes[c].methods for c in mro)
                if cls is not None and self._enums.enum(cls.qualname) and not methods:
                    found = ("const", Symbol(f"{cls.qualname}.{segs[1]}"))
            self._members[key] = found
        return self._members[key]


def _confined(cond: Cond) -> Cond:
    """The helper's test with every part that would read a name of the caller's scope, or a
    value a call makes afresh, unknown: only its parameters (marked), enum-like members and
    settings getters (`get_exec().x`, as `analysis.settings` reads them) keep their meaning at
    the call. A module global the helper reads (`mode`) is no name of the caller's, and
    `self.inbox.recv().kind` is a new message each time it is asked."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        return cond if _portable(cond[1]) else _UNKNOWN
    if tag == "not":
        return ("not", _confined(cond[1]))
    if tag in ("and", "or"):
        return (tag, tuple(_confined(c) for c in cond[1]))
    if tag == "cmp":
        return ("cmp", cond[1], tuple(_confined(c) for c in cond[2]))
    return cond if tag == "const" else _UNKNOWN


def _portable(segs: Segs) -> bool:
    if member(segs):
        return True
    if segs[0].startswith("<parameter:"):
        return CALL not in segs
    getter = len(segs) >= 3 and segs[1] == CALL and segs[0] not in NOT_GETTERS
    return getter and CALL not in segs[2:]
