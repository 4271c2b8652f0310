"""Evaluating calls: driver terms, calls into the program (argument binding, return summaries,
decorator caches), builtins and methods whose effect on a value's sign is known.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from rankguard.analysis.staleness.algebra import (
    EMPTY,
    CacheInfo,
    Src,
    Val,
    join,
    keep,
    only_params,
    signed,
    substitute,
    term,
    without_params,
)
from rankguard.analysis.staleness.facts import KEEPING_METHODS, Frame
from rankguard.core.chains import Hop

BUILTIN = "<builtin>."
# Calls whose result is a term-carrying argument with its sign unchanged.
PRESERVING = frozenset(
    {
        f"{BUILTIN}{n}"
        for n in ("min", "max", "int", "float", "round", "sum", "sorted", "list", "tuple", "iter")
    }
    | {"math.floor", "math.ceil", "math.trunc", "math.fsum", "torch.tensor", "torch.as_tensor"}
    | {"dataclasses.field"}  # `field(default_factory=functools.cache(walk))`
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


class CallEvaluator:
    """The call half of `Evaluator` (evaluate.py), which provides `eval`, `ref` and the tables."""

    # -- calls -----------------------------------------------------------------------------
    def _is_cadence(self, targets, segs: tuple[str, ...]) -> bool:
        text = ".".join(s for s in segs if s not in ("()", "[]"))
        names = [t.name for t in targets] + [text]
        return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in self.cadence)

    def call(self, frame: Frame, node: Any) -> Val:
        _, segs, arg_nodes, kw_nodes, line, col, recv_node = node
        targets = self.call_targets(frame.qual, line, col, segs)
        if targets and all(t.kind == "callback" for t in targets):
            # A call written inside a lambda is a callback edge to the model; the lambda
            # stands for its result here (see the `arith` fact), so the call is made.
            targets = tuple(t._replace(kind="call") for t in targets)
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
                self.made(("c", composite))
            return kept
        wrapped = self.cache_wrapper(frame, targets, arg_nodes, line, hop)
        if wrapped is not None:
            return wrapped
        value = EMPTY
        resolved_in_program = False
        for target in targets:
            if target.kind == "callback":
                continue
            name = target.name
            # A function without arithmetic facts (a lambda: the `arith` fact reads it where
            # it is written) is evaluated through the value it was bound to, below.
            if name in self.p.functions and self.fn_facts(name) is not None:
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
        if method in KEEPING_METHODS and recv_node is None and len(segs) > 1:
            # `self.history.append(free)`: the list outlives the call; what it holds is read
            # back later, stale. (A local list is a local: `store` leaves it alone.)
            where = ".".join(segs[:-1])
            tag = ("list", f"{method} to `{where}`", where)
            self.store(frame, segs[:-1], every.flat(), line, tag)
            return EMPTY
        if method in DROPPING_METHODS:
            return EMPTY
        if not receiver.empty and method in PRESERVING_METHODS:
            return receiver.flat()
        if without_params(receiver).empty and segs and "()" not in segs and "[]" not in segs:
            # Calling a kept callable (`trapped = functools.cache(walk)`, then `trapped()`, a
            # lambda passed as `get_budget`): the value it was bound to stands for its result.
            held = self.ref(frame, segs)
            if not held.empty:
                return join(held.flat(), every.unknown())
        return join(receiver, every).unknown()

    def cache_wrapper(self, frame: Frame, targets, arg_nodes, line: int, hop: Hop) -> Val | None:
        """`functools.cache(fn)` applied as a call (caching catalog `wrappers`): the value is
        what `fn` returns, kept; None when the call is no such wrapper."""
        wrapper = next((t.name for t in targets if t.name in self.caching.wrappers), None)
        if wrapper is None or not arg_nodes or arg_nodes[0][0] != "r":
            return None
        segs = arg_nodes[0][1]
        value = EMPTY
        names = {v.name for v in self.resolver.evaluate(frame.record, segs)}
        for name in sorted(names | set(self.p.resolve_target(frame.qual, segs))):
            spec = self.term_spec(name)
            if spec is not None:
                value = join(value, self.term_value(spec, name, frame, line, hop))
            elif name in self.p.functions:
                value = join(
                    value, self.invoke(frame, name, (), (), 0, frame_line=line, bound=True)
                )
        kind = wrapper.rsplit(".", 1)[-1]
        where = ".".join(segs)
        info = CacheInfo(kind, where, frame.path, line, f"{wrapper}({where})")
        src = Src("cached", f"{where}@{frame.path}:{line}", frame.path, line)
        kept, composite = keep(value, info, src, where, hop)
        if composite is not None:
            self.made(("c", composite))
        return kept

    def term_value(self, spec, name: str, frame: Frame, line: int, hop: Hop) -> Val:
        if spec.fields:
            parts: dict[int | str, Val] = {
                f: term(Src("term", f"{name}.{f}", frame.path, line, spec.errs_of(f)), hop)
                for f in spec.fields
            }
            return Val({}, parts)
        value = term(Src("term", name, frame.path, line, spec.errs), hop)
        if spec.element is not None:
            return Val({}, {spec.element: value, spec.element + 1: EMPTY})
        return value

    def invoke(
        self,
        frame: Frame,
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
        skip = 1 if info.takes_self and (bound or extra_skip) else 0
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
        given = []
        for name, val in mapping.items():
            concrete = signed(self.concrete(frame, val))
            if not concrete.empty:
                given.append((name, without_params(concrete).hop(entry)))
        self.made(("p", callee, tuple(given)))
        if extra_skip and info.name == "__init__":
            return EMPTY
        summary = self.result(callee).ret
        self.answered(callee, summary)
        if summary.empty:
            return EMPTY
        own = without_params(summary)
        cache = next(filter(None, map(self.caching.decorator, info.decorators)), None)
        if cache and not own.empty:
            info_c = CacheInfo(cache, callee, record.path, info.line, facts.returns_text)
            src = Src("cached", callee, record.path, info.line)
            own, composite = keep(own, info_c, src, facts.returns_text, entry)
            if composite is not None:
                self.made(("c", composite))
        own = own.hop(Hop(frame.qual, frame.path, frame_line)) if frame_line else own
        passed = substitute(only_params(summary), mapping)
        return join(own, passed)
