"""Rank-divergent collectives: collectives whose reachability depends on rank-local data.

Ranks must agree on which collectives they enter (DESIGN §1, §2.3). PARCOACH finds MPI
collectives under rank-dependent control flow; we do the same over the summary IR in two steps:

1. **Rank-local taint.** Each function is walked once, flow-sensitively over its locals, with
   everything that comes from outside it (parameters, attributes, module globals, callees'
   returns) kept as *symbolic nodes*. That yields edges `label -> node` (an argument flows into a
   callee's parameter, a value into `self.attr`, a return value into the function's result).
   Sources (rank ids, driver and allocator readings, local queues, time, randomness, per-host
   environment) are then propagated over those edges once, breadth first, so every node knows
   its nearest sources with a chain that explains the flow. A value passed through a collective
   (the primitive's result, or a tensor reduced or broadcast in place) is agreed on by the group
   and leaves the flow: that is the cleansing rule.
2. **Guards.** In every function a round reaches, each call that enters a collective (a primitive
   or a wrapper that reaches one) is checked against the conditions that decide whether it runs:
   enclosing `if`/`while`/`for`/`match` headers, and earlier `if`s whose branch returns, breaks or
   continues (an early exit guards everything after it). A tainted guard is a hazard unless both
   of its sides enter the same sequences of collectives (`if rank == src: broadcast(...) else:
   broadcast(...)`). Point-to-point calls never count: they are rank-specific by nature.

Limits, on purpose: implicit flows (a value assigned under a rank-local branch) are not tracked;
parameters are context-insensitive (the union over every call site); attributes are keyed by the
class they are stored on and read through (MRO and subclasses), and unresolved receivers drop out.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite
from rankguard.analysis.reach import FOLLOWED, reach_from
from rankguard.catalogs.loader import load_catalog
from rankguard.core.chains import Hop, chain_json
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.extract import reference
from rankguard.summary.ir import (
    CALL,
    OPAQUE,
    SUBSCRIPT,
    CallSite,
    Segs,
    Stmt,
    segs_text,
    walk_calls,
    walk_statements,
)

# ---------------------------------------------------------------------------------------------
# Source catalog: what is rank-local.

# A rank's own id, by name: `rank`, `tp_rank`, `attn_tp_rank`, `rank_in_group`, `local_rank`.
# Peers (`src_rank`), flags (`recovered_rank: bool`) and counts are not.
_GROUPS = (
    r"tp|pp|dp|ep|cp|sp|attn_tp|attn_dp|attn_cp|moe_ep|moe_tp|moe_dp|attn|moe|tensor_model_parallel"
    r"|pipeline_model_parallel|data_parallel|expert_parallel|attention_tp|attention_dp"
)
_RANK_PREFIX = rf"(?:(?:{_GROUPS}|local|global|node|world|gpu|group|my|cur|current|own|this)_)?"
_RANK_NAME = re.compile(rf"^_?{_RANK_PREFIX}rank(?:_in_group)?$")
_RANK_CALL = re.compile(r"^_?get_(?:[a-z0-9]+_)*rank(?:_in_group)?$|^rank$")
_PEER_NAMES = frozenset({"src_rank", "dst_rank", "root_rank", "peer_rank", "target_rank"})
# Group sizes are the same on every rank of the group, whatever they were computed from.
_UNIFORM_ATTR = re.compile(rf"^_?(?:(?:{_GROUPS})_)?world_size$|^_?(?:{_GROUPS})_size$")
_UNIFORM_CALL = re.compile(r"^_?get_(?:[a-z0-9]+_)*(?:world_size|group)$|^new_group$")

_TIME = (
    "time.time",
    "time.time_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.process_time",
    "time.thread_time",
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.datetime.today",
    "datetime.date.today",
)
_RANDOM = (
    "random.*",
    "numpy.random.*",
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.randperm",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
    "torch.multinomial",
    "torch.bernoulli",
    "torch.normal",
    "uuid.uuid1",
    "uuid.uuid4",
    "secrets.*",
    "os.urandom",
)
_ENVIRONMENT = (
    "os.getenv",
    "os.environ.get",
    "os.environ.__getitem__",
    "os.environ.copy",
    "socket.gethostname",
    "socket.getfqdn",
    "platform.node",
    "os.getpid",
    "os.uname",
    "os.cpu_count",
)
# Driver and allocator readings beyond the shared driver-term catalog.
_DRIVER_EXTRA = (
    "torch.cuda.mem_get_info",
    "torch.cuda.memory_*",
    "torch.cuda.max_memory_*",
    "torch.cuda.utilization",
    "torch.cuda.temperature",
    "torch.cuda.power_draw",
    "torch.cuda.list_gpu_processes",
    "pynvml.nvml*",
    "psutil.*",
)
# In-place methods of lists, deques, dicts, sets and queues: an attribute that receives one of
# these is a rank-local container whose contents (length, truthiness, items) are local facts.
_MUTATORS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "pop",
        "popleft",
        "remove",
        "clear",
        "put",
        "put_nowait",
        "get_nowait",
        "add",
        "discard",
        "setdefault",
        "popitem",
    }
)
_FEEDERS = frozenset(
    {"append", "appendleft", "extend", "extendleft", "insert", "put", "put_nowait"}
)
_QUEUE_NAME = re.compile(r"queue", re.IGNORECASE)


def is_rank_name(name: str) -> bool:
    """`tp_rank`, `pp_rank`, `rank`, `rank_in_group`: a rank's own id, by its name."""
    return bool(_RANK_NAME.match(name)) and name not in _PEER_NAMES


def is_uniform_name(name: str) -> bool:
    """`world_size`, `tp_size`, `get_tp_group`: the same on every rank of the group."""
    last = name.rsplit(".", 1)[-1]
    return bool(_UNIFORM_ATTR.match(last) or _UNIFORM_CALL.match(last))


def _driver_patterns(configured: Iterable[Any]) -> tuple[str, ...]:
    """The shared driver-term catalog (`catalogs/driver_terms.toml`) plus config `driver-terms`."""
    patterns: list[str] = list(_DRIVER_EXTRA)
    for term in load_catalog("driver_terms")["term"]:
        patterns.extend(term.get("match", []))
        if term.get("name"):
            patterns.append(term["name"])
    for entry in configured:
        if isinstance(entry, str):
            patterns.append(entry)
        elif isinstance(entry, dict):
            for key in ("match", "pattern", "patterns"):
                value = entry.get(key)
                patterns.extend([value] if isinstance(value, str) else value or [])
            if isinstance(entry.get("name"), str):
                patterns.append(entry["name"])
    return tuple(dict.fromkeys(patterns))


@dataclass(frozen=True)
class SourceCatalog:
    """fnmatch patterns over resolved callee names, one group per kind of rank-local value."""

    driver: tuple[str, ...]
    time: tuple[str, ...] = _TIME
    random: tuple[str, ...] = _RANDOM
    environment: tuple[str, ...] = _ENVIRONMENT

    @classmethod
    def from_config(cls, driver_terms: Iterable[Any] = ()) -> SourceCatalog:
        return cls(_driver_patterns(driver_terms))

    def kind_of_call(self, names: Sequence[str]) -> str | None:
        for name in names:
            kind = self._kind_of_name(name)
            if kind is not None:
                return kind
        return None

    def _kind_of_name(self, name: str) -> str | None:
        # Memoised, with each kind's patterns compiled into one expression: on sglang this is
        # asked for ~240k call sites, and pattern-by-pattern matching took ~10 s.
        memo: dict[str, str | None] = self.__dict__.setdefault("_memo", {})
        if name not in memo:
            memo[name] = self._classify(name)
        return memo[name]

    def _classify(self, name: str) -> str | None:
        if _RANK_CALL.match(name.rsplit(".", 1)[-1]):
            return "rank-id"
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = [
                (kind, re.compile("|".join(fnmatch.translate(p) for p in patterns)))
                for kind, patterns in (
                    ("driver", self.driver),
                    ("time", self.time),
                    ("random", self.random),
                    ("environment", self.environment),
                )
                if patterns
            ]
        return next((kind for kind, rx in compiled if rx.match(name)), None)


# ---------------------------------------------------------------------------------------------
# Labels, steps and the flow graph.


@dataclass(frozen=True, order=True)
class Source:
    """Where a rank-local value is produced."""

    kind: str  # rank-id | driver | queue | time | random | environment
    text: str
    function: str
    path: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "function": self.function,
            "path": self.path,
            "line": self.line,
        }


@dataclass(frozen=True, order=True)
class Step:
    """One hop of a flow: in `function`, at `path:line`, `text` carried the value on."""

    function: str
    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "path": self.path, "line": self.line, "text": self.text}


Node = tuple[str, ...]  # ("ret", fn) | ("param", fn, name) | ("attr", cls, name) | ("global", m, n)
Label = Source | Node
Labels = dict[Label, tuple[Step, ...]]  # label -> the local steps from it to here
_MAX_STEPS = 6
_MAX_SOURCES = 3
_MAX_CLASSES = 12


def _merge(into: Labels, more: Labels) -> None:
    for label, steps in more.items():
        if label not in into or len(steps) < len(into[label]):
            into[label] = steps


def _through(labels: Labels, step: Step) -> Labels:
    return {label: (step, *steps)[:_MAX_STEPS] for label, steps in labels.items()}


@dataclass
class FunctionFlow:
    """What one walk of a function found: flows into symbolic nodes, and each condition's labels."""

    edges: dict[Node, Labels] = field(default_factory=dict)
    conditions: dict[int, Labels] = field(default_factory=dict)  # id(Stmt) -> labels
    ret_params: dict[str, tuple[Step, ...]] = field(default_factory=dict)  # param -> to return

    def flow(self, node: Node, labels: Labels) -> None:
        if labels:
            _merge(self.edges.setdefault(node, {}), labels)


@lru_cache(maxsize=65536)
def _parse_expr(text: str) -> ast.expr | None:
    """An argument's short text back to an expression (None when cut short or not Python)."""
    if not text or text.endswith("…"):
        return None
    text = text.replace(".()", "()").replace(".[]", "[0]")
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None


def _expr_parts(node: ast.expr) -> tuple[list[Segs], list[Segs]]:
    """(maximal references read, call targets) of an expression, as the summary spells them."""
    refs: list[Segs] = []
    calls: list[Segs] = []
    stack: list[ast.AST] = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, ast.Call):
            calls.append(reference(cur.func))
            func = cur.func
            while isinstance(func, (ast.Attribute, ast.Subscript)):
                func = func.value
            if not isinstance(func, ast.Name):
                stack.append(func)
            else:
                target = reference(cur.func)
                refs.append(target[:-1] if len(target) > 1 else target)
            stack.extend(cur.args)
            stack.extend(kw.value for kw in cur.keywords)
        elif isinstance(cur, (ast.Attribute, ast.Name)):
            ref = reference(cur)
            if OPAQUE in ref or CALL in ref or SUBSCRIPT in ref:
                stack.extend(ast.iter_child_nodes(cur))
            if OPAQUE not in ref:
                refs.append(ref)
        elif isinstance(cur, ast.Lambda):
            continue
        else:
            stack.extend(ast.iter_child_nodes(cur))
    return refs, calls


class CollectiveIndex:
    """Which calls enter a collective, and the primitives each enters in order.

    Computed once per function with memoisation (a recursive cycle contributes nothing on its
    back edge), so asking about every call of a large program stays linear.
    """

    def __init__(self, program: Program, reach: CollectiveReach) -> None:
        self.program = program
        self.catalog = reach.catalog
        self._targets: dict[int, tuple[str, ...]] = {}
        for resolved in program.calls.values():
            for item in resolved:
                self._targets[id(item.call)] = tuple(
                    t.name for t in item.targets if t.kind in FOLLOWED
                )
        self._memo: dict[str, tuple[CollectiveSite, ...]] = {}
        self._active: set[str] = set()

    def targets(self, call: CallSite) -> tuple[str, ...]:
        return self._targets.get(id(call), ())

    def of_call(self, record: FunctionRecord, call: CallSite) -> tuple[CollectiveSite, ...]:
        """Primitive collectives (not point-to-point) the call enters, in order."""
        if call.deferred:
            return ()
        out: list[CollectiveSite] = []
        for name in self.targets(call):
            if self.catalog.kind(name) == "collective":
                out.append(
                    CollectiveSite(name, "collective", record.path, call.line, record.qualname)
                )
            elif name in self.program.functions:
                out.extend(self.under(name))
        return tuple(dict.fromkeys(out))

    def under(self, name: str) -> tuple[CollectiveSite, ...]:
        cached = self._memo.get(name)
        if cached is not None:
            return cached
        if name in self._active:
            return ()
        self._active.add(name)
        record = self.program.functions[name]
        found: list[CollectiveSite] = []
        for call in walk_calls(record.info.body):
            found.extend(self.of_call(record, call))
        self._active.discard(name)
        result = tuple(dict.fromkeys(found))
        self._memo[name] = result
        return result


class RankLocalFlow:
    """Rank-local taint over a whole program: build once, then ask about conditions."""

    def __init__(
        self,
        program: Program,
        reach: CollectiveReach,
        catalog: SourceCatalog,
    ) -> None:
        self.program = program
        self.reach = reach
        self.catalog = catalog
        self.resolver = program.resolver
        self.index = CollectiveIndex(program, reach)
        self.containers = self._container_attributes()
        self._globals = self._module_globals()
        self.flows: dict[str, FunctionFlow] = {}
        for name in _callees_first(program):
            self.flows[name] = _Walker(self, program.functions[name]).run()
        self.sources = self._solve()

    def ret_params(self, function: str) -> dict[str, tuple[Step, ...]]:
        """Parameters of `function` whose value reaches its return (known once it was walked;
        callees are walked first, so only recursion sees an empty summary)."""
        flow = self.flows.get(function)
        return flow.ret_params if flow is not None else {}

    # -- program-wide facts ---------------------------------------------------------------
    def _container_attributes(self) -> frozenset[str]:
        """Attribute names that receive in-place mutation somewhere (or are named queues).

        A container fed only with what a collective returned (`self.q.extend(broadcast(...))`)
        holds the same items on every rank: it is replicated, not rank-local.
        """
        names: set[str] = set()
        fed: dict[str, bool] = {}  # name -> every feed so far came from a collective
        for record in self.program.functions.values():
            for stmt in walk_statements(record.info.body):
                for call in stmt.calls:
                    segs = call.target
                    if len(segs) < 3 or segs[-1] not in _MUTATORS or segs[-2] in (CALL, SUBSCRIPT):
                        continue
                    names.add(segs[-2])
                    if segs[-1] in _FEEDERS:
                        agreed = self._fed_by_collective(record, stmt, call)
                        fed[segs[-2]] = fed.get(segs[-2], True) and agreed
                for target in stmt.targets:
                    if len(target) >= 3 and target[-1] == SUBSCRIPT and target[-2] != CALL:
                        names.add(target[-2])
                        fed[target[-2]] = False
                for read in stmt.reads:
                    if len(read) >= 2 and _QUEUE_NAME.search(read[-1]):
                        names.add(read[-1])
        replicated = {name for name, agreed in fed.items() if agreed}
        return frozenset(n for n in names if n not in {CALL, SUBSCRIPT, OPAQUE} | replicated)

    def _fed_by_collective(self, record: FunctionRecord, stmt: Stmt, call: CallSite) -> bool:
        if len(call.args) != 1:
            return False
        node = _parse_expr(call.args[0])
        if not isinstance(node, ast.Call):
            return False
        inner = reference(node.func)
        return any(
            other.target == inner and self.index.of_call(record, other) for other in stmt.calls
        )

    def _module_globals(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}
        for module in self.program.modules:
            body = self.program.functions.get(module)
            if body is None:
                continue
            out[module] = frozenset(
                t[0] for s in body.info.body if s.kind == "assign" for t in s.targets if len(t) == 1
            )
        return out

    def is_global(self, module: str, name: str) -> bool:
        return name in self._globals.get(module, frozenset())

    def collective_targets(self, record: FunctionRecord, call: CallSite) -> list[CollectiveSite]:
        """Primitive collectives (not point-to-point) the call enters, directly or below."""
        return list(self.index.of_call(record, call))

    def enters_collective(self, record: FunctionRecord, call: CallSite) -> bool:
        return bool(self.collective_targets(record, call))

    # -- solving --------------------------------------------------------------------------
    def _solve(self) -> dict[Node, dict[Source, tuple[Step, ...]]]:
        """Breadth first from every source: each node keeps its nearest few sources."""
        forward: dict[Label, list[tuple[Node, tuple[Step, ...]]]] = {}
        for name in sorted(self.flows):
            for node, labels in self.flows[name].edges.items():
                for label, steps in labels.items():
                    forward.setdefault(label, []).append((node, steps))
        result: dict[Node, dict[Source, tuple[Step, ...]]] = {}
        queue: deque[tuple[Node, Source, tuple[Step, ...]]] = deque()
        sources = sorted(label for label in forward if isinstance(label, Source))
        for source in sources:
            for node, steps in forward[source]:
                queue.append((node, source, steps))
        while queue:
            node, source, chain = queue.popleft()
            known = result.setdefault(node, {})
            if source in known or len(known) >= _MAX_SOURCES:
                continue
            known[source] = chain
            for nxt, steps in forward.get(node, ()):
                queue.append((nxt, source, (*steps, *chain)[: _MAX_STEPS * 3]))
        return result

    def sources_of(self, labels: Labels) -> list[tuple[Source, tuple[Step, ...]]]:
        """Every source a set of labels stands for, nearest first."""
        found: dict[Source, tuple[Step, ...]] = {}
        for label, steps in labels.items():
            candidates: dict[Source, tuple[Step, ...]] = (
                {label: ()} if isinstance(label, Source) else self.sources.get(label, {})
            )
            for source, chain in candidates.items():
                full = (*steps, *chain)
                if source not in found or len(full) < len(found[source]):
                    found[source] = full
        return sorted(found.items(), key=lambda kv: (len(kv[1]), kv[0]))

    def condition_sources(self, function: str, stmt: Stmt) -> list[tuple[Source, tuple[Step, ...]]]:
        flow = self.flows.get(function)
        if flow is None:
            return []
        return self.sources_of(flow.conditions.get(id(stmt), {}))


def _callees_first(program: Program) -> list[str]:
    """Function names, callees before callers (strongly connected parts in any order)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(program.functions))
    for caller, callee, data in program.graph.edges(data=True):
        followed = data.get("kind") in FOLLOWED and caller in program.functions
        if followed and callee in program.functions and callee != caller:
            graph.add_edge(caller, callee)
    condensed = nx.condensation(graph)
    order: list[str] = []
    for component in reversed(list(nx.lexicographical_topological_sort(condensed))):
        order.extend(sorted(condensed.nodes[component]["members"]))
    return order


class _Walker:
    """One flow-sensitive pass over a function's statements, locals in an environment."""

    def __init__(self, flow: RankLocalFlow, record: FunctionRecord) -> None:
        self.f = flow
        self.record = record
        self.fn = record.qualname
        self.out = FunctionFlow()
        self._attr_nodes: dict[Segs, tuple[Node, ...]] = {}

    def step(self, line: int, text: str) -> Step:
        return Step(self.fn, self.record.path, line, text)

    def source(self, kind: str, text: str, line: int) -> Source:
        return Source(kind, text, self.fn, self.record.path, line)

    # -- entry ----------------------------------------------------------------------------
    def run(self) -> FunctionFlow:
        env: dict[str, Labels] = {}
        info = self.record.info
        is_method = bool(info.cls) and not any(
            d and d[-1] == "staticmethod" for d in info.decorators
        )
        for index, param in enumerate(info.params):
            name = param.name.lstrip("*")
            if index == 0 and is_method:
                env[name] = {}
                continue
            labels: Labels = {("param", self.fn, name): ()}
            if is_rank_name(name):
                labels[self.source("rank-id", name, info.line)] = ()
            env[name] = labels
        self.params = frozenset(env)
        self.block(info.body, env)
        return self.out

    # -- statements -----------------------------------------------------------------------
    def block(self, stmts: tuple[Stmt, ...], env: dict[str, Labels]) -> dict[str, Labels]:
        for stmt in stmts:
            env = self.statement(stmt, env)
        return env

    def statement(self, stmt: Stmt, env: dict[str, Labels]) -> dict[str, Labels]:
        kind = stmt.kind
        if kind in ("assign", "expr", "return", "raise"):
            labels = self.value(stmt, env)
            if kind == "assign":
                self.assign(stmt, labels, env)
            elif kind == "return":
                self.returned(labels, stmt.line)
            return env
        if kind in ("if", "match"):
            labels = self.value(stmt, env)
            if kind == "if":
                _merge(labels, self.truth_sources(stmt))
            self.out.conditions[id(stmt)] = labels
            branches = [self.block(b, dict(env)) for b in stmt.blocks] or [env]
            if kind == "if" and len(stmt.blocks) < 2:
                branches.append(env)
            if kind == "match":
                branches.append(env)
            return _join(branches)
        if kind == "loop":
            labels = self.value(stmt, env)
            _merge(labels, self.truth_sources(stmt))
            self.out.conditions[id(stmt)] = labels
            if stmt.targets:
                text = f"for {', '.join(segs_text(t) for t in stmt.targets)} in {stmt.text}"
                self.bind(stmt.targets, _through(labels, self.step(stmt.line, text)), env)
            body, orelse = (*stmt.blocks, (), ())[:2]
            after = env
            for _ in range(2):  # a second pass carries values around the loop once
                after = _join([after, self.block(body, dict(after))])
            return self.block(orelse, after)
        if kind == "with":
            labels = self.value(stmt, env)
            if stmt.targets:
                self.bind(stmt.targets, _through(labels, self.step(stmt.line, stmt.text)), env)
            return self.block(stmt.blocks[0] if stmt.blocks else (), env)
        if kind == "try":
            blocks = stmt.blocks
            body_env = self.block(blocks[0], dict(env))
            outs = [self.block(blocks[1], dict(body_env)) if len(blocks) > 1 else body_env]
            for handler in blocks[3:]:
                outs.append(self.block(handler, _join([env, body_env])))
            joined = _join(outs)
            return self.block(blocks[2], joined) if len(blocks) > 2 else joined
        return env

    def returned(self, labels: Labels, line: int) -> None:
        """Own parameters that reach a return are applied per call site (a summary); the rest
        is the function's intrinsic result, shared by every caller."""
        step = self.step(line, "return")
        intrinsic: Labels = {}
        for label, steps in labels.items():
            if isinstance(label, tuple) and label[0] == "param" and label[1] == self.fn:
                known = self.out.ret_params.setdefault(label[2], (step, *steps)[:_MAX_STEPS])
                if len(steps) + 1 < len(known):
                    self.out.ret_params[label[2]] = (step, *steps)[:_MAX_STEPS]
            else:
                intrinsic[label] = (step, *steps)[:_MAX_STEPS]
        self.out.flow(("ret", self.fn), intrinsic)

    def truth_sources(self, stmt: Stmt) -> Labels:
        """`if not self.queue:`, `while self.queue:`, `for r in self.queue:`: a local container's
        emptiness or length decides."""
        node = _parse_expr(stmt.text)
        if node is None:
            return {}
        refs = [node] if stmt.targets else list(_truth_positions(node))
        out: Labels = {}
        for ref_node in refs:
            if isinstance(ref_node, (ast.Attribute, ast.Name)):
                ref = reference(ref_node)
                if len(ref) >= 2 and ref[-1] in self.f.containers:
                    out[self.source("queue", ".".join(ref), stmt.line)] = ()
        return out

    # -- values ---------------------------------------------------------------------------
    def value(self, stmt: Stmt, env: dict[str, Labels]) -> Labels:
        """Labels of what a statement's value (or test) is computed from.

        Calls into the program contribute their return node and route their arguments into
        the callee's parameters; a collective's result is agreed and contributes nothing, and a
        bare local passed to it first (the tensor reduced or broadcast in place) is cleansed.
        """
        out: Labels = {}
        consumed: Counter[Segs] = Counter()
        consumed_calls: set[int] = set()
        results: dict[int, Labels] = {}
        pending: list[CallSite] = []
        kills: list[str] = []
        for call in stmt.calls:
            if call.deferred:
                continue
            result = self.call(stmt, call, env, results, pending, consumed, consumed_calls, kills)
            results[id(call)] = result
            pending.append(call)
        for call in stmt.calls:
            if id(call) in results and id(call) not in consumed_calls:
                _merge(out, results[id(call)])
        for ref in stmt.reads:
            if consumed[ref] > 0:
                consumed[ref] -= 1
                continue
            _merge(out, self.ref(ref, env, stmt.line))
        for name in kills:
            env[name] = {}
        return out

    def call(
        self,
        stmt: Stmt,
        call: CallSite,
        env: dict[str, Labels],
        results: dict[int, Labels],
        earlier: list[CallSite],
        consumed: Counter[Segs],
        consumed_calls: set[int],
        kills: list[str],
    ) -> Labels:
        program = self.f.program
        target_names = self.f.index.targets(call)
        names = list(target_names) or [segs_text(call.target)]
        result: Labels = {}
        kind = self.f.catalog.kind_of_call(names)
        if kind is not None:
            result[self.source(kind, call.text + "()", call.line)] = ()
        segs = call.target
        if segs and segs[-1] in _QUERY_METHODS and len(segs) >= 3 and segs[-2] in self.f.containers:
            result[self.source("queue", segs_text(segs) + "()", call.line)] = ()
        if segs == ("len",) and len(call.args) == 1:
            arg = _parse_expr(call.args[0])
            if isinstance(arg, (ast.Attribute, ast.Name)):
                ref = reference(arg)
                if len(ref) >= 2 and ref[-1] in self.f.containers:
                    result[self.source("queue", f"len({call.args[0]})", call.line)] = ()
        internal = [t for t in target_names if t in program.functions]
        collective = self.f.enters_collective(self.record, call)
        primitive = any(self.f.reach.catalog.kind(t) == "collective" for t in target_names)
        uniform = any(is_uniform_name(n) for n in names)
        # An object of a program class is not a value: its fields carry their own flows (an
        # `__init__` stores them), so a record built with a rank id is not rank-local whole.
        uniform = uniform or (not internal and any(n in program.classes for n in names))
        if not internal and not primitive and not uniform:
            return result  # outside the program: its inputs stay in the statement's reads
        args = [_parse_expr(text) for text in call.args]
        kwargs = [(key, _parse_expr(text)) for key, text in call.kwargs]
        parsed = all(a is not None for a in args) and all(v is not None for _, v in kwargs)
        arg_labels: list[Labels] = []
        kw_labels: list[tuple[str, Labels]] = []
        if parsed:
            pool = list(earlier)
            for expr in args:
                arg_labels.append(self.expr(expr, env, results, pool, consumed, consumed_calls))
            for key, expr in kwargs:
                kw_labels.append(
                    (key, self.expr(expr, env, results, pool, consumed, consumed_calls))
                )
        if collective or primitive:
            first = call.args[0] if call.args else call.kwarg("tensor") or call.kwarg("object_list")
            if first and first.isidentifier() and first != "self":
                kills.append(first)  # reduced or broadcast in place: agreed from here on
        if primitive or uniform:
            return result if primitive else {}
        step = self.step(call.line, call.text + "(…)")
        for target in internal:
            callee = program.functions[target]
            result[("ret", target)] = ()
            if not parsed:
                continue
            params = [p.name.lstrip("*") for p in callee.info.params]
            offset = 1 if _bound(callee, call) else 0
            passed: dict[str, Labels] = {}
            for index, labels in enumerate(arg_labels):
                if index + offset < len(params):
                    passed[params[index + offset]] = labels
            for key, labels in kw_labels:
                if key in params:
                    passed[key] = labels
            summary = self.f.ret_params(target)
            for param, labels in passed.items():
                self.out.flow(("param", target, param), _through(labels, step))
                if param in summary:
                    back = self.step(call.line, f"{call.text}(…) returns {param}")
                    _merge(result, _through(labels, back))
        return result

    def expr(
        self,
        node: ast.expr,
        env: dict[str, Labels],
        results: dict[int, Labels],
        pool: list[CallSite],
        consumed: Counter[Segs],
        consumed_calls: set[int],
    ) -> Labels:
        """Labels of one argument; what it reads is then not counted again for the statement."""
        refs, calls = _expr_parts(node)
        out: Labels = {}
        for segs in calls:
            for index, call in enumerate(pool):
                if call.target == segs:
                    consumed_calls.add(id(call))
                    _merge(out, results.get(id(call), {}))
                    del pool[index]
                    break
        for ref in refs:
            consumed[ref] += 1
            _merge(out, self.ref(ref, env, getattr(node, "lineno", 0)))
        return out

    def ref(self, ref: Segs, env: dict[str, Labels], line: int) -> Labels:
        """Labels of a reference read: a local's, a global's, an attribute's, or a source."""
        cut: list[str] = []
        for seg in ref:
            if seg in (CALL, SUBSCRIPT):
                break
            cut.append(seg)
        if not cut or cut[0] in (OPAQUE, "<str>", "super()") or is_uniform_name(cut[-1]):
            return {}
        out: Labels = {}
        head = cut[0]
        if head in env:
            _merge(out, env[head])
        elif self.f.is_global(self.record.module, head) and not self.record.is_module_body:
            out[("global", self.record.module, head)] = ()
        if tuple(cut[:2]) == ("os", "environ"):
            out[self.source("environment", "os.environ", line)] = ()
            return out
        for index in range(1, len(cut)):
            attr = cut[index]
            text = ".".join(cut[: index + 1])
            if is_rank_name(attr):
                out[self.source("rank-id", text, line)] = ()
            for node in self.attr_nodes(tuple(cut[:index]), attr):
                out[node] = ()
        return out

    def attr_nodes(self, owner: Segs, attr: str) -> tuple[Node, ...]:
        key = (*owner, attr)
        cached = self._attr_nodes.get(key)
        if cached is not None:
            return cached
        program = self.f.program
        classes: list[str] = []
        for value in self.f.resolver.evaluate(self.record, owner):
            if value.kind in ("instance", "class") and value.name in program.classes:
                classes.extend(program.mro(value.name))
                classes.extend(sorted(program.subclasses.get(value.name, ())))
        nodes = tuple(("attr", cls, attr) for cls in dict.fromkeys(classes))[:_MAX_CLASSES]
        self._attr_nodes[key] = nodes
        return nodes

    # -- stores ---------------------------------------------------------------------------
    def assign(self, stmt: Stmt, labels: Labels, env: dict[str, Labels]) -> None:
        names = ", ".join(segs_text(t) for t in stmt.targets)
        shape = stmt.value
        if shape and shape[0] == "call":
            text = f"{names} = {segs_text(shape[1])}()"
        elif shape and shape[0] == "ref":
            text = f"{names} = {segs_text(shape[1])}"
        else:
            text = f"{names} = …"
        self.bind(stmt.targets, _through(labels, self.step(stmt.line, text)), env)

    def bind(self, targets: tuple[Segs, ...], labels: Labels, env: dict[str, Labels]) -> None:
        for target in targets:
            if not target or target[0] in (OPAQUE, "<str>"):
                continue
            weak = target[-1] == SUBSCRIPT
            while target and target[-1] == SUBSCRIPT:
                target = target[:-1]
            if CALL in target or SUBSCRIPT in target or not target:
                continue
            if len(target) == 1:
                name = target[0]
                if weak and name in env:
                    merged = dict(env[name])
                    _merge(merged, labels)
                    env[name] = merged
                else:
                    env[name] = dict(labels)
                if self.record.is_module_body:
                    self.out.flow(("global", self.record.module, name), labels)
                continue
            owner, attr = target[:-1], target[-1]
            for value in self.f.resolver.evaluate(self.record, owner):
                if value.kind in ("instance", "class") and value.name in self.f.program.classes:
                    self.out.flow(("attr", value.name, attr), labels)


# Methods whose result is a container's contents or size.
_QUERY_METHODS = frozenset({"qsize", "empty", "full", "__len__", "peek", "get_nowait", "popleft"})


def _truth_positions(node: ast.expr) -> Iterator[ast.expr]:
    """Sub-expressions whose truth value the test takes: `a`, `not a`, `a and b`, `a or b`."""
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _truth_positions(value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield from _truth_positions(node.operand)
    else:
        yield node


def _bound(callee: FunctionRecord, call: CallSite) -> bool:
    """Whether the callee's first parameter is filled by the receiver (`obj.m(...)`, `Cls()`)."""
    info = callee.info
    if not info.cls:
        return False
    decorators = {d[-1] for d in info.decorators if d}
    if "staticmethod" in decorators:
        return False
    if "classmethod" in decorators or callee.info.name == "__init__":
        return True  # `Cls(...)` fills `self` too
    return len(call.target) >= 2


def _join(envs: list[dict[str, Labels]]) -> dict[str, Labels]:
    if len(envs) == 1:
        return envs[0]
    out: dict[str, Labels] = {}
    for env in envs:
        for name, labels in env.items():
            merged = out.setdefault(name, {})
            _merge(merged, labels)
    return out


# ---------------------------------------------------------------------------------------------
# Guards: which conditions decide whether a collective call runs.

_EXIT_KINDS = ("return", "break", "continue")
_MAX_PATHS = 32
# Each run: (collectives entered, how it ended: "" falls through, "return", "loop" = break or
# continue). None: too many runs to compare.
Paths = frozenset[tuple[tuple[str, ...], str]] | None


@dataclass
class Guard:
    stmt: Stmt  # the if / loop / match that decides
    kind: str  # branch | loop | exit
    symmetric: bool  # every side enters the same sequences of collectives


@dataclass
class DivergentCall:
    """A call that enters a collective under a rank-local guard."""

    function: FunctionRecord
    call: CallSite
    callee: str
    guard: Guard
    guards: list[Guard]
    primitives: list[CollectiveSite]
    sources: list[tuple[Source, tuple[Step, ...]]]
    reached_by: list[Hop]

    def to_json(self) -> dict[str, Any]:
        source, chain = self.sources[0]
        return {
            "function": self.function.qualname,
            "collective": {
                "callee": self.callee,
                "path": self.function.path,
                "line": self.call.line,
            },
            "primitives": [p.to_json() for p in self.primitives],
            "condition": {
                "text": self.guard.stmt.text,
                "path": self.function.path,
                "line": self.guard.stmt.line,
                "kind": self.guard.kind,
            },
            "source": {**source.to_json(), "chain": [s.to_json() for s in chain]},
            "other_sources": [s.to_json() for s, _ in self.sources[1:]],
            "reached_by": chain_json(self.reached_by),
        }


class GuardWalker:
    """Finds the tainted, asymmetric guards over each collective call of one function."""

    def __init__(self, flow: RankLocalFlow, record: FunctionRecord) -> None:
        self.flow = flow
        self.record = record
        self.found: list[tuple[CallSite, list[Guard]]] = []
        self._paths: dict[int, Paths] = {}

    def run(self) -> list[tuple[CallSite, list[Guard]]]:
        self.walk(self.record.info.body, [], (), ())
        return self.found

    def tainted(self, stmt: Stmt) -> bool:
        return bool(self.flow.condition_sources(self.record.qualname, stmt))

    def walk(
        self,
        stmts: tuple[Stmt, ...],
        guards: list[Guard],
        tail_fn: tuple[tuple[Stmt, ...], ...],
        tail_loop: tuple[tuple[Stmt, ...], ...],
    ) -> list[tuple[Guard, str]]:
        """Walk a block; return the exit guards that stay active after it (and their scope)."""
        active = list(guards)
        escaping: list[tuple[Guard, str]] = []
        for index, stmt in enumerate(stmts):
            rest = stmts[index + 1 :]
            self.calls(stmt, active)
            inner_fn = (rest, *tail_fn)
            inner_loop = (rest, *tail_loop)
            new: list[tuple[Guard, str]] = []
            if stmt.kind in ("if", "match"):
                tainted = self.tainted(stmt)
                blocks = list(stmt.blocks)
                if stmt.kind == "if" and len(blocks) < 2:
                    blocks.append(())
                exits = [_exit_scope(b) for b in blocks]
                sides = [self.sequences([b]) for b in blocks]
                if stmt.kind == "match":
                    sides.append(frozenset({()}))
                symmetric = sides[0] is not None and all(s == sides[0] for s in sides)
                if stmt.kind == "if" and tainted and sum(1 for e in exits if e) == 1:
                    # One side leaves: compare it with the other side plus what follows.
                    exit_guard = self.exit_guard(stmt, blocks, exits, inner_fn, inner_loop)
                    new.append(exit_guard)
                    symmetric = exit_guard[0].symmetric
                inside = [*active, Guard(stmt, "branch", symmetric)] if tainted else active
                for block in stmt.blocks:
                    new.extend(self.walk(block, inside, inner_fn, inner_loop))
            elif stmt.kind == "loop":
                inside = list(active)
                if self.tainted(stmt):
                    quiet = self.sequences([stmt.blocks[0]]) == frozenset({()})
                    inside.append(Guard(stmt, "loop", quiet))
                body = stmt.blocks[0] if stmt.blocks else ()
                for guard, scope in self.walk(body, inside, inner_fn, ()):
                    if scope == "function":
                        new.append((guard, scope))
                if len(stmt.blocks) > 1:
                    new.extend(self.walk(stmt.blocks[1], active, inner_fn, inner_loop))
            else:
                for block in stmt.blocks:
                    new.extend(self.walk(block, active, inner_fn, inner_loop))
            for guard, scope in new:
                active.append(guard)
                escaping.append((guard, scope))
        return escaping

    def exit_guard(
        self,
        stmt: Stmt,
        blocks: list[tuple[Stmt, ...]],
        exits: list[str | None],
        tail_fn: tuple[tuple[Stmt, ...], ...],
        tail_loop: tuple[tuple[Stmt, ...], ...],
    ) -> tuple[Guard, str]:
        leaving = 0 if exits[0] else 1
        scope = "function" if exits[leaving] == "return" else "loop"
        tail = tail_fn if scope == "function" else tail_loop
        stay = self.sequences([blocks[1 - leaving], *tail])
        gone = self.sequences([blocks[leaving]])
        symmetric = stay is not None and stay == gone
        return Guard(stmt, "exit", symmetric), scope

    def calls(self, stmt: Stmt, active: list[Guard]) -> None:
        hazards = [g for g in active if not g.symmetric]
        if not hazards:
            return
        for call in stmt.calls:
            if self.flow.enters_collective(self.record, call):
                self.found.append((call, hazards))

    # -- sequences of collectives ---------------------------------------------------------
    def call_seq(self, calls: Iterable[CallSite]) -> tuple[str, ...]:
        out: list[str] = []
        for call in calls:
            out.extend(site.callee for site in self.flow.collective_targets(self.record, call))
        return tuple(out)

    def paths(self, block: tuple[Stmt, ...]) -> Paths:
        key = id(block)
        if key not in self._paths:
            self._paths[key] = self.paths_seq([block])
        return self._paths[key]

    def sequences(self, blocks: Sequence[tuple[Stmt, ...]]) -> frozenset[tuple[str, ...]] | None:
        """The sequences of primitive collectives a run through `blocks` may enter, however
        each run ends (falling through, returning, breaking)."""
        found = self.paths_seq(blocks)
        return None if found is None else frozenset(seq for seq, _end in found)

    def paths_seq(self, blocks: Sequence[tuple[Stmt, ...]]) -> Paths:
        acc: Paths = frozenset({((), "")})
        for block in blocks:
            for stmt in block:
                acc = _concat(acc, self.stmt_paths(stmt))
                if acc is None:
                    return None
        return acc

    def stmt_paths(self, stmt: Stmt) -> Paths:
        seq = self.call_seq(stmt.calls)
        if stmt.kind in ("return", "raise"):
            return frozenset({(seq, "return")})
        if stmt.kind in ("break", "continue"):
            return frozenset({(seq, "loop")})
        head: Paths = frozenset({(seq, "")})
        if not stmt.blocks:
            return head
        if stmt.kind in ("if", "match"):
            sides: Paths = frozenset()
            blocks = list(stmt.blocks) + (
                [()] if stmt.kind == "match" or len(stmt.blocks) < 2 else []
            )
            for block in blocks:
                part = self.paths(block)
                if part is None or sides is None:
                    return None
                sides = sides | part
            return _concat(head, sides)
        if stmt.kind == "loop":
            body = self.paths(stmt.blocks[0])
            if body is None:
                return None
            # break/continue end an iteration, not the function; zero iterations are possible.
            once = frozenset((seq, "" if end == "loop" else end) for seq, end in body)
            return _concat(head, once | {((), "")})
        return _concat(head, self.paths_seq(list(stmt.blocks)))


def _concat(left: Paths, right: Paths) -> Paths:
    if left is None or right is None:
        return None
    out = frozenset(
        (a, end_a) if end_a else (a + b, end_b) for a, end_a in left for b, end_b in right
    )
    return out if len(out) <= _MAX_PATHS else None


def _exit_scope(block: tuple[Stmt, ...], in_loop: bool = False) -> str | None:
    """`return` when the block may return, `loop` when it may break or continue its loop."""
    found: str | None = None
    for stmt in block:
        if stmt.kind == "return":
            return "return"
        if stmt.kind in ("break", "continue") and not in_loop:
            found = found or "loop"
        for inner in stmt.blocks:
            scope = _exit_scope(inner, in_loop or stmt.kind == "loop")
            if scope == "return":
                return "return"
            found = found or scope
    return found


# ---------------------------------------------------------------------------------------------
# Entry point.


def find_divergent_calls(
    program: Program,
    round_functions: Sequence[str],
    reach: CollectiveReach,
    driver_terms: Iterable[Any] = (),
) -> list[DivergentCall]:
    """Every collective call, in a function the round functions reach, under a rank-local
    guard (the caller has matched the rounds already: `RuleContext.rounds`)."""
    reached = reach_from(program, round_functions)
    if not reached:
        return []
    flow = RankLocalFlow(program, reach, SourceCatalog.from_config(driver_terms))
    out: list[DivergentCall] = []
    for name in sorted(reached):
        record = program.functions[name]
        for call, guards in GuardWalker(flow, record).run():
            guard = guards[-1]  # the innermost decides last
            sources = flow.condition_sources(name, guard.stmt)
            primitives = flow.collective_targets(record, call)
            targets = [
                t
                for t in flow.index.targets(call)
                if t in program.functions or reach.catalog.kind(t) == "collective"
            ]
            out.append(
                DivergentCall(
                    record,
                    call,
                    targets[0] if targets else call.text,
                    guard,
                    guards,
                    primitives,
                    sources,
                    reached[name],
                )
            )
    out.sort(key=lambda d: (d.function.path, d.call.line, d.call.col, d.guard.stmt.line))
    return out
