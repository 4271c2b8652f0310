"""Assemble a `Program` from summaries: index definitions, link classes, resolve every call."""

from __future__ import annotations

from collections import defaultdict

import networkx as nx

from rankguard.adapters.sources import SourceTree
from rankguard.errors import ErrorRecord
from rankguard.model.program import (
    ClassRecord,
    FunctionRecord,
    ModuleRecord,
    Program,
    Resolved,
    walk_calls,
)
from rankguard.model.resolve import Resolver
from rankguard.summary.ir import FileSummary


def build_program(
    tree: SourceTree, summaries: dict[str, FileSummary], errors: list[ErrorRecord]
) -> Program:
    modules: dict[str, ModuleRecord] = {}
    duplicate: list[ErrorRecord] = []
    for src in sorted(tree.files, key=lambda f: (f.path.endswith(".pyi"), f.path)):
        summary = summaries.get(src.path)
        if summary is None:
            continue
        if src.module in modules:
            # A stub beside its module, or two roots with the same package: keep the first.
            duplicate.append(
                ErrorRecord(
                    src.path, f"module {src.module} already read from {modules[src.module].path}"
                )
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
            if (
                owner is not None
                and record.info.qualname == f"{record.info.cls}.{record.info.name}"
            ):
                owner.methods.setdefault(record.info.name, record.qualname)

    program = Program(
        root=tree.root,
        modules=modules,
        functions=functions,
        classes=classes,
        errors=sorted([*errors, *duplicate]),
        graph=nx.MultiDiGraph(),
        calls={},
        unresolved=[],
        subclasses={},
    )
    resolver = Resolver(program)
    program._resolver = resolver
    _link_classes(program, resolver)
    _resolve_calls(program, resolver)
    return program


def _link_classes(program: Program, resolver: Resolver) -> None:
    subclasses: dict[str, set[str]] = defaultdict(set)
    for record in program.classes.values():
        holder = program.functions.get(record.module)
        if holder is None:
            continue
        for base in record.info.bases:
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


def _resolve_calls(program: Program, resolver: Resolver) -> None:
    graph = program.graph
    for qual in sorted(program.functions):
        record = program.functions[qual]
        graph.add_node(qual)
        resolved: list[Resolved] = []
        for call in walk_calls(record.info.body):
            targets = tuple(resolver.call_targets(record, call))
            resolved.append(Resolved(call, targets))
            if not targets:
                program.unresolved.append((qual, call.text, record.path, call.line))
            for target in targets:
                graph.add_edge(
                    qual,
                    target.name,
                    kind=target.kind,
                    via=target.via,
                    path=record.path,
                    line=call.line,
                    col=call.col,
                )
        program.calls[qual] = resolved
        seen: set[tuple[str, int]] = set()
        for segs, line in record.info.value_refs:
            for name in resolver.value_ref_targets(record, segs):
                if (name, line) in seen:
                    continue
                seen.add((name, line))
                graph.add_edge(
                    qual, name, kind="callback", via=None, path=record.path, line=line, col=0
                )
