"""The `check` pipeline: PATHs to analysed roots, programs, rounds, rule results, baselines.

Folder arguments are analysed roots; file arguments inside a root restrict its report to the
findings whose chain touches them (`pipelines.targets` explains why; it is how the pre-commit
hook works). With no `rounds` configured each root's rounds are discovered
(`analysis.discovery`) and the choice is returned for the command to announce; a configured
pattern that matches nothing, a root where nothing is found and a PATH that does not exist are
input errors, never a silent pass. Baselines (`reports.baseline.judge`) are applied to the
run afterwards: `everything` keeps the unrestricted findings they are judged against.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.adapters.sources import read_directory
from rankguard.analysis.discovery import Discovery, require_rounds
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord, InputError
from rankguard.core.findings import Finding
from rankguard.model.load import load_program, make_cache
from rankguard.pipelines.collector import frozen
from rankguard.pipelines.results_cache import (
    Results,
    kept_path,
    load_results,
    results_path,
    store_results,
)
from rankguard.pipelines.targets import plan_targets
from rankguard.rules.base import Rule, RuleContext
from rankguard.rules.engine import (
    CheckResult,
    Suppressed,
    UnusedIgnore,
    run_rules,
    touched_paths,
    unused_ignores,
)

KEEP_SUMMARIES = "RANKGUARD_KEEP_SUMMARIES"  # "0": keep no blocking summaries across runs


@dataclass
class CheckOptions:
    include_round_tail: bool = False
    report_unused_ignores: bool = False
    cache_dir: Path | None = None
    use_cache: bool = True
    # Told what the run works around (two files under one module name); it goes on.
    warn: Callable[[list[ErrorRecord]], None] = lambda warnings: None


@dataclass
class CheckRun:
    """What one `check` found. Paths are relative to the analysed root (with several roots,
    prefixed by the root as given); `text_base` turns them into paths from the current folder."""

    result: CheckResult = field(default_factory=CheckResult)
    everything: list[Finding] = field(default_factory=list)  # before the file restriction
    errors: list[ErrorRecord] = field(default_factory=list)
    warnings: list[ErrorRecord] = field(default_factory=list)  # told on stderr; no exit code
    rules: list[type[Rule]] = field(default_factory=list)  # the rules whose findings show
    discoveries: list[Discovery] = field(default_factory=list)
    baseline: Path | None = None  # reports.baseline.judge applied this file
    baselined: int = 0  # findings it hid
    stale: list[Any] = field(default_factory=list)  # reports.baseline.Entry the code no longer has
    text_base: Path = Path(".")

    def exit_code(self) -> int:
        if self.errors:
            return 2
        return 1 if self.result.findings or self.stale else 0


def _prefixed(finding: Finding, prefix: str) -> Finding:
    """With several PATHs, paths are given relative to the working folder."""
    if not prefix:
        return finding

    def fix(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (prefix + v if k == "path" and isinstance(v, str) else fix(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    return Finding(
        prefix + finding.path, finding.line, finding.rule, finding.message,
        finding.fingerprint, fix(finding.extra),
    )  # fmt: skip


def run_check(
    paths: Sequence[Path],
    config: Config,
    explicit_config: bool,
    chosen: list[type[Rule]],
    known: dict[str, type[Rule]],
    options: CheckOptions,
) -> CheckRun:
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise InputError(f"{missing[0]}: no such file or folder")
    run = CheckRun()
    cache = make_cache(options.cache_dir, enabled=options.use_cache)
    targets = plan_targets(paths, config, explicit_config)
    for target in targets:
        tree = read_directory(target.root, config.exclude)
        options.warn(tree.warnings)  # at once: an error in this root must not hide them
        base = target.root if target.root.is_dir() else target.root.parent
        prefix = "" if len(targets) == 1 else base.as_posix().rstrip("/") + "/"
        switches = f"round-tail={options.include_round_tail}"
        where = results_path(tree, cache, config, chosen, switches)
        # Results cached for this exact file set (and config) answer without loading the
        # program: the rounds discovered then, and the program's file errors, travel with them.
        cached = load_results(where)
        program = None
        if cached is None or options.report_unused_ignores:
            program = load_program(tree, cache)
        del tree  # the files' bytes (35 MiB on sglang): the rules read sources from disk
        if cached is not None:
            part, program_errors, found = cached.check, cached.errors, cached.discovery
            warnings = cached.warnings
        else:
            assert program is not None
            # On by default: a warm check after an edit on sglang equalled --no-cache byte for
            # byte at caa81b9 and again at a4cd4c7 (benchmarks/README, seventh session).
            with frozen() as release:  # the loaded model, out of the collector's scans
                keep = os.environ.get(KEEP_SUMMARIES) != "0"
                kept = KeyedStore(kept_path(cache)) if keep else None
                context = RuleContext(
                    program,
                    config,
                    {"include_round_tail": options.include_round_tail},
                    read_source=lambda rel, root=base: (root / rel).read_text("utf-8"),
                    kept=kept,
                )
                origin = config.source.as_posix() if config.source else target.root.as_posix()
                found = require_rounds(
                    program,
                    config.rounds,
                    lambda c=context: c.discovery,
                    origin,
                    lambda c=context: c.reach,
                )
                part = run_rules(program, config, chosen, context=context, between=release)
                warnings = context.round_warnings()
                if kept is not None:
                    kept.close()
            program_errors = program.errors
            if not part.failures:  # a rule that raised is retried next run, not remembered
                store_results(where, Results(part, None, program_errors, found, warnings))
        warnings = [ErrorRecord(prefix + w.path, w.message) for w in warnings]
        options.warn(warnings)
        run.warnings += warnings
        if found is not None:
            run.discoveries.append(found)
        if program is not None and options.report_unused_ignores:
            ran = [rule.name for rule in chosen]
            part.findings = sorted([*part.findings, *unused_ignores(program, part, ran, known)])
        run.text_base = base if len(targets) == 1 else Path(".")
        run.everything += [_prefixed(f, prefix) for f in part.findings]
        shown = target.restrict(part.findings, key=touched_paths)
        run.result.findings += [_prefixed(f, prefix) for f in shown]
        run.result.suppressed += [
            Suppressed(_prefixed(s.finding, prefix), prefix + s.path, s.line, s.reason)
            for s in target.restrict(part.suppressed, key=lambda s: touched_paths(s.finding))
        ]
        run.errors += [
            ErrorRecord(prefix + e.path, e.message)
            for e in target.restrict(program_errors, key=lambda e: {e.path})
        ]
        run.errors += [ErrorRecord(prefix + e.path, e.message) for e in part.failures]
    run.result.findings.sort()
    run.everything.sort()
    run.errors.sort()
    run.rules = [*chosen, UnusedIgnore] if options.report_unused_ignores else list(chosen)
    return run
