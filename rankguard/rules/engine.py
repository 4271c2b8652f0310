"""Run rules over one program: selection, suppressions, unique fingerprints, stable order.

Kept apart from the command so `rankguard report` can run the same checks on a PR's base and
head and compare fingerprints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rankguard.core import progress
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord, InputError, internal_error
from rankguard.core.findings import Finding, fingerprint
from rankguard.core.stack import deep_recursion
from rankguard.model.program import Program
from rankguard.rules.base import Example, Invalid, Rule, RuleContext
from rankguard.rules.codes import alias_table, resolve_names
from rankguard.rules.session import SourceReader
from rankguard.summary.ir import FileSummary


@dataclass
class Suppressed:
    finding: Finding
    path: str
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            **self.finding.to_json(),
            "suppressed_at": {"path": self.path, "line": self.line},
            "reason": self.reason,
        }


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    failures: list[ErrorRecord] = field(default_factory=list)  # rules that raised


def choose(
    rules: dict[str, type[Rule]], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[type[Rule]]:
    """`--select` / `--ignore` by rule name, code or old name (`rules.codes`); an unknown one
    is a usage error naming it."""
    select = resolve_names(select, rules.values())
    ignore = resolve_names(ignore, rules.values())
    return [rules[n] for n in sorted(rules) if (not select or n in select) and n not in ignore]


def _locations(finding: Finding) -> list[tuple[str, int]]:
    """Where an inline suppression may sit: the finding's line and every call line of its
    chain (and, for a blocking call, the blocking line itself)."""
    out = [(finding.path, finding.line)]
    for hop in finding.extra.get("chain", ()) or ():
        out.append((hop["path"], hop["line"]))
    blocking = finding.extra.get("blocking")
    if isinstance(blocking, dict) and "path" in blocking:
        out.append((blocking["path"], blocking["line"]))
    return out


def suppression(
    by_path: dict[str, FileSummary], finding: Finding, names: dict[str, str]
) -> tuple[str, int, str] | None:
    """`names`: every spelling of a rule (name, code, old name) -> its current name."""
    for path, line in _locations(finding):
        summary = by_path.get(path)
        if summary is None:
            continue
        entry = summary.suppressions.get(line)
        if entry is None:
            continue
        rules, reason = entry
        if not rules or finding.rule in {names.get(r, r) for r in rules}:
            return path, line, reason
    return None


def unique_fingerprints(findings: Iterable[Finding]) -> list[Finding]:
    """Findings with equal line-free identity (the same call twice in one function) are told
    apart by their order, which line drift above them does not change."""
    ordered = sorted(findings)
    seen: dict[str, int] = {}
    out: list[Finding] = []
    for finding in ordered:
        count = seen.get(finding.fingerprint, 0)
        seen[finding.fingerprint] = count + 1
        if count:
            finding = replace(finding, fingerprint=fingerprint(finding.fingerprint, str(count)))
        out.append(finding)
    return out


def run_rules(
    program: Program,
    config: Config,
    rules: Sequence[type[Rule]],
    options: dict[str, Any] | None = None,
    context: RuleContext | None = None,
    read_source: SourceReader | None = None,
    between: Callable[[], None] | None = None,
) -> CheckResult:
    """`context` may be given by a caller that wants the rules' shared results afterwards
    (the report reads the staleness rows `stale-widening-term` computed). `between` runs after
    each rule but the last: the caller's release of the garbage a rule left
    (`pipelines.collector.frozen`)."""
    context = context or RuleContext(program, config, dict(options or {}), read_source)
    found: list[Finding] = []
    result = CheckResult()
    bar = progress.current()
    bar.phase("rules", len(rules), "rules")
    for index, rule_class in enumerate(rules):
        if index and between is not None:
            between()
        bar.advance(0, note=rule_class.name)
        try:
            # All or nothing: a rule that fails half-way contributes no partial findings.
            with deep_recursion():
                found.extend(list(rule_class().check(context)))
        except InputError:  # the user's input (a config entry a rule reads): exit 2, as such
            raise
        except Exception as exc:  # a rule's bug must not hide the other rules' findings
            result.failures.append(internal_error(f"rule '{rule_class.name}'", exc))
        bar.advance()
    by_path = {m.path: m.summary for m in program.modules.values()}
    names = alias_table(rules)
    for finding in unique_fingerprints(found):
        hit = suppression(by_path, finding, names)
        if hit is None:
            result.findings.append(finding)
        else:
            result.suppressed.append(Suppressed(finding, *hit))
    return result


class UnusedIgnore(Rule):
    """Not a check of the program: `--report-unused-ignores` reports through it, so unused
    comments travel like findings (text, JSON, SARIF, baselines). Defined here, in a module
    the registry does not scan, so it is never run as a rule."""

    name = "unused-ignore"
    code = "RG001"
    description = "A `# rankguard: ignore[...]` comment that silences nothing."
    help = (
        "The finding it silenced is gone, or it names a rule that does not exist. Delete the "
        "comment (or correct the rule name) so it cannot hide a future finding."
    )
    what = (
        "With `--report-unused-ignores`, reports each suppression comment that silenced no "
        "finding of this run, or that names a rule (name or code) that does not exist."
    )
    why = (
        "A comment left behind after its finding was fixed silences the next finding on that "
        "line or chain without anyone reviewing it; one naming an unknown rule never worked."
    )
    instead = "dist.barrier()  # (the comment deleted)\n"
    options = ("--report-unused-ignores",)
    fix = ""
    INVALID: ClassVar[list[Example]] = [
        Invalid("dist.barrier()  # rankguard: ignore[blocking-before-collective] was slow\n")
    ]


def unused_ignores(
    program: Program, result: CheckResult, ran: Iterable[str], known: dict[str, type[Rule]]
) -> list[Finding]:
    """Suppression comments that silenced no finding of this run.

    A comment naming a rule that did not run (`--select` / `--ignore`) is not judged; a bare
    `ignore` is judged only when every rule ran; a comment naming an unknown rule always is.
    """
    used = {(s.path, s.line) for s in result.suppressed}
    spelled = alias_table([*known.values(), UnusedIgnore])
    ran = set(ran)
    known_names = {*known, UnusedIgnore.name}
    found: list[Finding] = []
    for module in sorted(program.modules.values(), key=lambda m: m.path):
        for line, (names, reason) in sorted(module.summary.suppressions.items()):
            if (module.path, line) in used:
                continue
            unknown = sorted(n for n in names if n not in spelled)
            if unknown:
                why = f"names unknown rule(s) {', '.join(unknown)}"
            elif not names and ran >= known_names - {UnusedIgnore.name}:
                why = "silences no finding"
            elif names and all(spelled[n] in ran for n in names):
                why = f"silences no {', '.join(names)} finding"
            else:
                continue
            where = program.function_at(module.path, line)
            scope = where.qualname if where is not None else module.name
            key = fingerprint(UnusedIgnore.name, scope, ",".join(names), reason)
            rules_text = f"[{', '.join(names)}]" if names else ""
            message = f"`# rankguard: ignore{rules_text}` {why}"
            found.append(Finding(module.path, line, UnusedIgnore.name, message, key, {}))
    return unique_fingerprints(found)


def touched_paths(finding: Finding) -> set[str]:
    """Every file a finding's evidence names: its own, its chain's, its sites'."""
    paths = {finding.path}
    stack: list[Any] = [finding.extra]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            path = value.get("path")
            if isinstance(path, str):
                paths.add(path)
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return paths


def touches(finding: Finding, paths: set[str]) -> bool:
    return not touched_paths(finding).isdisjoint(paths)
