"""The records the model is made of: modules, functions, classes, and resolved call targets.

They sit below both the program and the resolver, which each need them, so neither has to import
the other's module to name them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from rankguard.summary.ir import CallSite, ClassInfo, FileSummary, FunctionInfo


@dataclass
class ModuleRecord:
    name: str
    path: str
    summary: FileSummary

    @property
    def is_package(self) -> bool:
        return self.path.endswith(("__init__.py", "__init__.pyi"))


@dataclass
class FunctionRecord:
    qualname: str  # module-qualified; module-level code is the module's own name
    module: str
    path: str
    info: FunctionInfo

    @property
    def is_module_body(self) -> bool:
        return self.qualname == self.module

    @property
    def local_name(self) -> str:
        return self.info.qualname


@dataclass
class ClassRecord:
    qualname: str
    module: str
    path: str
    info: ClassInfo
    bases: list[str] = field(default_factory=list)  # resolved base classes in the program
    external_bases: list[str] = field(default_factory=list)
    methods: dict[str, str] = field(default_factory=dict)  # name -> function qualname


class Target(NamedTuple):
    """One thing a call site may invoke. `kind` is the graph edge kind; `via` refines a call
    edge (`dispatch`: a callable held in the attribute being called; `subclass`: found on a
    class derived from the receiver's). `wraps`: the target is the wrapper a decorator made of
    that function at its definition (`@dec def f`: calling `f` runs the wrapper, whose call of
    `dec`'s parameter runs `f`; `rankguard.model.decorators`)."""

    name: str
    kind: str = "call"
    via: str | None = None
    wraps: str | None = None


class Resolved(NamedTuple):
    call: CallSite
    targets: tuple[Target, ...]
