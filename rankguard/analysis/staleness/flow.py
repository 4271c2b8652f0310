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

from collections import defaultdict
from dataclasses import dataclass, field

from rankguard.analysis.staleness.algebra import (
    EMPTY,
    CacheInfo,
    Composite,
    Src,
    Val,
    join,
    keep,
    signed,
    substitute,
)
from rankguard.analysis.staleness.consumers import ConsumerRows, Row
from rankguard.analysis.staleness.evaluate import Evaluator
from rankguard.analysis.staleness.facts import (
    Frame,
    Result,
    access_path,
    event_expr,
    pattern_names,
    walk,
)
from rankguard.analysis.staleness.trace import Trace
from rankguard.core.chains import Hop
from rankguard.core.errors import ErrorRecord
from rankguard.model.load import paused_gc


@dataclass
class Analysis:
    rows: list[Row] = field(default_factory=list)
    composites: dict[Src, Composite] = field(default_factory=dict)
    errors: list[ErrorRecord] = field(default_factory=list)
    rounds: int = 0
    evaluated: int = 0


_MAX_ROUNDS = 40


class Flows(Evaluator, ConsumerRows):
    """The fixpoint over the program; `run()` returns every row."""

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
                if any(t.name in self.caching.wrappers for t in resolved.targets):
                    found.add(qual)  # `functools.cache(fn)`: the kept value is made here
                    break
        return found

    def readers(self) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
        """Functions that read an attribute (by name) or a module global (by module, name).

        Also fills `self.callers_by_name`: the functions with a call whose last name is the key,
        for calls the call graph misses (inside a lambda, a class body)."""
        attrs: dict[str, set[str]] = defaultdict(set)
        names: dict[tuple[str, str], set[str]] = defaultdict(set)
        calls = self.callers_by_name
        for qual, record in self.p.functions.items():
            facts = self.fn_facts(qual)
            if facts is None:
                continue
            for event in facts.events:
                for node in walk(event_expr(event)):
                    # A call's callee is read too (`memo.get(k)`, a kept callable `trapped()`).
                    if node[0] in ("r", "c") and node[1] and node[1][0] not in ("()", "[]"):
                        segs = node[1]
                        if len(segs) > 1:
                            attrs[segs[-1]].add(qual)
                            for seg in segs[1:-1]:
                                attrs[seg].add(qual)
                        names[(record.module, segs[0])].add(qual)
                    elif node[0] == "a":
                        attrs[node[2]].add(qual)
                    if node[0] == "c" and node[1]:
                        calls[node[1][-1]].add(qual)
        return attrs, names

    def run(self) -> Analysis:
        """The fixpoint. Each round rebuilds millions of small acyclic values (sign terms,
        summaries); the cyclic collector waits meanwhile (`paused_gc`), as it does for the
        uniformity solve, instead of re-scanning the loaded model each time they pile up."""
        with paused_gc():
            return self._run()

    def _run(self) -> Analysis:
        attr_readers, global_readers = self.readers()
        relevant = self.seeds()
        wrapper_names = {name.rsplit(".", 1)[-1] for name in self.caching.wrappers}
        for name in sorted(wrapper_names):  # `cache(fn)` where the call graph has no edge
            relevant |= self.callers_by_name.get(name, set())
        graph = self.p.graph
        rounds = 0
        while rounds < _MAX_ROUNDS:
            rounds += 1
            self._seen = rounds - 1
            self._results = {}
            self._new_param_in = {}
            self._new_attrs = {}
            self._new_globals = {}
            for qual in sorted(relevant):
                self.result(qual)
            changed = False
            grown = set(relevant)
            for tag, table, new in (
                ("a", self.attrs, self._new_attrs),
                ("g", self.globals, self._new_globals),
            ):
                for key, val in new.items():
                    merged = join(table.get(key, EMPTY), val)
                    if merged != table.get(key):
                        table[key] = merged
                        self._stamps[(tag, key)] = rounds
                        changed = True
            for qual, params in self._new_param_in.items():
                slot = self.param_in.setdefault(qual, {})
                for name, val in params.items():
                    merged = join(slot.get(name, EMPTY), val)
                    if merged != slot.get(name):
                        slot[name] = merged
                        self._stamps[("p", qual)] = rounds
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
                grown |= self.callers_by_name.get(info.name, set())
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
        self._seen = rounds
        self._results = {}
        for qual in sorted(relevant):
            analysis.rows.extend(self.consumers(qual))
        analysis.composites = dict(self.composites)
        analysis.evaluated = sum(self.evaluations.values())
        if rounds >= _MAX_ROUNDS:
            analysis.errors.append(
                ErrorRecord(self.p.root, f"staleness: no fixpoint after {_MAX_ROUNDS} rounds")
            )
        return analysis

    # -- one function ---------------------------------------------------------------------
    def result(self, qual: str) -> Result:
        """Evaluate a function's events once per round: its return summary, stores, args; or
        replay its last evaluation where nothing it read has changed since (trace.py)."""
        found = self._results.get(qual)
        if found is not None:
            return found  # finished, or in progress (a recursive call: nothing yet)
        result = self._results[qual] = Result()
        trace = self._traces.get(qual)
        if trace is not None and self._replayed(trace):
            result.ret = trace.ret
            result.done = True
            return result
        frame = self.frame(qual)
        if frame is None:
            result.done = True
            return result
        self.evaluations[qual] += 1
        trace = Trace(self._seen)
        self._stack.append(trace)
        try:
            ret = self._evaluate(frame)
        finally:
            self._stack.pop()
        result.ret = trace.ret = self.one_term_per_spec(signed(ret))
        result.done = True
        self._traces[qual] = trace
        return result

    def _replayed(self, trace: Trace) -> bool:
        """Whether an evaluation still holds (no table entry it read changed since, and every
        callee, asked again in order, returns what it returned then); its writes are made
        again on the way."""
        stamps = self._stamps
        if any(stamps.get(key, 0) > trace.seen for key in trace.reads):
            return False
        for entry in trace.log:
            if entry[0] != "r":
                self.apply(entry)
                continue
            ret = self.result(entry[1]).ret
            if ret is not entry[2] and ret != entry[2]:
                return False
        return True

    def _evaluate(self, frame: Frame) -> Val:
        ret = EMPTY
        for event in frame.facts.events:
            tag, line = event[0], event[1]
            if tag == "ret":
                ret = join(ret, self.eval(frame, event[2]))
            elif tag in ("ev", "?"):
                self.eval(frame, event[2])
            elif tag == "=":
                value = self.eval(frame, event[3])
                for pattern in event[2]:
                    for segs, kind, access, key in pattern_names(pattern):
                        if kind == "ref":
                            stored = access_path(value, access)
                        elif key is not None:  # dict entries are told apart by key
                            stored = Val({}, {key: access_path(value, access)})
                        else:
                            stored = access_path(value, (*access, "*"))
                        self.store(frame, segs, stored, line, event[4])
        return ret

    def one_term_per_spec(self, ret: Val) -> Val:
        """Terms of one catalog entry returned from several call sites of one function (its
        device branches: `torch.cuda.mem_get_info`, `torch.xpu.mem_get_info`, ...) are one term
        to its callers, named by the catalog and placed at the first site."""
        groups: dict[tuple[str, str, CacheInfo | None], list[Src]] = defaultdict(list)
        for src, cache in ret.flat().flows:
            spec = self.term_spec(src.name) if src.kind == "term" else None
            if spec is not None:
                groups[(spec.name, src.path, cache)].append(src)
        merged = {
            src: min(group)._replace(name=name)
            for (name, _path, _cache), group in groups.items()
            if len({s.name for s in group}) > 1
            for src in group
        }
        if not merged:
            return ret
        return ret.map_flows(lambda k, f: [((merged.get(k[0], k[0]), k[1]), f)])

    def concrete(self, frame: Frame, val: Val) -> Val:
        """A value with the function's parameters replaced by what its callers pass."""
        self.read("p", frame.qual)
        return substitute(val, self.param_in.get(frame.qual, {}))

    def store(self, frame: Frame, segs: tuple[str, ...], value: Val, line: int, tag) -> None:
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
            # Module state outlives the round: a term stored there is read back stale.
            tag = tag or ("global", f"module global `{name}`", where)
            value = self._keep(value, tag, where, frame, line, hop)
            self.made(("g", key, value))
            return
        classes = self.instance_classes(frame, segs[:-1])
        if not classes:
            return
        value = self.concrete(frame, value)
        info = frame.record.info
        own = f"{frame.record.module}.{info.cls}" if info.cls and segs[:-1] == (frame.me,) else None
        if tag is None and self.caching.runs_once(info.name):
            tag = ("start-up", f"set in `{info.name}`", ".".join(segs))
        for cls in classes:
            # Named after the class whose code keeps it (the mixin), not the annotated `self`.
            where = f"{own or cls}.{segs[-1]}"
            kept = self._keep(value, tag, where, frame, line, hop) if tag is not None else value
            self.made(("a", (cls, segs[-1]), kept))

    def _keep(self, value: Val, tag, where: str, frame: Frame, line: int, hop: Hop) -> Val:
        kind, detail, text = tag
        info = CacheInfo(kind, where, frame.path, line, detail)
        kept, composite = keep(value, info, Src("cached", where, frame.path, line), text, hop)
        if composite is not None:
            self.made(("c", composite))
        return kept
