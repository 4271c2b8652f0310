"""Evaluating one function's expressions over the sign algebra: names, attributes, arithmetic.

`Evaluator` holds the tables the fixpoint grows (attributes, module globals, arguments received)
and reads them while evaluating; calls are evaluated by `CallEvaluator` (calls.py), which it
extends, and the fixpoint itself is `Flows` (flow.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rankguard.analysis.staleness.algebra import (
    EMPTY,
    NEG,
    POS,
    Composite,
    Src,
    Val,
    add,
    join,
    param,
    sub,
    without_params,
)
from rankguard.analysis.staleness.calls import NON_VALUE_ATTRS, CallEvaluator
from rankguard.analysis.staleness.facts import Frame, Result, access_path, load_facts, pattern_names
from rankguard.analysis.staleness.trace import Entry, Trace
from rankguard.catalogs.caching import caching_catalog
from rankguard.catalogs.driver_terms import TermCatalog
from rankguard.model.program import Program
from rankguard.model.records import Target
from rankguard.summary.arith import FnArith


class Evaluator(CallEvaluator):
    """Expression evaluation and the tables it reads; subclassed by the fixpoint."""

    def __init__(self, program: Program, catalog: TermCatalog, config: Any) -> None:
        self.p = program
        self.catalog = catalog
        self.cadence = tuple(getattr(config, "cadence_helpers", ()) or ())
        self.caching = caching_catalog()
        self.callers_by_name: dict[str, set[str]] = defaultdict(set)
        self.facts, self.errors = load_facts(program)
        self.resolver = program.resolver
        self.param_in: dict[str, dict[str, Val]] = {}
        self.attrs: dict[tuple[str, str], Val] = {}
        self.globals: dict[tuple[str, str], Val] = {}
        self.composites: dict[Src, Composite] = {}
        self._targets: dict[str, dict[tuple[int, int], tuple[Any, ...]]] = {}
        self._classes: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
        self._family: dict[str, frozenset[str]] = {}
        self._term_memo: dict[str, Any] = {}
        self._results: dict[str, Result] = {}
        self._frames: dict[str, Frame] = {}
        self._new_param_in: dict[str, dict[str, Val]] = {}
        self._new_attrs: dict[tuple[str, str], Val] = {}
        self._new_globals: dict[tuple[str, str], Val] = {}
        self.evaluations: Counter[str] = Counter()  # per function, replays not counted
        self._traces: dict[str, Trace] = {}  # each function's last evaluation
        self._stack: list[Trace] = []  # the evaluations in progress, innermost last
        self._stamps: dict[tuple[str, Any], int] = {}  # table entry -> round it last changed
        self._seen = 0  # the rounds whose table changes an evaluation started now sees

    # -- what an evaluation reads and writes (trace.py) -----------------------------------
    def read(self, table: str, key: Any) -> None:
        if self._stack:
            self._stack[-1].reads.add((table, key))

    def answered(self, callee: str, ret: Val) -> None:
        if self._stack:
            self._stack[-1].log.append(("r", callee, ret))

    def made(self, entry: Entry) -> None:
        """Make a write of the evaluation in progress, and note it in its trace."""
        self.apply(entry)
        if self._stack:
            self._stack[-1].log.append(entry)

    def apply(self, entry: Entry) -> None:
        tag = entry[0]
        if tag == "c":
            self.composites[entry[1].src] = entry[1]
        elif tag == "p":
            slot = self._new_param_in.setdefault(entry[1], {})
            for name, val in entry[2]:
                slot[name] = join(slot.get(name, EMPTY), val)
        else:
            table = self._new_attrs if tag == "a" else self._new_globals
            table[entry[1]] = join(table.get(entry[1], EMPTY), entry[2])

    # -- facts and indexes --------------------------------------------------------------
    def fn_facts(self, qual: str) -> FnArith | None:
        record = self.p.functions.get(qual)
        if record is None:
            return None
        fact = self.facts.get(record.module)
        return fact["functions"].get(record.info.qualname) if fact else None

    def frame(self, qual: str) -> Frame | None:
        frame = self._frames.get(qual)
        if frame is None:
            facts = self.fn_facts(qual)
            if facts is None:
                return None
            record = self.p.functions[qual]
            consts = self.facts[record.module].get("consts", {})
            frame = self._frames[qual] = Frame(record, facts, consts)
        frame.locals = {}
        return frame

    def call_targets(self, qual: str, line: int, col: int, segs: tuple[str, ...]):
        table = self._targets.get(qual)
        if table is None:
            table = {}
            for resolved in self.p.resolved_calls(qual):
                table[(resolved.call.line, resolved.call.col)] = resolved.targets
            self._targets[qual] = table
        found = table.get((line, col))
        if found is not None:
            return found
        names = self.p.resolve_target(qual, segs)
        record = self.p.functions.get(qual)
        if not names and record is not None:  # a call the model did not index (class body)
            names = sorted({v.name for v in self.resolver.evaluate(record, segs)})
        return tuple(Target(name) for name in names)

    def term_spec(self, name: str):
        if name not in self._term_memo:
            self._term_memo[name] = self.catalog.match(name)
        return self._term_memo[name]

    def instance_classes(self, frame: Frame, segs: tuple[str, ...]) -> tuple[str, ...]:
        key = (frame.qual, segs)
        found = self._classes.get(key)
        if found is None:
            try:
                values = self.resolver.evaluate(frame.record, segs)
            except RecursionError:  # pragma: no cover - pathological class graphs
                values = ()
            # A class's own attributes (`Sizer._memo`) are shared by its instances.
            found = tuple(sorted({v.name for v in values if v.kind in ("instance", "class")}))
            self._classes[key] = found
        return found

    def family(self, cls: str) -> frozenset[str]:
        """Classes whose `self.x` is the same attribute as `cls`'s: ancestors, descendants and
        the ancestors of descendants (sibling mixins of one scheduler)."""
        found = self._family.get(cls)
        if found is None:
            out = set(self.p.mro(cls))
            for derived in self.p.subclasses.get(cls, ()):
                out.update(self.p.mro(derived))
            found = self._family[cls] = frozenset(out)
        return found

    # -- expressions ----------------------------------------------------------------------
    def eval(self, frame: Frame, node: Any) -> Val:
        tag = node[0]
        if tag in ("n", "s", "cmp"):
            return EMPTY
        if tag == "r":
            return self.ref(frame, node[1])
        if tag == "c":
            return self.call(frame, node)
        if tag == "b":
            return self.binop(frame, node)
        if tag == "u":
            inner = self.eval(frame, node[2])
            return inner.flat().scale(NEG) if node[1] == "-" else inner.unknown()
        if tag == "i":
            return self.eval(frame, node[1]).part(node[2])
        if tag == "a":
            return self.attr_of(self.eval(frame, node[1]), node[2])
        if tag == "t":
            parts = {i: self.eval(frame, e) for i, e in enumerate(node[1])}
            return EMPTY if all(v.empty for v in parts.values()) else Val({}, parts)
        if tag == "j":
            return join(*(self.eval(frame, e) for e in node[1]))
        if tag == "k":
            scope: dict[str, Val] = {}
            frame.overlay.append(scope)
            try:
                for pattern, iterable in node[2]:
                    element = self.eval(frame, iterable).part(None)
                    for segs, _kind, access, _key in pattern_names(pattern):
                        if len(segs) == 1:
                            scope[segs[0]] = access_path(element, access)
                return self.eval(frame, node[1])
            finally:
                frame.overlay.pop()
        return EMPTY

    def const_sign(self, frame: Frame, node: Any) -> int | None:
        """+1 / -1 for a known nonzero constant, 0 for zero, None when not a constant."""
        value: float | None = None
        if node[0] == "n":
            value = node[1]
        elif node[0] == "r" and len(node[1]) == 1:
            name = node[1][0]
            bound = frame.bindings.get(name, [])
            if bound and all(expr[0] == "n" and not path for expr, path in bound):
                values = {expr[1] for expr, _ in bound}
                if all(v > 0 for v in values):
                    return POS
                if all(v < 0 for v in values):
                    return NEG
                return None
            if not bound and name not in frame.params:
                value = frame.consts.get(name)
        elif node[0] == "u" and node[1] == "-":
            inner = self.const_sign(frame, node[2])
            return None if inner is None else -inner
        if value is None:
            return None
        return POS if value > 0 else NEG if value < 0 else 0

    def binop(self, frame: Frame, node: Any) -> Val:
        _, op, left_node, right_node, _line = node
        left, right = self.eval(frame, left_node), self.eval(frame, right_node)
        if op == "+":
            return add(left, right)
        if op == "-":
            return sub(left, right)
        if left.empty and right.empty:
            return EMPTY
        if op == "%" and without_params(right).empty:
            return EMPTY  # a remainder is bounded by the divisor, not a magnitude of the term
        if op in ("*", "/", "//", "<<", ">>"):
            # A factor that holds no term here (a parameter may bring one: then it is unknown).
            # A factor that is not a constant (`free * fraction`, a config size) is taken as
            # positive, as sizes, fractions and counts are: the term keeps its sign.
            if without_params(right).empty:
                factor = self.const_sign(frame, right_node)
                scaled = left.flat().scale(POS if factor is None else factor)
                return join(scaled, right.unknown())
            if without_params(left).empty and op == "*":
                factor = self.const_sign(frame, left_node)
                scaled = right.flat().scale(POS if factor is None else factor)
                return join(scaled, left.unknown())
        return join(left, right).unknown()

    def attr_of(self, value: Val, attr: str) -> Val:
        if value.empty or attr in NON_VALUE_ATTRS:
            return EMPTY
        if value.parts is not None:
            return value.part(attr)
        return value.unknown()

    def local(self, frame: Frame, name: str) -> Val | None:
        for scope in reversed(frame.overlay):
            if name in scope:
                return scope[name]
        if name in frame.locals:
            return frame.locals[name] or EMPTY  # None: being computed (a loop-carried name)
        bound = frame.bindings.get(name)
        index = frame.params.get(name)
        if bound is None and index is None:
            return None
        frame.locals[name] = None
        value = param(name, index) if index is not None and not frame.is_module else EMPTY
        for expr, path in bound or ():
            value = join(value, access_path(self.eval(frame, expr), path))
        frame.locals[name] = value
        return value

    def ref(self, frame: Frame, segs: tuple[str, ...]) -> Val:
        head = segs[0]
        if len(segs) == 1:
            if not frame.is_module and head not in frame.facts.global_names:
                found = self.local(frame, head)
                if found is not None:
                    return found
            key = (frame.record.module, head)
            self.read("g", key)
            return self.globals.get(key, EMPTY)
        if frame.me is not None and segs == (frame.me,):
            return EMPTY
        base = self.ref(frame, segs[:-1]) if segs[:-1] != (frame.me,) else EMPTY
        value = self.attr_of(base, segs[-1])
        for cls in self.instance_classes(frame, segs[:-1]):
            value = join(value, self.attribute(frame, cls, segs[-1]))
        return value

    def attribute(self, frame: Frame, cls: str, attr: str) -> Val:
        """`obj.attr` for an instance of `cls`: every store into that attribute across the
        class family, or the property's return."""
        value = EMPTY
        for member in sorted(self.family(cls)):
            self.read("a", (member, attr))
            value = join(value, self.attrs.get((member, attr), EMPTY))
        for owner in self.p.mro(cls):
            method = self.p.classes[owner].methods.get(attr)
            if method is None:
                continue
            decorators = {d[-1] for d in self.p.functions[method].info.decorators if d}
            if decorators & {"property", "cached_property"}:
                value = join(value, self.invoke(frame, method, (), (), 0, frame_line=0, bound=True))
            break
        return value
