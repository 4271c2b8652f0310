"""The transfer functions: one flow-sensitive walk of a function over the summary IR.

Locals and attribute paths (`self.x`) live in an environment, so a later assignment kills an
earlier value: a count overwritten by what a collective returned is uniform from there on. What
comes from outside the function stays symbolic (parameters, attributes, globals, callees'
results) and becomes edges into those nodes; `flow.py` solves them program-wide.

Rules the walk applies, each general: a collective's result, and a tensor it reduced or
broadcast in place, is agreed by the group; a container holds what was fed into it (`append`,
`put`, a tensor's `copy_`, `fill_`, ...), its truth and length follow those values; placement is
not data (`device=`, `.to(...)`'s arguments, `torch.device(...)`, an address: `x.data_ptr()`);
`x is None` tests existence, not contents; an object a program class builds is not a value
(its fields carry their own flows); the launcher's environment is uniform, except per-rank
variables (`RANK`); a helper handed a callable returns what the one handed there returns
(`callbacks.py`), and a hand-rolled fan-out what its sender holds (`relays.py`).

Limits, on purpose: implicit flows (a value assigned under a varying branch) are not tracked;
parameters are context-insensitive; attribute paths are kept per function and fall back to the
program-wide attribute after a call into a function that stores that attribute.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.agreement import Agreement
from rankguard.analysis.uniformity.answers import Answers, constant_of
from rankguard.analysis.uniformity.branches import Sides
from rankguard.analysis.uniformity.callbacks import Callables
from rankguard.analysis.uniformity.existence import deciding, existence, handed, tested
from rankguard.analysis.uniformity.facts import ProgramFacts
from rankguard.analysis.uniformity.lattice import (
    Env,
    FunctionFlow,
    Labels,
    Node,
    Source,
    Step,
    join,
    merge,
    through,
    union,
)
from rankguard.analysis.uniformity.relays import Relays
from rankguard.analysis.uniformity.roots import RootViews
from rankguard.analysis.uniformity.trees import displayed, same_sides
from rankguard.analysis.uniformity.tuples import Items, TupleItems, forget
from rankguard.analysis.uniformity.zipped import loop_items
from rankguard.model.binding import bind
from rankguard.model.invokers import called_as
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import (
    CALL,
    OPAQUE,
    SUBSCRIPT,
    CallSite,
    Operand,
    Segs,
    Stmt,
    segs_text,
)

_MAX_CLASSES = 12


class _Statement:
    """Per-statement bookkeeping: which reads and calls an operand already accounted for, and
    what each operand only compares with `None` (`existence.py`)."""

    def __init__(self, stmt: Stmt) -> None:
        self.tested = tested(stmt)
        self.consumed: Counter[Segs] = Counter()
        self.consumed_calls: set[int] = set()
        self.results: dict[int, Labels] = {}
        self.pending: list[CallSite] = []
        self.kills: list[tuple[str, Labels]] = []


class Walker:
    """One flow-sensitive pass over a function's statements."""

    def __init__(self, flow: ProgramFacts, record: FunctionRecord) -> None:
        self.f = flow
        self.catalog = flow.sources_catalog
        self.record = record
        self.fn = record.qualname
        self.out = FunctionFlow(asked=not flow.reached or self.fn in flow.reached)
        self.answers = Answers(self.step)  # which `return` runs, and what decides it
        self._attr_nodes: dict[Segs, tuple[Node, ...]] = {}
        self._carrying = False  # inside a loop's second pass (`loop`)
        self.results: dict[int, Labels] = {}  # what each call of the last statement gave
        # What a group's root holds: locals as a branch only the root takes left them.
        self.agreement = Agreement(flow.calls, flow.sources_catalog, record, self.out, self.step)
        self.roots = RootViews(self.catalog, flow.calls, record, self.agreement.over, flow.flags)
        self.sides = Sides(self.roots, flow.none_only)  # what reaches past an `if`
        self.tuples = TupleItems(self)  # a tuple's items, each with its own value
        self.callables = Callables(self)  # what a handed callable returns, per call site
        self.relays = Relays(self)  # what it sends and receives point-to-point

    def step(self, line: int, text: str) -> Step:
        return Step(self.fn, self.record.path, line, text)

    def source(self, kind: str, text: str, line: int, dimension: str = "") -> Source:
        return Source(kind, text, self.fn, self.record.path, line, dimension)

    def rank_source(self, segments: Segs, line: int) -> Source:
        """A rank id, of the dimension `GroupNames.rank_dimension` gives it."""
        dimension = self.f.calls.names.rank_dimension(self.record, segments)
        return self.source("rank-id", segs_text(segments), line, dimension)

    # -- entry ----------------------------------------------------------------------------
    def run(self) -> FunctionFlow:
        env: Env = {}
        info = self.record.info
        for index, param in enumerate(info.params):
            name = param.name.lstrip("*")
            if index == 0 and info.takes_self:
                env[name] = {}
                continue
            labels: Labels = {("param", self.fn, name): ()}
            if self.catalog.is_rank_name(name):
                labels[self.rank_source((name,), info.line)] = ()
            env[name] = labels
        self.block(info.body, env)
        self.out.flow(("decided", self.fn), self.answers.decisions(info.body))
        self.out.none_only = self.answers.none_only
        return self.out

    # -- statements -----------------------------------------------------------------------
    def block(self, stmts: tuple[Stmt, ...], env: Env) -> Env:
        for stmt in stmts:
            env = self.statement(stmt, env)
        return env

    def statement(self, stmt: Stmt, env: Env) -> Env:
        kind = stmt.kind
        if kind in ("assign", "expr", "return", "raise"):
            labels = self.value(stmt, env)
            if kind == "assign":
                self.assign(stmt, labels, env)
            elif kind == "return":
                self.returned(stmt, labels)
                self.tuples.returned(stmt, env, labels)
            return env
        if kind in ("if", "match"):
            labels = self.value(stmt, env)
            self.out.condition(stmt, labels)
            with self.answers.deciding(stmt, labels):
                return self.sides.walk(stmt, env, self.block)
        if kind == "loop":
            labels = self.value(stmt, env)
            self.out.condition(stmt, labels)
            with self.answers.deciding(stmt, labels):
                return self.loop(stmt, labels, env)
        if kind == "with":
            labels = self.value(stmt, env)
            if stmt.targets:
                self.bind(stmt.targets, through(labels, self.step(stmt.line, stmt.text)), env)
            return self.block(stmt.blocks[0] if stmt.blocks else (), env)
        if kind == "try":
            blocks = stmt.blocks
            body_env = self.block(blocks[0], dict(env))
            outs = [self.block(blocks[1], dict(body_env)) if len(blocks) > 1 else body_env]
            for handler in blocks[3:]:
                outs.append(self.block(handler, join([env, body_env])))
            joined = join(outs)
            return self.block(blocks[2], joined) if len(blocks) > 2 else joined
        return env

    def loop(self, stmt: Stmt, labels: Labels, env: Env) -> Env:
        if stmt.targets:
            text = f"for {', '.join(segs_text(t) for t in stmt.targets)} in {stmt.text}"
            step = self.step(stmt.line, text)
            for target, item in zip(stmt.targets, loop_items(self, stmt, env, labels), strict=True):
                self.bind((target,), through(item, step), env)
        body, orelse = (*stmt.blocks, (), ())[:2]
        after = join([env, self.block(body, dict(env))])
        if not self._carrying:
            # A second pass carries values around the loop once; the loops inside it walk
            # their bodies once (their own second pass ran in the first), so nesting costs
            # depth + 1 walks of the innermost body, not 2 ** depth.
            self._carrying = True
            try:
                after = join([after, self.block(body, dict(after))])
            finally:
                self._carrying = False
        return self.block(orelse, after)

    def returned(self, stmt: Stmt, labels: Labels) -> None:
        """Own parameters reaching a return are a per-call-site summary; the rest is intrinsic."""
        step = self.step(stmt.line, "return")
        # Which return runs is the function's decision (`decisions`); a caller that enters the
        # group's collectives through it takes what the group agreed instead (`Walker.call`).
        handing = handed(stmt, labels, self.results, self.f.program, self.fn)
        self.answers.returned(constant_of(stmt, self.is_class), handing)
        self.out.returns(self.fn, step, labels)
        self.relays.returned(labels)

    def is_class(self, segs: Segs) -> bool:
        owner = self.f.resolver.evaluate(self.record, segs)
        return bool(owner) and all(value.kind == "class" for value in owner)

    # -- values ---------------------------------------------------------------------------
    def value(self, stmt: Stmt, env: Env) -> Labels:
        """Labels of what a statement's value (or test) is computed from."""
        state = _Statement(stmt)
        for call in stmt.calls:
            if call.deferred:
                continue
            state.results[id(call)] = self.call(call, env, state)
            state.pending.append(call)
        out: Labels = {}
        for call in stmt.calls:
            if id(call) in state.results and id(call) not in state.consumed_calls:
                merge(out, state.results[id(call)])
        for ref in stmt.existence:  # `x is None`: whether it exists, not what it holds
            state.consumed[ref] += 1
            merge(out, existence(self.ref(ref, env, stmt.line), ref, env))
        for ref in stmt.reads:
            if state.consumed[ref] > 0:
                state.consumed[ref] -= 1
                continue
            merge(out, self.ref(ref, env, stmt.line, ref in stmt.truths))
        for name, agreed in state.kills:
            env[name] = dict(agreed)
        self.results = state.results
        sides = same_sides(self, stmt, env)  # `tqdm(xs) if rank == 0 else xs`: not the test
        return out if sides is None else sides

    def call(self, call: CallSite, env: Env, state: _Statement) -> Labels:
        program = self.f.program
        catalog = self.catalog
        resolved = followed(program, self.fn, call)
        targets = [t.name for t in resolved]
        names = targets or [segs_text(call.target)]
        result: Labels = {}
        kind = catalog.kind_of_call(names)
        named: Source | None = None  # a rank id its name gives a dimension
        if kind == "rank-id":
            rank = self.rank_source(call.target, call.line)
            groups = set() if rank.dimension else self.f.calls.names.named_groups(self.record, call)
            if len(groups) == 1:  # `dist.get_rank(group=tp_group)`: its id in that group
                rank = replace(rank, dimension=groups.pop())
            result[rank] = ()
            named = rank if rank.dimension else None
        elif kind is not None:
            drawn = catalog.generator_drawn(names) if kind == "random" else ""
            source = self.source(kind, call.text + "()", call.line)
            result[replace(source, generator=drawn)] = ()
        elif any(n in catalog.environment_reads for n in names) and catalog.is_rank_variable(
            call.operands[0].const if call.operands else None
        ):
            result[self.source("rank-id", f"{call.text}({call.args[0]})", call.line)] = ()
        segs = call.target
        placement = any(n in catalog.placement_calls for n in names)
        # An address (`buf.data_ptr()`) says where a buffer lives, not what it holds.
        placement = placement or (len(segs) >= 2 and segs[-1] in catalog.address_methods)
        internal = [t for t in targets if t in program.functions]
        # An object from outside the program handed a process group takes part in that group's
        # protocol: the rank ids it is given say which member it is, not what it returns.
        member = not internal and self.f.calls.names.passes_group(self.record, call)
        operands: list[tuple[Operand, Labels]] = []
        measured = len(segs) == 1 and segs[0] in self.catalog.measures
        for operand in call.operands:
            labels = self.operand(operand, env, state, call.line, measured)
            if member and operand.ref and catalog.is_rank_name(operand.ref[-1]):
                continue
            if operand.keyword not in catalog.placement_keywords:  # placement is not data
                operands.append((operand, labels))
        if named is not None:
            return result  # named by its dimension: that is what it is, however computed
        self.relays.primitive(call, targets, operands)
        seeded = catalog.generator_seeded(names)
        if seeded:  # what seeds a generator decides whether its draws agree (`flow.seeded`)
            merge(self.out.seeds.setdefault(seeded, {}), union(labels for _o, labels in operands))
        receiver = self.receiver(call, env, state)
        primitive = any(self.f.reach.catalog.kind(t) == "collective" for t in targets)
        entered = primitive or bool(self.f.calls.entered(self.record, call))
        if entered:
            operands = self.roots.sent(call, operands, env, targets)
        agreed = self.agreement.agreed(call, primitive, operands, targets) if entered else {}
        if entered:
            state.kills.extend(self.agreement.buffer(call, agreed))
        uniform = placement or any(catalog.is_uniform_name(n) for n in names)
        # An object of a program class is not a value: its fields carry their own flows.
        uniform = uniform or (not internal and any(n in program.classes for n in names))
        if primitive or uniform:
            merge(result, agreed)
            return result  # agreed by the group, or uniform by construction
        if not internal and displayed(self, call, names):  # `tqdm(xs, disable=rank != 0)`
            merge(result, next((labels for o, labels in operands if o is call.operands[0]), {}))
            return result
        if not internal:
            # Outside the program: its result is computed from its receiver and arguments,
            # except a placement method's (`x.to(device)` holds what `x` holds).
            if len(segs) >= 2 and segs[-1] in catalog.feeders and segs[-2] != CALL:
                self.feed(call, [result, *(labels for _o, labels in operands)], env)
            merge(result, receiver)
            if not (len(segs) >= 2 and segs[-1] in catalog.placement_methods):
                for _operand, labels in operands:
                    merge(result, labels)
            return result
        # An object, not a value, whatever collectives building it ran.
        builds = segs[-1:] != ("__init__",) and all(t.endswith(".__init__") for t in internal)
        if not builds:
            merge(result, agreed)
        step = self.step(call.line, call.text + "(…)")
        for target in internal:
            callee = program.functions[target]
            merge(result, self.callables.answer(call, target, builds, entered))
            self.forget_stored(target, env)
            passed = self.bind_params(callee, called := called_as(call, resolved, target), operands)
            if target in self.f.reached and self.fn not in self.f.reached:
                passed = {}  # a caller outside the rounds builds other objects
            self.relays.called(target, passed)
            if not entered and not builds and len(internal) == 1:
                self.tuples.called(called, target, passed, env)
            # What a collective wrapper hands back is what the group agreed on, even when one
            # path returns the argument itself (the root of a broadcast, a group of one).
            summary = {} if entered or self.relays.relayed(target) else self.f.ret_params(target)
            for param, labels in passed.items():
                self.out.flow(("param", target, param), through(labels, step))
                if param in summary:
                    back = self.step(call.line, f"{call.text}(…) returns {param}")
                    merge(result, through(labels, back))
            merge(result, {} if entered else self.callables.returned(called, target))
        return result

    def receiver(self, call: CallSite, env: Env, state: _Statement) -> Labels:
        """Labels of what a method is called on (`self.q` in `self.q.popleft()`), read once."""
        target = call.target
        if not target or target[0] == OPAQUE:
            return {}
        read = target[:-1] if len(target) > 1 else target
        state.consumed[read] += 1
        if len(target) == 1:
            return {}
        return self.ref(read, env, call.line, target[-1] in self.catalog.size_methods)

    def bind_params(
        self, callee: FunctionRecord, call: CallSite, operands: list[tuple[Operand, Labels]]
    ) -> dict[str, Labels]:
        labels = {id(operand): found for operand, found in operands}
        return {
            param: labels[id(operand)]
            for param, operand in bind(callee, call).passed.items()
            if id(operand) in labels
        }

    def operand(
        self, operand: Operand, env: Env, state: _Statement, line: int, size: bool = False
    ) -> Labels:
        """Labels of one argument; what it reads is then not counted again for the statement.
        `size`: the argument is measured (`len(x)`), not read."""
        out: Labels = {}
        for segs in operand.calls:
            for index, call in enumerate(state.pending):
                if call.target == segs:
                    state.consumed_calls.add(id(call))
                    merge(out, state.results.get(id(call), {}))
                    del state.pending[index]
                    break
        for ref in operand.reads:
            state.consumed[ref] += 1
            held = self.ref(ref, env, line, size and ref == operand.ref)
            merge(out, existence(held, ref, env) if ref in state.tested[id(operand)] else held)
        return out

    def feed(self, call: CallSite, fed: list[Labels], env: Env) -> None:
        """`q.append(x)`: the container now also holds what `x` holds."""
        labels = union(fed)
        container = call.target[:-1]
        step = self.step(call.line, f"{call.text}(…)")
        self.bind(((*container, SUBSCRIPT),), through(labels, step), env)

    def forget_stored(self, target: str, env: Env) -> None:
        stored = self.f.stores.get(target, frozenset())
        for key in [k for k in env if "." in k and k.rsplit(".", 1)[1] in stored]:
            del env[key]

    def ref(self, ref: Segs, env: Env, line: int, size: bool = False) -> Labels:
        """Labels of a reference read: a local's, an attribute path's, a global's, or a source.

        A container is two values: its size (what it was assigned, and how many messages from
        outside the group arrived in it) and its items (what was fed in). `size=True` reads the
        first only: `len(q)`, `if q:`, `for ... in q` (the trip count), `q.qsize()`.
        """
        cut: list[str] = []
        for seg in ref:
            if seg in (CALL, SUBSCRIPT):
                break
            cut.append(seg)
        if not cut or cut[0] in (OPAQUE, "<str>", "super()"):
            return {}
        if len(cut) < len(ref) and ref[-2] == CALL and self.catalog.is_rank_name(ref[-1]):
            # `get_pp_group().rank_in_group`: a rank id read from what a call returned
            return {self.rank_source(ref, line): ()}
        if self.catalog.is_uniform_name(cut[-1]):
            return {}
        if tuple(cut[:2]) == ("os", "environ"):
            return {}  # the launcher's environment; per-rank variables are read by name above
        size = size and len(cut) == len(ref)
        out: Labels = {}
        known = next(
            (k for k in range(len(cut), 0, -1) if ".".join(cut[:k]) in env), 0
        )  # the longest path this function assigned (a local, or an attribute path)
        if known:
            key = ".".join(cut[:known])
            merge(out, env[key])
            if not size or known < len(cut):
                merge(out, env.get(key + "[]", {}))
        elif self.f.is_global(self.record.module, cut[0]) and not self.record.is_module_body:
            out[("global", self.record.module, cut[0])] = ()
        if any(seg in self.catalog.placement_attributes for seg in cut[1:]):
            return {}  # a value's dtype or device names its type or placement, not its data
        for index in range(max(known, 1), len(cut)):
            attr = cut[index]
            if self.catalog.is_rank_name(attr):
                source = self.rank_source(tuple(cut[: index + 1]), line)
                out[source] = ()
                if source.dimension:
                    continue  # named by its dimension: that is what it is, however computed
            last = index == len(cut) - 1
            for node in self.attr_nodes(tuple(cut[:index]), attr):
                out[node] = ()
                if last:
                    out[("arrivals" if size else "items", *node[1:])] = ()
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
    def assign(self, stmt: Stmt, labels: Labels, env: Env) -> None:
        names = ", ".join(segs_text(t) for t in stmt.targets)
        shape = stmt.value
        read = segs_text(shape[1]) if shape and shape[0] in ("call", "ref") else "…"
        called = "()" if shape and shape[0] == "call" else ""
        step = self.step(stmt.line, f"{names} = {read}{called}")
        unpacked = self.tuples.unpack(stmt, env, labels)
        if unpacked is not None:  # item by item (`tuples.py`)
            for target, item in zip(stmt.targets, unpacked, strict=True):
                self.bind((target,), through(item, step), env)
            return
        items = self.tuples.of_value(stmt, env, labels) if len(stmt.targets) == 1 else None
        kept = None if items is None else [through(item, step) for item in items]
        self.bind(stmt.targets, through(labels, step), env, kept)
        self.tuples.keep(stmt, items, env, labels)
        deciding(stmt, env, lambda segs: self.ref(segs, env, stmt.line), self.results, labels)

    def bind(
        self, targets: tuple[Segs, ...], labels: Labels, env: Env, items: Items = None
    ) -> None:
        """Store `labels` into each target; `x[k] = v` and feeds (`x[]`) go to x's items; an
        attribute keeps a tuple's `items` apart (`TupleItems.store`)."""
        for target in targets:
            if not target or target[0] in (OPAQUE, "<str>"):
                continue
            weak = target[-1] == SUBSCRIPT
            while target and target[-1] == SUBSCRIPT:
                target = target[:-1]
            if CALL in target or SUBSCRIPT in target or not target:
                continue
            key = ".".join(target)
            if weak:
                if len(target) == 1 or key in env:
                    merge(env.setdefault(key + "[]", {}), labels)
                    arrivals = ("arrivals", self.fn, key)
                    env[key] = {**env.get(key, {}), arrivals: ()}
                    self.out.flow(arrivals, labels)
            else:
                env[key] = dict(labels)
                env[key + "[]"] = {}
                forget(key, env)
            if len(target) == 1:
                if self.record.is_module_body or target[0] in self.record.info.global_names:
                    self.out.flow(("global", self.record.module, target[0]), labels)
                continue
            owner, attr = target[:-1], target[-1]
            for value in self.f.resolver.evaluate(self.record, owner):
                if value.kind in ("instance", "class") and value.name in self.f.program.classes:
                    if weak:
                        self.out.flow(("items", value.name, attr), labels)
                        self.out.flow(("arrivals", value.name, attr), labels)
                    else:
                        self.tuples.store(("attr", value.name, attr), labels, items)
