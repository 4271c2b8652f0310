"""Composing term signs across the whole program, from the per-function `arith` facts.

Each function is evaluated once per round over the sign algebra: its return value as a function
of its parameters (a summary: `return = +a - b ...`), the values it stores in attributes and
module globals, and the values it passes to other functions' parameters. Rounds repeat until
the attribute, global and parameter tables stop growing. Only functions that can hold a term are
evaluated: those with a term call, callers of functions that return one, readers of attributes
and globals that hold one, and callees that receive one (plus, on demand, the summaries of the
callees they call).

Locals are flow-insensitive (a name is the join of everything assigned to it): a term that may
reach a budget is reported, never dropped for a path the analysis cannot tell apart.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rankguard.analysis.staleness.algebra import (
    EMPTY,
    NEG,
    POS,
    CacheInfo,
    Composite,
    Flow,
    Key,
    Src,
    Val,
    add,
    join,
    keep,
    only_params,
    param,
    signed,
    sub,
    substitute,
    term,
    without_params,
)
from rankguard.analysis.staleness.terms import TermCatalog
from rankguard.core.chains import Hop
from rankguard.core.errors import ErrorRecord
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.arith import FACT, FACT_VERSION, FnArith

BUILTIN = "<builtin>."
# Calls whose result is a term-carrying argument with its sign unchanged.
PRESERVING = frozenset(
    {
        f"{BUILTIN}{n}"
        for n in ("min", "max", "int", "float", "round", "sum", "sorted", "list", "tuple", "iter")
    }
    | {"math.floor", "math.ceil", "math.trunc", "math.fsum", "torch.tensor", "torch.as_tensor"}
    | {"numpy.floor", "numpy.ceil", "numpy.array", "numpy.asarray", "np.floor", "np.ceil"}
)
# Calls whose result carries no magnitude of their arguments (a length, a text, a flag).
DROPPING = frozenset(
    f"{BUILTIN}{n}"
    for n in (
        "len",
        "str",
        "repr",
        "bool",
        "isinstance",
        "issubclass",
        "hasattr",
        "callable",
        "id",
        "hash",
        "type",
        "print",
        "format",
        "range",
        "getattr",
        "setattr",
        "open",
        "ord",
        "chr",
        "any",
        "all",
    )
)
UNKNOWN_SIGN = frozenset({f"{BUILTIN}abs", f"{BUILTIN}pow", f"{BUILTIN}divmod"})
# Methods on a term-carrying value that return (part of) that value.
PRESERVING_METHODS = frozenset(
    {"item", "tolist", "cpu", "cuda", "to", "sum", "get", "clone", "detach", "float", "int"}
    | {"long", "numpy", "values", "pop", "copy", "min", "max", "amin", "amax", "floor"}
)
# Methods whose result is not a magnitude (logging, text, predicates).
DROPPING_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "format"}
    | {"join", "split", "startswith", "endswith", "append", "extend", "add", "update", "keys"}
    | {"items", "is_alive", "numel", "dim", "size", "write", "put", "put_nowait", "set"}
)
NON_VALUE_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})
_MAX_ROUNDS = 40


@dataclass
class Row:
    """One (source, consumer) pair; signs are the composed ones."""

    src: Src
    cache: CacheInfo | None
    function: str
    path: str
    line: int
    sign: int
    chain: tuple[Hop, ...]


@dataclass
class _Result:
    ret: Val = EMPTY
    done: bool = False


@dataclass
class Analysis:
    rows: list[Row] = field(default_factory=list)
    composites: dict[Src, Composite] = field(default_factory=dict)
    errors: list[ErrorRecord] = field(default_factory=list)
    rounds: int = 0
    evaluated: int = 0


def load_facts(program: Program) -> tuple[dict[str, dict[str, Any]], list[ErrorRecord]]:
    """The `arith` fact of every module. Every summary carries it (the extractor registers
    with the package and the cache is salted with the extractors' code); a module without it
    is reported, not re-read from disk."""
    out: dict[str, dict[str, Any]] = {}
    errors: list[ErrorRecord] = []
    for name, mod in program.modules.items():
        fact = mod.summary.facts.get(FACT)
        if not fact or fact.get("version") != FACT_VERSION:
            errors.append(ErrorRecord(mod.path, "staleness facts unavailable for this file"))
            fact = {"functions": {}, "consts": {}}
        out[name] = fact
    return out, errors


def children(node: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sub-expressions of an `arith` expression node (see rankguard.summary.arith)."""
    tag = node[0]
    if tag in ("a", "u", "i"):
        return (node[1],) if tag != "u" else (node[2],)
    if tag == "b":
        return (node[2], node[3])
    if tag == "c":
        out = [*node[2], *(v for _, v in node[3])]
        return (*out, node[6]) if node[6] is not None else tuple(out)
    if tag in ("t", "j", "cmp"):
        return tuple(node[1])
    if tag == "k":
        return (node[1], *(it for _, it in node[2]))
    return ()


def _walk(expr: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def _event_expr(event: tuple[Any, ...]) -> tuple[Any, ...]:
    return event[3] if event[0] == "=" else event[2]


def _pattern_names(pattern: tuple[Any, ...], access: tuple[Any, ...] = ()):
    """(name-or-segs, kind, access path) bound by an assignment target pattern."""
    tag = pattern[0]
    if tag == "r":
        yield pattern[1], "ref", access
    elif tag == "i":
        yield pattern[1], "item", access
    elif tag == "*":
        yield from _pattern_names(pattern[1], (*access, "*"))
    elif tag == "t":
        for index, inner in enumerate(pattern[1]):
            yield from _pattern_names(inner, (*access, index))


def _access(val: Val, path: tuple[Any, ...]) -> Val:
    for step in path:
        val = val.flat() if step == "*" else val.part(step)
    return val


class _Frame:
    """One function's evaluation: memoised locals, comprehension bindings."""

    def __init__(self, record: FunctionRecord, facts: FnArith, consts: dict[str, float]) -> None:
        self.record = record
        self.qual = record.qualname
        self.path = record.path
        self.facts = facts
        self.consts = consts
        self.is_module = record.is_module_body
        info = record.info
        static = any(d and d[-1] == "staticmethod" for d in info.decorators)
        self.me = facts.params[0] if info.cls and facts.params and not static else None
        self.params = {p.lstrip("*"): i for i, p in enumerate(facts.params)}
        self.bindings: dict[str, list[tuple[Any, tuple[Any, ...]]]] = defaultdict(list)
        items: list[tuple[str, Any, tuple[Any, ...]]] = []
        for event in facts.events:
            if event[0] != "=":
                continue
            for pattern in event[2]:
                for segs, kind, access in _pattern_names(pattern):
                    if len(segs) == 1 and segs[0] not in facts.global_names:
                        if kind == "ref":
                            self.bindings[segs[0]].append((event[3], access))
                        else:
                            items.append((segs[0], event[3], (*access, "*")))
        for name, expr, path in items:
            # `d[k] = v` makes `d` hold `v` only when `d` is local; else it is a module global.
            if name in self.bindings or name in self.params:
                self.bindings[name].append((expr, path))
        self.locals: dict[str, Val | None] = {}
        self.overlay: list[dict[str, Val]] = []


class Flows:
    """The fixpoint over the program; `run()` returns every row."""

    def __init__(self, program: Program, catalog: TermCatalog, config: Any) -> None:
        self.p = program
        self.catalog = catalog
        self.cadence = tuple(getattr(config, "cadence_helpers", ()) or ())
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
        self._results: dict[str, _Result] = {}
        self._frames: dict[str, _Frame] = {}
        self._new_param_in: dict[str, dict[str, Val]] = {}
        self._new_attrs: dict[tuple[str, str], Val] = {}
        self._new_globals: dict[tuple[str, str], Val] = {}
        self.evaluated = 0

    # -- facts and indexes --------------------------------------------------------------
    def fn_facts(self, qual: str) -> FnArith | None:
        record = self.p.functions.get(qual)
        if record is None:
            return None
        fact = self.facts.get(record.module)
        return fact["functions"].get(record.info.qualname) if fact else None

    def frame(self, qual: str) -> _Frame | None:
        frame = self._frames.get(qual)
        if frame is None:
            facts = self.fn_facts(qual)
            if facts is None:
                return None
            record = self.p.functions[qual]
            consts = self.facts[record.module].get("consts", {})
            frame = self._frames[qual] = _Frame(record, facts, consts)
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
        return tuple(Target(name) for name in self.p.resolve_target(qual, segs))

    def term_spec(self, name: str):
        if name not in self._term_memo:
            self._term_memo[name] = self.catalog.match(name)
        return self._term_memo[name]

    def instance_classes(self, frame: _Frame, segs: tuple[str, ...]) -> tuple[str, ...]:
        key = (frame.qual, segs)
        found = self._classes.get(key)
        if found is None:
            try:
                values = self.resolver.evaluate(frame.record, segs)
            except RecursionError:  # pragma: no cover - pathological class graphs
                values = ()
            found = tuple(sorted({v.name for v in values if v.kind == "instance"}))
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

    # -- the fixpoint ---------------------------------------------------------------------
    def seeds(self) -> set[str]:
        found: set[str] = set()
        for qual, calls in self.p.calls.items():
            for resolved in calls:
                if any(self.term_spec(t.name) for t in resolved.targets if t.kind != "callback"):
                    found.add(qual)
                    break
                if self.cadence and self._is_cadence(resolved.targets, resolved.call.target):
                    found.add(qual)
                    break
        return found

    def readers(self) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
        """Functions that read an attribute (by name) or a module global (by module, name)."""
        attrs: dict[str, set[str]] = defaultdict(set)
        names: dict[tuple[str, str], set[str]] = defaultdict(set)
        for qual, record in self.p.functions.items():
            facts = self.fn_facts(qual)
            if facts is None:
                continue
            for event in facts.events:
                for node in _walk(_event_expr(event)):
                    if node[0] == "r":
                        segs = node[1]
                        if len(segs) > 1:
                            attrs[segs[-1]].add(qual)
                            for seg in segs[1:-1]:
                                attrs[seg].add(qual)
                        names[(record.module, segs[0])].add(qual)
                    elif node[0] == "a":
                        attrs[node[2]].add(qual)
        return attrs, names

    def run(self) -> Analysis:
        relevant = self.seeds()
        attr_readers, global_readers = self.readers()
        graph = self.p.graph
        rounds = 0
        while rounds < _MAX_ROUNDS:
            rounds += 1
            self._results = {}
            self._new_param_in = {}
            self._new_attrs = {}
            self._new_globals = {}
            for qual in sorted(relevant):
                self.result(qual)
            changed = False
            grown = set(relevant)
            for table, new in (
                (self.attrs, self._new_attrs),
                (self.globals, self._new_globals),
            ):
                for key, val in new.items():
                    merged = join(table.get(key, EMPTY), val)
                    if merged != table.get(key):
                        table[key] = merged
                        changed = True
            for qual, params in self._new_param_in.items():
                slot = self.param_in.setdefault(qual, {})
                for name, val in params.items():
                    merged = join(slot.get(name, EMPTY), val)
                    if merged != slot.get(name):
                        slot[name] = merged
                        changed = True
                if any(not v.empty for v in slot.values()):
                    grown.add(qual)
            for (_cls, attr), val in self.attrs.items():
                if not val.empty:
                    grown |= attr_readers.get(attr, set())
            for key, val in self.globals.items():
                if not val.empty:
                    grown |= global_readers.get(key, set())
            for qual, result in self._results.items():
                if not any(k[0].kind != "param" for k in result.ret.flat().flows):
                    continue
                info = self.p.functions[qual].info
                if {d[-1] for d in info.decorators if d} & {"property", "cached_property"}:
                    grown |= attr_readers.get(info.name, set())  # read as an attribute
                if qual in graph:
                    for caller, _, data in graph.in_edges(qual, data=True):
                        if data.get("kind") != "callback":
                            grown.add(caller)
            grown &= set(self.p.functions)
            if grown != relevant:
                relevant = grown
                changed = True
            if not changed:
                break
        analysis = Analysis(errors=list(self.errors), rounds=rounds)
        self._results = {}
        for qual in sorted(relevant):
            analysis.rows.extend(self.consumers(qual))
        analysis.composites = dict(self.composites)
        analysis.evaluated = self.evaluated
        if rounds >= _MAX_ROUNDS:
            analysis.errors.append(
                ErrorRecord(self.p.root, f"staleness: no fixpoint after {_MAX_ROUNDS} rounds")
            )
        return analysis

    # -- one function ---------------------------------------------------------------------
    def result(self, qual: str) -> _Result:
        """Evaluate a function's events once per round: its return summary, stores, args."""
        found = self._results.get(qual)
        if found is not None:
            return found  # finished, or in progress (a recursive call: nothing yet)
        result = self._results[qual] = _Result()
        frame = self.frame(qual)
        if frame is None:
            result.done = True
            return result
        self.evaluated += 1
        ret = EMPTY
        for event in frame.facts.events:
            tag, line = event[0], event[1]
            if tag == "ret":
                ret = join(ret, self.eval(frame, event[2]))
            elif tag == "ev":
                self.eval(frame, event[2])
            elif tag == "=":
                value = self.eval(frame, event[3])
                for pattern in event[2]:
                    for segs, kind, access in _pattern_names(pattern):
                        path = access if kind == "ref" else (*access, "*")
                        self.store(frame, segs, _access(value, path), line, event[4])
        result.ret = signed(ret)
        result.done = True
        return result

    def concrete(self, frame: _Frame, val: Val) -> Val:
        """A value with the function's parameters replaced by what its callers pass."""
        return substitute(val, self.param_in.get(frame.qual, {}))

    def store(self, frame: _Frame, segs: tuple[str, ...], value: Val, line: int, tag) -> None:
        value = signed(value)
        if value.empty:
            return
        hop = Hop(frame.qual, frame.path, line)
        if len(segs) == 1:
            name = segs[0]
            is_global = frame.is_module or name in frame.facts.global_names
            if name not in frame.bindings and name not in frame.params:
                is_global = True  # `G[k] = v` into a module-level container
            if not is_global:
                return
            key = (frame.record.module, name)
            where = f"{frame.record.module}.{name}"
            value = self.concrete(frame, value)
            if tag is not None:
                value = self._keep(value, tag, where, frame, line, hop)
            self._new_globals[key] = join(self._new_globals.get(key, EMPTY), value)
            return
        classes = self.instance_classes(frame, segs[:-1])
        if not classes:
            return
        value = self.concrete(frame, value)
        info = frame.record.info
        own = f"{frame.record.module}.{info.cls}" if info.cls and segs[:-1] == (frame.me,) else None
        for cls in classes:
            # Named after the class whose code keeps it (the mixin), not the annotated `self`.
            where = f"{own or cls}.{segs[-1]}"
            kept = self._keep(value, tag, where, frame, line, hop) if tag is not None else value
            key = (cls, segs[-1])
            self._new_attrs[key] = join(self._new_attrs.get(key, EMPTY), kept)

    def _keep(self, value: Val, tag, where: str, frame: _Frame, line: int, hop: Hop) -> Val:
        kind, detail, text = tag
        info = CacheInfo(kind, where, frame.path, line, detail)
        kept, composite = keep(value, info, Src("cached", where, frame.path, line), text, hop)
        if composite is not None:
            self.composites[composite.src] = composite
        return kept

    # -- expressions ----------------------------------------------------------------------
    def eval(self, frame: _Frame, node: Any) -> Val:
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
                    for segs, _kind, access in _pattern_names(pattern):
                        if len(segs) == 1:
                            scope[segs[0]] = _access(element, access)
                return self.eval(frame, node[1])
            finally:
                frame.overlay.pop()
        return EMPTY

    def const_sign(self, frame: _Frame, node: Any) -> int | None:
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

    def binop(self, frame: _Frame, node: Any) -> Val:
        _, op, left_node, right_node, _line = node
        left, right = self.eval(frame, left_node), self.eval(frame, right_node)
        if op == "+":
            return add(left, right)
        if op == "-":
            return sub(left, right)
        if left.empty and right.empty:
            return EMPTY
        if op in ("*", "/", "//", "<<", ">>"):
            # A factor that holds no term here (a parameter may bring one: then it is unknown).
            if without_params(right).empty:
                factor = self.const_sign(frame, right_node)
                if factor is None and op in ("//", "<<", ">>"):
                    factor = POS  # a size divisor or a shift: the magnitude's sign stays
                scaled = left.flat().scale(factor) if factor is not None else left.unknown()
                return join(scaled, right.unknown())
            if without_params(left).empty and op == "*":
                factor = self.const_sign(frame, left_node)
                scaled = right.flat().scale(factor) if factor is not None else right.unknown()
                return join(scaled, left.unknown())
        return join(left, right).unknown()

    def attr_of(self, value: Val, attr: str) -> Val:
        if value.empty or attr in NON_VALUE_ATTRS:
            return EMPTY
        if value.parts is not None:
            return value.part(attr)
        return value.unknown()

    def local(self, frame: _Frame, name: str) -> Val | None:
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
            value = join(value, _access(self.eval(frame, expr), path))
        frame.locals[name] = value
        return value

    def ref(self, frame: _Frame, segs: tuple[str, ...]) -> Val:
        head = segs[0]
        if len(segs) == 1:
            if not frame.is_module and head not in frame.facts.global_names:
                found = self.local(frame, head)
                if found is not None:
                    return found
            return self.globals.get((frame.record.module, head), EMPTY)
        if frame.me is not None and segs == (frame.me,):
            return EMPTY
        base = self.ref(frame, segs[:-1]) if segs[:-1] != (frame.me,) else EMPTY
        value = self.attr_of(base, segs[-1])
        for cls in self.instance_classes(frame, segs[:-1]):
            value = join(value, self.attribute(frame, cls, segs[-1]))
        return value

    def attribute(self, frame: _Frame, cls: str, attr: str) -> Val:
        """`obj.attr` for an instance of `cls`: every store into that attribute across the
        class family, or the property's return."""
        value = EMPTY
        for member in sorted(self.family(cls)):
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

    # -- calls -----------------------------------------------------------------------------
    def _is_cadence(self, targets, segs: tuple[str, ...]) -> bool:
        text = ".".join(s for s in segs if s not in ("()", "[]"))
        names = [t.name for t in targets] + [text]
        return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in self.cadence)

    def call(self, frame: _Frame, node: Any) -> Val:
        _, segs, arg_nodes, kw_nodes, line, col, recv_node = node
        targets = self.call_targets(frame.qual, line, col, segs)
        hop = Hop(frame.qual, frame.path, line)
        for target in targets:
            if target.kind == "callback":
                continue
            spec = self.term_spec(target.name)
            if spec is not None:
                return self.term_value(spec, target.name, frame, line, hop)
        args = tuple(self.eval(frame, a) for a in arg_nodes)
        kwargs = tuple((k, self.eval(frame, v)) for k, v in kw_nodes)
        every = join(*args, *(v for _, v in kwargs))
        if self.cadence and self._is_cadence(targets, segs):
            name = targets[0].name if targets else ".".join(segs)
            info = CacheInfo("cadence-helper", name, frame.path, line, ".".join(segs))
            src = Src("cached", f"{name}@{frame.path}:{line}", frame.path, line)
            kept, composite = keep(every, info, src, ".".join(segs), hop)
            if composite is not None:
                self.composites[composite.src] = composite
            return kept
        value = EMPTY
        resolved_in_program = False
        for target in targets:
            if target.kind == "callback":
                continue
            name = target.name
            if name in self.p.functions:
                resolved_in_program = True
                if target.via == "constructor":
                    self.invoke(frame, name, args, kwargs, 1, frame_line=line, bound=True)
                    continue
                bound = len(segs) > 1 or segs[:1] == ("super()",)
                value = join(
                    value, self.invoke(frame, name, args, kwargs, 0, frame_line=line, bound=bound)
                )
            elif name in PRESERVING:
                value = join(value, every.flat())
            elif name in DROPPING:
                continue
            elif name in UNKNOWN_SIGN:
                value = join(value, every.unknown())
        if resolved_in_program or any(
            t.name in PRESERVING | DROPPING | UNKNOWN_SIGN for t in targets
        ):
            return value
        receiver = EMPTY
        if recv_node is not None:
            receiver = self.eval(frame, recv_node)
        elif len(segs) > 1 and "()" not in segs and "[]" not in segs and segs[0] != "super()":
            receiver = self.ref(frame, segs[:-1]) if segs[:-1] != (frame.me,) else EMPTY
        method = segs[-1] if segs else ""
        if method in DROPPING_METHODS:
            return EMPTY
        if not receiver.empty and method in PRESERVING_METHODS:
            return receiver.flat()
        return join(receiver, every).unknown()

    def term_value(self, spec, name: str, frame: _Frame, line: int, hop: Hop) -> Val:
        if spec.fields:
            parts: dict[int | str, Val] = {
                f: term(Src("term", f"{name}.{f}", frame.path, line), hop) for f in spec.fields
            }
            return Val({}, parts)
        value = term(Src("term", name, frame.path, line), hop)
        if spec.element is not None:
            return Val({}, {spec.element: value, spec.element + 1: EMPTY})
        return value

    def invoke(
        self,
        frame: _Frame,
        callee: str,
        args: tuple[Val, ...],
        kwargs: tuple[tuple[str, Val], ...],
        extra_skip: int,
        frame_line: int,
        bound: bool,
    ) -> Val:
        """The value of calling `callee` from `frame`, and the arguments it receives."""
        facts = self.fn_facts(callee)
        if facts is None:
            return EMPTY
        record = self.p.functions[callee]
        info = record.info
        static = any(d and d[-1] == "staticmethod" for d in info.decorators)
        skip = 1 if info.cls and not static and (bound or extra_skip) else 0
        params = [p for p in facts.params[skip:]]
        mapping: dict[str, Val] = {}
        for index, val in enumerate(args):
            if index < len(params) and not params[index].startswith("*"):
                mapping[params[index]] = val
            elif any(p.startswith("*") for p in params):
                star = next(p for p in params if p.startswith("*"))
                mapping[star[1:]] = join(mapping.get(star[1:], EMPTY), val)
        for key, val in kwargs:
            if key in facts.params:
                mapping[key] = join(mapping.get(key, EMPTY), val)
        entry = Hop(callee, record.path, info.line)
        slot = self._new_param_in.setdefault(callee, {})
        for name, val in mapping.items():
            concrete = signed(self.concrete(frame, val))
            if not concrete.empty:
                concrete = without_params(concrete).hop(entry)
                slot[name] = join(slot.get(name, EMPTY), concrete)
        if extra_skip and info.name == "__init__":
            return EMPTY
        result = self.result(callee)
        summary = result.ret
        if summary.empty:
            return EMPTY
        own = without_params(summary)
        if facts.cache and not own.empty:
            info_c = CacheInfo(facts.cache, callee, record.path, info.line, facts.returns_text)
            src = Src("cached", callee, record.path, info.line)
            own, composite = keep(own, info_c, src, facts.returns_text, entry)
            if composite is not None:
                self.composites[composite.src] = composite
        own = own.hop(Hop(frame.qual, frame.path, frame_line)) if frame_line else own
        passed = substitute(only_params(summary), mapping)
        return join(own, passed)

    # -- consumers --------------------------------------------------------------------------
    def consumers(self, qual: str) -> list[Row]:
        """Rows for every additive expression in `qual` whose operands carry a source."""
        frame = self.frame(qual)
        if frame is None:
            return []
        self.result(qual)  # so callee summaries exist for this final evaluation
        rows: dict[tuple[Key, int], Row] = {}
        for event in frame.facts.events:
            for root in _additive_roots(_event_expr(event)):
                value = self.concrete(frame, self.eval(frame, root)).flat()
                line = _line(root, event[1])
                for key, flow in sorted(value.flows.items(), key=_flow_order):
                    if key[0].kind == "param":
                        continue
                    rows.setdefault(
                        (key, line),
                        Row(key[0], key[1], qual, frame.path, line, flow.sign, flow.chain),
                    )
        return list(rows.values())


def _line(node: tuple[Any, ...], default: int) -> int:
    while node[0] == "u":
        node = node[2]
    return node[4] if node[0] == "b" else default


def _flow_order(item: tuple[Key, Flow]) -> tuple:
    (src, cache), flow = item
    return (src, cache or CacheInfo("", "", "", 0), flow.chain)


def _has_binary(node: tuple[Any, ...]) -> bool:
    while node[0] == "u":
        node = node[2]
        if not isinstance(node, tuple) or not node or node[0] not in ("u", "b"):
            return False
    return node[0] == "b" and node[1] in ("+", "-")


def _additive_roots(node: tuple[Any, ...], parent_additive: bool = False):
    """Outermost `+`/`-` expressions (with unary minus inside them), preorder."""
    additive = (node[0] == "b" and node[1] in ("+", "-")) or (node[0] == "u" and node[1] == "-")
    if additive and not parent_additive and _has_binary(node):
        yield node
    for child in children(node):
        yield from _additive_roots(child, additive)
