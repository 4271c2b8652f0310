"""Codemod: wrap each unwatched wait in the project's watchdog stamp.

`unwatched-collective` reports call sites in a round whose waits no `watchdog-hooks` stamp
covers. This codemod wraps the statement holding each such call in the stamp form the file (or
project) already uses, e.g. `with self.on_blocked_recv("broadcast_pyobj"):`, naming the site after
the called function as the existing stamps are. Comments above the statement move above the
`with`; the statement keeps its own trailing comment. A statement already inside a stamp is left
alone, so a second run changes nothing.

Through rankguard (analyses the project, check-only unless `--write`):

    rankguard fix stamp-watchdog PATH [--diff] [--write]

As a libcst codemod command, with findings from `rankguard check` (the command computes the
findings; this module imports nothing above `reports`):

    rankguard check PATH --select unwatched-collective --format json > findings.json
    python -m libcst.tool codemod -x --no-format \
        rankguard.codemods.stamp_watchdog.StampWatchdogCommand \
        --findings findings.json PATH
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import PositionProvider

from rankguard.core.config import load
from rankguard.core.errors import InputError

DEFAULT_HOOK = "on_blocked_recv"


@dataclass(frozen=True, order=True)
class StampSite:
    """One call to stamp: in `function` (local qualname, `Cls.meth`), the statement holding
    `line`; `name` is the stamp's site name."""

    path: str
    function: str
    line: int
    name: str


def sites_from_findings(findings: Sequence[dict[str, Any]]) -> list[StampSite]:
    """Stamp sites from `rankguard check --format json` findings of `unwatched-collective`."""
    out: list[StampSite] = []
    for item in findings:
        if item.get("rule") != "unwatched-collective" or item.get("fixable") is False:
            continue  # not fixable: a stamp there would enclose a stamped wait
        function = str(item.get("function", ""))
        try:
            path, line = str(item["path"]), int(item["line"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"finding without a usable path and line: {item!r:.120}") from exc
        stamp = str(item.get("stamp") or function.rsplit(".", 1)[-1])
        out.append(StampSite(path, function, line, stamp))
    return sorted(set(out))


def _hook_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _stamp_call(item: cst.WithItem, hooks: Sequence[str]) -> cst.Call | None:
    call = item.item
    if isinstance(call, cst.Call) and _hook_name(call.func) in hooks:
        return call
    return None


class _FormFinder(cst.CSTVisitor):
    """The first existing stamp in a module: its callee expression and quote character."""

    def __init__(self, hooks: Sequence[str]) -> None:
        self.hooks = hooks
        self.func: cst.BaseExpression | None = None
        self.quote = '"'

    def visit_WithItem(self, node: cst.WithItem) -> bool:
        call = _stamp_call(node, self.hooks)
        if call is not None and self.func is None:
            self.func = call.func
            if call.args and isinstance(call.args[0].value, cst.SimpleString):
                self.quote = call.args[0].value.quote
        return False


class StampWatchdogCommand(VisitorBasedCodemodCommand):
    DESCRIPTION = "Wrap unwatched waits in the project's watchdog stamp (rankguard)."
    METADATA_DEPENDENCIES = (PositionProvider,)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--findings",
            dest="findings",
            metavar="FILE",
            default=None,
            help="JSON from `rankguard check --select unwatched-collective --format json`",
        )
        arg_parser.add_argument(
            "--hook", dest="hook", default=None, help="the stamp's name (default: config)"
        )
        arg_parser.add_argument(
            "--form",
            dest="form",
            default=None,
            help="callee to use when a file has no stamp yet (default: self.HOOK)",
        )

    def __init__(
        self,
        context: CodemodContext,
        findings: str | None = None,
        hook: str | None = None,
        form: str | None = None,
        sites: Sequence[StampSite] | None = None,
    ) -> None:
        super().__init__(context)
        self.hooks = (hook,) if hook else ()
        self.form = form
        self._sites = list(sites) if sites is not None else None
        self._findings = findings
        self._functions: list[str] = []
        self._depth_in_stamp = 0
        self._func: cst.BaseExpression | None = None
        self._quote = '"'
        self.applied: list[StampSite] = []

    # -- which sites this file has ------------------------------------------------------------
    def _file_sites(self) -> list[StampSite]:
        sites = self._sites
        if sites is None:
            sites = _load_sites(self._findings, self.context.filename)
            if not self.hooks:
                self.hooks = _configured_hooks(self.context.filename)
        filename = self.context.filename
        if filename is None:
            return list(sites)
        here = Path(filename).resolve().as_posix()
        return [s for s in sites if here.endswith("/" + s.path) or here == s.path]

    # -- visiting -----------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self.sites = self._file_sites()
        if not self.hooks:
            self.hooks = (DEFAULT_HOOK,)
        finder = _FormFinder(self.hooks)
        node.visit(finder)
        self._quote = finder.quote
        if finder.func is not None:
            self._func = finder.func
        else:
            self._func = cst.parse_expression(self.form or f"self.{self.hooks[0]}")
        return bool(self.sites)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._functions.append(node.name.value)
        return True

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self._functions.pop()
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._functions.append(node.name.value)
        return True

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._functions.pop()
        return updated

    def visit_With(self, node: cst.With) -> bool:
        if any(_stamp_call(item, self.hooks) for item in node.items):
            self._depth_in_stamp += 1
        return True

    def leave_With(self, original: cst.With, updated: cst.With) -> cst.BaseStatement:
        if any(_stamp_call(item, self.hooks) for item in original.items):
            self._depth_in_stamp -= 1
        return updated

    def _qualname(self) -> str:
        # Classes and functions alike join with "."; nested functions use Python's <locals>.
        return ".".join(self._functions)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        if self._depth_in_stamp or not self._functions or not self.sites:
            return updated
        position = self.get_metadata(PositionProvider, original)
        qualname = self._qualname()
        for site in self.sites:
            if not _same_function(site.function, qualname):
                continue
            if not position.start.line <= site.line <= position.end.line:
                continue
            self.applied.append(site)
            return self._wrap(updated, site.name)
        return updated

    def _wrap(self, stmt: cst.SimpleStatementLine, name: str) -> cst.With:
        assert self._func is not None
        literal = cst.SimpleString(f"{self._quote}{name}{self._quote}")
        call = cst.Call(func=self._func, args=[cst.Arg(literal)])
        return cst.With(
            items=[cst.WithItem(call)],
            body=cst.IndentedBlock(body=[stmt.with_changes(leading_lines=())]),
            leading_lines=stmt.leading_lines,
        )


def _same_function(site_function: str, local: str) -> bool:
    """`pkg.mod.Cls.meth` (a finding's qualname) names the local `Cls.meth`."""
    plain = site_function.replace(".<locals>", "")
    return plain == local or plain.endswith("." + local)


def _load_sites(findings: str | None, filename: str | None) -> list[StampSite]:
    if not findings:
        raise InputError(
            "stamp-watchdog as a libcst command needs --findings FILE (from `rankguard check "
            "--select unwatched-collective --format json`); `rankguard fix stamp-watchdog` "
            f"analyses the project itself ({filename or 'no file'})"
        )
    if findings not in _FINDINGS:  # libcst makes one command per file: read it once
        _FINDINGS[findings] = _read_findings(findings)
    return _FINDINGS[findings]


def _read_findings(findings: str) -> list[StampSite]:
    try:
        data = json.loads(Path(findings).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{findings}: cannot read findings JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("findings", []), list):
        raise InputError(f"{findings}: not `rankguard check --format json` output")
    return sites_from_findings(data.get("findings", []))


_FINDINGS: dict[str, list[StampSite]] = {}


def _configured_hooks(filename: str | None) -> tuple[str, ...]:
    if filename is None:
        return ()
    return load(None, Path(filename).resolve().parent).watchdog_hooks
