"""Assemble a `Program` from summaries: index definitions, link classes, resolve every call."""

from __future__ import annotations

from collections import defaultdict

from rankguard.adapters.sources import SourceTree
from rankguard.adapters.store import COUNTS
from rankguard.core.errors import ErrorRecord
from rankguard.model.arguments import through_parameters
from rankguard.model.invokers import invoker, waits_on_futures
from rankguard.model.program import Program
from rankguard.model.records import ClassRecord, FunctionRecord, ModuleRecord, Resolved, Target
from rankguard.model.resolve import Resolver, suspends
from rankguard.model.slots import through_slots
from rankguard.model.values import BUILTIN_PREFIX
from rankguard.summary.ir import (
    SUBSCRIPT,
    FileSummary,
    Stmt,
    dotted,
    walk_calls,
    walk_statements,
)

# What resolution learned, keyed so it can be cached beside the summaries and re-applied:
# class links, each function's call targets in `walk_calls` order, callbacks, unresolved calls,
# and (under "modules") each module's own part before the whole-program passes.
Resolution = dict[str, object]
# One module's part: {"calls": {qualname: targets per call}, "callbacks": {qualname: [...]}},
# a function of the module's content and of the other modules' interfaces only.
ModulePart = dict[str, dict[str, list]]


def build_program(
    tree: SourceTree,
    summaries: dict[str, FileSummary],
    errors: list[ErrorRecord],
    reuse: dict[str, ModulePart] | None = None,
    unchanged: dict[str, ModulePart] | None = None,
    resolution: Resolution | None = None,
) -> tuple[Program, Resolution]:
    """The program, resolved afresh or (when `resolution` is given) from a cached resolution
    of exactly these summaries. `reuse` holds module parts known to be valid (the module's
    content and every other module's interface are those they were computed under): their
    functions are not resolved again; nor are those of `unchanged`, the functions of an edited
    module whose line-free records did not change (`model.load`). The whole-program passes
    always run."""
    modules: dict[str, ModuleRecord] = {}
    duplicate: list[ErrorRecord] = []
    for src in sorted(tree.files, key=lambda f: (f.path.endswith(".pyi"), f.path)):
        summary = summaries.get(src.path)
        if summary is None:
            continue
        if src.module in modules:
            # Readers give every file a name of its own (`module_names`): a shared one is a bug.
            first = modules[src.module].path
            duplicate.append(
                ErrorRecord(src.path, f"module {src.module} already read from {first}")
            )
            continue
        modules[src.module] = ModuleRecord(src.module, src.path, summary)

    functions: dict[str, FunctionRecord] = {}
    classes: dict[str, ClassRecord] = {}
    for name, mod in modules.items():
        for info in mod.summary.functions:
            qual = f"{name}.{info.qualname}" if info.qualname else name
            functions[qual] = FunctionRecord(qual, name, mod.path, info)
        for cinfo in mod.summary.classes:
            qual = f"{name}.{cinfo.qualname}"
            classes[qual] = ClassRecord(qual, name, mod.path, cinfo)
    for record in functions.values():
        if record.info.cls:
            owner = classes.get(f"{record.module}.{record.info.cls}")
            direct = f"{record.info.cls}.{record.info.name}"
            if owner is not None and record.info.qualname == direct:
                owner.methods.setdefault(record.info.name, record.qualname)

    program = Program(
        root=tree.root,
        modules=modules,
        functions=functions,
        classes=classes,
        errors=sorted([*errors, *duplicate]),
        calls={},
        callbacks={},
        unresolved=[],
        subclasses={},
    )
    if resolution is not None:
        _apply(program, resolution)
        return program, resolution
    resolver = Resolver(program)
    program._resolver = resolver
    _link_classes(program, resolver)
    parts = _resolve_calls(program, resolver, reuse or {}, unchanged or {})
    return program, _record(program, parts)


def _record(program: Program, parts: dict[str, ModulePart]) -> Resolution:
    return {
        "modules": parts,
        "classes": {q: (c.bases, c.external_bases) for q, c in program.classes.items()},
        "subclasses": program.subclasses,
        "calls": {
            q: [tuple(tuple(t) for t in r.targets) for r in resolved]
            for q, resolved in program.calls.items()
        },
        "callbacks": program.callbacks,
        "unresolved": program.unresolved,
    }


def _apply(program: Program, resolution: Resolution) -> None:
    for qual, (bases, external_bases) in resolution["classes"].items():  # type: ignore[union-attr]
        program.classes[qual].bases = list(bases)
        program.classes[qual].external_bases = list(external_bases)
    program.subclasses = resolution["subclasses"]  # type: ignore[assignment]
    calls: dict[str, list] = resolution["calls"]  # type: ignore[assignment]
    for qual, record in program.functions.items():
        targets = calls.get(qual, [])
        program.calls[qual] = [
            Resolved(call, tuple(Target(*t) for t in found))
            for call, found in zip(walk_calls(record.info.body), targets, strict=True)
        ]
    program.callbacks = resolution["callbacks"]  # type: ignore[assignment]
    program.unresolved = resolution["unresolved"]  # type: ignore[assignment]


def _link_classes(program: Program, resolver: Resolver) -> None:
    subclasses: dict[str, set[str]] = defaultdict(set)
    for record in program.classes.values():
        holder = program.functions.get(record.module)
        if holder is None:
            continue
        for written in record.info.bases:
            # `Spec[int]`, `Generic[T]`: type parameters for checkers; the base is what they
            # subscript.
            base = written[:-1] if len(written) > 1 and written[-1] == SUBSCRIPT else written
            values = resolver.evaluate(holder, base)
            linked = False
            for value in values:
                if value.kind == "class" and value.name != record.qualname:
                    record.bases.append(value.name)
                    linked = True
                elif value.kind == "external":
                    record.external_bases.append(value.name)
                    linked = True
            if not linked and base not in (("object",), ("Generic",)):
                record.external_bases.append(".".join(base))
    # Transitive subclasses, so `self.m()` in a mixin can find `m` on a class derived from it.
    for record in program.classes.values():
        for ancestor in program.mro(record.qualname)[1:]:
            subclasses[ancestor].add(record.qualname)
    program.subclasses = dict(subclasses)


def _resolve_calls(
    program: Program,
    resolver: Resolver,
    reuse: dict[str, ModulePart],
    unchanged: dict[str, ModulePart],
) -> dict[str, ModulePart]:
    """Resolve every function (or take its module's reusable part); returns each module's
    part as it stands before the whole-program pass through parameters."""
    parts: dict[str, ModulePart] = {}
    for qual in sorted(program.functions):
        record = program.functions[qual]
        part = parts.setdefault(record.module, {"calls": {}, "callbacks": {}})
        kept = reuse.get(record.module)
        same = unchanged.get(record.module, {})
        if kept is not None:
            resolved = _as_resolved(record, kept["calls"][qual])
            callbacks = kept["callbacks"].get(qual, [])
        elif qual in same.get("calls", {}):
            resolved = _as_resolved(record, same["calls"][qual])
            callbacks = same["callbacks"][qual]
        else:
            COUNTS[f"function resolved: {qual}"] += 1
            resolved = [
                Resolved(call, tuple(resolver.call_targets(record, call)))
                for call in walk_calls(record.info.body)
            ]
            refs: dict[tuple[str, int], None] = {}
            for segs, line in record.info.value_refs:
                for name in resolver.value_ref_targets(record, segs):
                    refs.setdefault((name, line), None)
            callbacks = list(refs)
        program.calls[qual] = resolved
        part["calls"][qual] = [tuple(tuple(t) for t in r.targets) for r in resolved]
        if callbacks:
            program.callbacks[qual] = callbacks
            part["callbacks"][qual] = callbacks
    through_slots(program, resolver)
    _through_invokers(program, resolver)  # first: a thread's callable is a caller too
    through_parameters(program, resolver)
    _implicit_dunders(program, resolver)
    program.unresolved = [
        (qual, r.call.text, program.functions[qual].path, r.call.line)
        for qual in sorted(program.calls)
        for r in program.calls[qual]
        if not r.targets
    ]
    return parts


def _as_resolved(record: FunctionRecord, found: list) -> list[Resolved]:
    """Targets kept per call, in `walk_calls` order, back on this record's calls."""
    return [
        Resolved(call, tuple(Target(*t) for t in targets))
        for call, targets in zip(walk_calls(record.info.body), found, strict=True)
    ]


def _through_invokers(program: Program, resolver: Resolver) -> None:
    """`await asyncio.to_thread(f)`, `sorted(xs, key=f)`, `ex.submit(f)` then `.result()`:
    the callable argument runs before the call's result is there (`rankguard.model.invokers`)."""
    for qual, resolved in program.calls.items():
        record = program.functions[qual]
        waits: bool | None = None
        for index, (call, targets) in enumerate(resolved):
            found: list[Target] = []
            for target in targets:
                entry = invoker(target.name)
                if entry is None or call.deferred:
                    continue
                if entry.via == "executor":
                    if waits is None:
                        waits = waits_on_futures(
                            [t.name for r in resolved for t in r.targets],
                            [r.call.text for r in resolved],
                        )
                    if not waits:
                        continue
                where = entry.argument
                if isinstance(where, str):
                    text = call.kwarg(where)
                else:
                    text = call.args[where] if where < len(call.args) else None
                segs = dotted(text) if text else None
                if segs:
                    names = resolver.value_ref_targets(record, segs)
                    found += [Target(name, "call", entry.via) for name in names]
            if found:
                merged = sorted({*targets, *found}, key=lambda t: (t.name, t.kind, t.via or ""))
                resolved[index] = Resolved(call, tuple(merged))


# Methods Python runs without a call in the source, by where the instance is used.
_WITH = ("__enter__",)  # `__exit__` is a call of its own at the end of the `with`
_FOR = ("__iter__", "__next__")


def _implicit_dunders(program: Program, resolver: Resolver) -> None:
    """`with C():` runs `__enter__` (its `__exit__` is the statement's own exit call),
    `for x in C():` runs `__iter__`/`__next__`, and constructing a dataclass runs
    `__post_init__`: call edges `via: implicit` on the call that makes the instance.
    `next(g)` runs the generator's body there: `via: advanced`, and the call that made `g`
    in the same function is `via: suspended` (its body does not run there)."""
    for qual, resolved in program.calls.items():
        record = program.functions[qual]
        header: dict[int, tuple[str, ...]] = {}
        made: set[int] = set()  # `g = gen()`: the calls that make a stored value
        for stmt in walk_statements(record.info.body):
            if stmt.kind == "with" or (stmt.kind == "loop" and stmt.targets):
                for call in stmt.calls:
                    header[id(call)] = _WITH if stmt.kind == "with" else _FOR
            elif _makes_stored_value(stmt):
                made.add(id(stmt.calls[-1]))
        advanced = {
            t.name
            for call, targets in resolved
            for t in _advanced(program, resolver, record, call, targets)
        }
        for index, (call, targets) in enumerate(resolved):
            if id(call) in made and advanced:
                # A generator stored here and advanced by `next` in this function runs there.
                targets = tuple(
                    t._replace(via="suspended")
                    if t.name in advanced and suspends(program.functions[t.name].info)
                    else t
                    for t in targets
                )
                resolved[index] = Resolved(call, targets)
            wanted = header.get(id(call), ())
            found = _advanced(program, resolver, record, call, targets)
            if not any(t.via == "constructor" for t in targets) and not wanted and not found:
                continue
            for value in resolver.call_results(record, call.target):
                if value.kind != "instance":
                    continue
                for name in (*wanted, "__post_init__"):
                    method = _method(program, value.name, name)
                    if method is not None:
                        found.append(Target(method, "call", "implicit"))
            if found:
                merged = sorted({*targets, *found}, key=lambda t: (t.name, t.kind, t.via or ""))
                resolved[index] = Resolved(call, tuple(merged))


def _makes_stored_value(stmt: Stmt) -> bool:
    return (
        stmt.kind == "assign"
        and stmt.value[:1] == ("call",)
        and bool(stmt.calls)
        and stmt.calls[-1].target == stmt.value[1]
    )


def _advanced(program: Program, resolver: Resolver, record, call, targets) -> list[Target]:
    """`next(g)`: a generator's body runs here (`via: advanced`), an iterator's `__next__`."""
    if not any(t.name == BUILTIN_PREFIX + "next" for t in targets):
        return []
    first = call.operands[0].ref if call.operands and call.operands[0].keyword is None else None
    found: list[Target] = []
    for value in resolver.evaluate(record, first) if first else ():
        if value.kind == "generator":
            found.append(Target(value.name, "call", "advanced"))
        elif value.kind == "instance":
            method = _method(program, value.name, "__next__")
            if method is not None:
                found.append(Target(method, "call", "implicit"))
    return found


def _method(program: Program, cls: str, name: str) -> str | None:
    for owner in program.mro(cls):
        method = program.classes[owner].methods.get(name)
        if method is not None:
            return method
    return None
