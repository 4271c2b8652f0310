"""Which collectives a call enters, over which group, as tokens the guard comparison can match.

Built on `CollectiveReach`, the one collective index (recursion handled there, once). Two
refinements are local to this analysis and documented here:

- **Call-site constants.** A call that binds a literal to a parameter (or leaves a literal
  default in place: `available(device, distributed=False)`) does not enter the callee's
  collectives that sit under `if <param>:` / `if not <param>:` / `if <param> is None:` and
  are excluded by that literal. One level deep (the callee's own tests), by design.
- **At-most-once functions.** A function that starts with `if self.F: return` and sets
  `self.F = True` runs its collectives at most once per reset; its collectives become one token
  `once:<function>`, and a second occurrence on a path adds nothing. So "negotiate under a
  local condition, then `finalize()` (which negotiates if nobody did)" reaches the collective
  once on every path.

Over which groups a call's collectives run: `groups.py` (`self.names`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite, Event, FrozenBinding
from rankguard.analysis.reach import edge_of, followed
from rankguard.analysis.uniformity.groups import GroupNames
from rankguard.analysis.uniformity.groups import Groups as Groups  # re-exported
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.core.chains import Hop
from rankguard.model.binding import bind
from rankguard.model.invokers import called_as
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import (
    CallSite,
    Segs,
    Stmt,
    walk_calls,
)

Reached = list[tuple[CollectiveSite, list[Hop]]]
_FALSE = frozenset({"False", "None", "0", "0.0", "''", '""'})
_LITERALS = _FALSE | {"True"}


class CollectiveCalls:
    """Per call: the collectives entered (pruned by call-site constants), their tokens, group."""

    def __init__(self, program: Program, reach: CollectiveReach, catalog: RankSourceCatalog):
        self.program = program
        self.reach = reach
        self.catalog = catalog
        self._entered: dict[int, Reached] = {}
        self._pruned: dict[tuple[str, frozenset[tuple[str, str]], FrozenBinding], Reached] = {}
        self._once: dict[str, bool] = {}
        self._tested_params: dict[str, frozenset[str]] = {}
        self._tokens: dict[int, tuple[str, ...]] = {}
        self.names = GroupNames(program, catalog, self.entered)

    # -- what a call enters -------------------------------------------------------------
    def entered(self, record: FunctionRecord, call: CallSite) -> Reached:
        """Primitive collectives (not point-to-point) the call enters, with chains, in order."""
        key = id(call)
        if key not in self._entered:
            self._entered[key] = [] if call.deferred else self._compute(record, call)
        return self._entered[key]

    def _compute(self, record: FunctionRecord, call: CallSite) -> Reached:
        out: Reached = []
        pruned: set[str] = set()
        targets = followed(self.program, record.qualname, call)
        for target in targets:
            callee = self.program.functions.get(target.name)
            called = called_as(call, targets, target.name)  # `to_thread(f, a)` calls `f(a)`
            constants = self.constants(callee, called) if callee is not None else {}
            if callee is None or not constants:
                continue
            pruned.add(callee.qualname)
            binding = self.reach.entry_binding(record, call, target)
            key = (callee.qualname, frozenset(constants.items()), binding)
            if key not in self._pruned:
                calls = list(_feasible_calls(callee.info.body, constants))
                events = self.reach.events_of_calls(callee, calls, binding=binding)
                self._pruned[key] = _pairs(events)
            hop = Hop(record.qualname, record.path, call.line, edge_of(target))
            out.extend((site, [hop, *chain]) for site, chain in self._pruned[key])
        found = _pairs(self.reach.events_of_calls(record, [call]))
        out.extend(
            (site, chain)
            for site, chain in found
            if len(chain) < 2 or chain[1].function not in pruned
        )
        return [(site, chain) for site, chain in out if site.kind == "collective"]

    def constants(self, callee: FunctionRecord, call: CallSite) -> dict[str, str]:
        """Literal values the call gives the callee's parameters its own `if`s test."""
        tested = self._tested(callee)
        if not tested:
            return {}
        binding = bind(callee, call)
        out: dict[str, str] = {}
        for param in callee.info.params:
            if param.name not in tested:
                continue
            if param.name in binding.passed:
                value = binding.passed[param.name].const
            else:
                value = param.default if binding.complete else None
            if value in _LITERALS:
                out[param.name] = value
        return out

    def _tested(self, callee: FunctionRecord) -> frozenset[str]:
        name = callee.qualname
        if name not in self._tested_params:
            self._tested_params[name] = _tested_params(callee.info.body)
        return self._tested_params[name]

    # -- tokens ---------------------------------------------------------------------------
    def tokens(self, record: FunctionRecord, call: CallSite) -> tuple[str, ...]:
        """What a call contributes to a path's collective sequence."""
        key = id(call)
        if key not in self._tokens:
            out: list[str] = []
            for site, chain in self.entered(record, call):
                once = next((h.function for h in chain[1:] if self.at_most_once(h.function)), None)
                out.append(f"once:{once}" if once else site.callee)
            self._tokens[key] = tuple(dict.fromkeys(out))
        return self._tokens[key]

    def at_most_once(self, name: str) -> bool:
        if name not in self._once:
            record = self.program.functions.get(name)
            self._once[name] = record is not None and (
                _returns_once(record.info.body) or self._latched(record)
            )
        return self._once[name]

    def _latched(self, record: FunctionRecord) -> bool:
        """Its collectives all sit under `if not self.A:` (or `self.A is None`) whose block
        stores the state `A` reads: `A` itself, or what a property `A` of the class reads."""
        latches = [
            stmt
            for stmt in record.info.body
            if stmt.kind == "if"
            and (test := flag_test(stmt.cond)) is not None
            and len(test[0]) == 2
            and test[0][0] == "self"
            and not test[1]
        ]
        if not latches:
            return False
        outside = [s for s in record.info.body if s not in latches]
        if any(self.entered(record, c) for c in walk_calls(tuple(outside))):
            return False
        for latch in latches:
            attr = latch.reads[0][1]
            read = {attr}
            prop = self.program.functions.get(
                f"{record.info.cls and record.qualname.rsplit('.', 1)[0]}.{attr}"
            )
            if prop is not None and any(d and d[-1] == "property" for d in prop.info.decorators):
                read |= {
                    r[1] for s in prop.info.body for r in s.reads if len(r) == 2 and r[0] == "self"
                }
            stored = {
                t[1] for s in latch.blocks[0] for t in s.targets if len(t) == 2 and t[0] == "self"
            }
            if not read & stored:
                return False
        return True

    def broadcast(self, record: FunctionRecord, call: CallSite, targets: list[str]) -> bool:
        """A broadcast primitive, or a call whose collectives are all broadcasts: every rank
        gets the root's value."""
        if any(t.rsplit(".", 1)[-1].startswith("broadcast") for t in targets):
            return True
        entered = self.entered(record, call)
        return bool(entered) and all(
            site.callee.rsplit(".", 1)[-1].startswith("broadcast") for site, _chain in entered
        )


def _pairs(events: Iterable[Event]) -> Reached:
    return [(event.site, list(event.chain)) for event in events]


def flag_test(cond: Cond) -> tuple[Segs, bool, bool] | None:
    """(reference, whether the branch runs when it holds something, whether the test compares
    with None) for `r`, `not r`, `r is None`, `r is not None`; None for any other test."""
    negated = cond[:1] == ("not",)
    inner = cond[1] if negated else cond
    if inner[:1] == ("ref",):
        return inner[1], not negated, False
    if (
        negated
        or inner[:1] != ("cmp",)
        or len(inner[1]) != 1
        or inner[1][0] not in ("is", "is not")
    ):
        return None
    left, right = inner[2]
    if left[:1] == ("ref",) and right == ("const", None):
        return left[1], inner[1][0] == "is not", True
    return None


def _test_of(stmt: Stmt) -> tuple[str, bool, bool] | None:
    """`flag_test` of an `if` on a bare local name (a parameter)."""
    test = flag_test(stmt.cond) if stmt.kind == "if" else None
    if test is None or len(test[0]) != 1:
        return None
    return test[0][0], test[1], test[2]


def _tested_params(body: tuple[Stmt, ...]) -> frozenset[str]:
    names: set[str] = set()
    stack = list(body)
    while stack:
        stmt = stack.pop()
        test = _test_of(stmt)
        if test is not None:
            names.add(test[0])
        for block in stmt.blocks:
            stack.extend(block)
    return frozenset(names)


def _feasible_calls(body: tuple[Stmt, ...], constants: dict[str, str]) -> Iterator[CallSite]:
    """The body's calls, skipping the branches the constants exclude."""
    for stmt in body:
        yield from stmt.calls
        test = _test_of(stmt)
        blocks = stmt.blocks
        if test is not None and test[0] in constants:
            truthy = constants[test[0]] not in _FALSE
            if test[2]:  # compared with None
                truthy = constants[test[0]] != "None"
            blocks = (blocks[0],) if truthy == test[1] else blocks[1:]
        for block in blocks:
            yield from _feasible_calls(block, constants)
        yield from stmt.exits  # a `with` left: its `__exit__` calls


def _returns_once(body: tuple[Stmt, ...]) -> bool:
    """`if self.F: return` first (a docstring aside), and `self.F = True` somewhere in the body."""
    stmts = [s for s in body if not (s.kind == "expr" and not s.calls and not s.reads)]
    if not stmts or stmts[0].kind != "if":
        return False
    first = stmts[0]
    test = flag_test(first.cond)
    if test is None or len(test[0]) != 2 or not test[1] or test[2] or not first.blocks[0]:
        return False
    flag = test[0]
    if first.blocks[0][0].kind != "return":
        return False
    return any(
        s.kind == "assign" and s.targets == (flag,) and s.value == ("const", "True")
        for s in stmts[1:]
    )
