"""The inventory audits end to end: a repository at a pin -> relocations, warnings, censuses.

The tree is read from git objects (no checkout: bare repositories and dirty work trees are
fine), parsed once through the shared summary cache, and the whole-program model is built only
when reachability is asked for (a census does not need it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankguard.adapters.sources import SourceTree, open_repository, read_revision, resolve_revision
from rankguard.analysis.inventory.census import LogStats, Tally, check_logs, scan_log
from rankguard.analysis.inventory.relocate import Relocation, attach_reachability, relocate_rows
from rankguard.analysis.inventory.sites import EmitSite, collect_sites
from rankguard.analysis.inventory.table import Inventory
from rankguard.analysis.inventory.templates import line_matchers
from rankguard.analysis.reach import match_rounds, reach_from
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.load import paused_gc, program_from_summaries
from rankguard.pipelines.inventory_pins import pin_warnings, warning
from rankguard.rules.session import AnalysisSession
from rankguard.summary import emissions as _emissions  # noqa: F401  (registers the extractor)
from rankguard.summary.ir import FileSummary
from rankguard.summary.parse import SummaryCache, parse_all


@dataclass
class Pinned:
    """A repository at the target pin, summarised."""

    repo: Any  # git.Repo
    commit: Any  # git.Commit
    tree: SourceTree
    summaries: dict[str, FileSummary]
    errors: list[ErrorRecord]
    emitting: list[EmitSite]
    others: list[EmitSite]
    cache: SummaryCache


def load_pinned(repo_path: Path, pin: str, config: Config, cache: SummaryCache) -> Pinned:
    repo = open_repository(repo_path)
    commit = resolve_revision(repo, pin)
    tree = read_revision(repo_path, commit.hexsha, exclude=config.exclude)
    with paused_gc():
        summaries, errors = parse_all(tree.files, cache)
    emitting, others = collect_sites(tree.files, summaries, config.emitters)
    return Pinned(
        repo, commit, tree, summaries, sorted({*tree.errors, *errors}), emitting, others, cache
    )


@dataclass
class Outcome:
    pin: str
    relocations: list[Relocation]
    warnings: list[dict[str, Any]]
    errors: list[ErrorRecord]
    logs: list[LogStats] = field(default_factory=list)
    tallies: list[Tally] = field(default_factory=list)


def relocate(
    inventory: Inventory,
    pinned: Pinned,
    config: Config,
    rounds: Sequence[str] | None,
    across_fields: bool = False,
    reach: bool = True,
) -> Outcome:
    rels = relocate_rows(
        inventory.rows, pinned.emitting, pinned.others, pinned.tree.files, across_fields
    )
    cited = [site.path for row in inventory.rows for site in row.sites]
    warnings = pin_warnings(pinned.repo, inventory.pin, pinned.commit, cited)
    warnings += [
        warning("module-name-clash", f"{clash.path}: {clash.message}", path=clash.path)
        for clash in pinned.tree.warnings
    ]
    errors = sorted({*inventory.errors, *pinned.errors})
    if reach and any(rel.sites for rel in rels):
        chains, model_errors = _reach(pinned, config, rounds or config.rounds)
        errors = sorted({*errors, *model_errors})
        if chains is None:
            warnings.append(
                warning("no-round", "no round function matches: reachability not computed")
            )
        else:
            attach_reachability(rels, chains)
    return Outcome(pinned.commit.hexsha, rels, warnings, errors)


def _reach(pinned: Pinned, config: Config, patterns: Sequence[str]):
    """Chains from the rounds to every reachable function, or None when no round matches."""
    parse_errors = [e for e in pinned.errors if e not in pinned.tree.errors]
    program = program_from_summaries(pinned.tree, pinned.summaries, parse_errors, pinned.cache)
    configured = bool(patterns)
    if not patterns:  # none configured: the rounds `check` would discover
        patterns = AnalysisSession(program, config).discovery.patterns
    rounds = match_rounds(program, patterns, configured) if patterns else []
    if not rounds:
        return None, program.errors
    return reach_from(program, [r.qualname for r in rounds]), program.errors


def tallies_for(rels: Sequence[Relocation], across_fields: bool = False) -> list[Tally]:
    """One tally per row: its literal as the bare needle, its sites' templates as matchers."""
    out: list[Tally] = []
    for rel in rels:
        literal = rel.row.literal
        needle = literal.encode("utf-8")
        matchers = sorted(
            {m for site in rel.sites for m in line_matchers(site.parts, literal, across_fields)},
            key=lambda m: (m.pieces, m.starts_with_field, m.ends_with_field, m.anchored),
        )
        inline = [m for m in matchers if any(needle in piece for piece in m.pieces)]
        separate = [m for m in matchers if m not in inline]
        out.append(Tally(needle, inline, separate))
    return out


def census(outcome: Outcome, logs: Sequence[Path], across_fields: bool = False) -> Outcome:
    """Count every row in every log, each log read once, in the order given."""
    check_logs(logs)
    outcome.tallies = tallies_for(outcome.relocations, across_fields)
    for log in logs:
        outcome.logs.append(scan_log(log, outcome.tallies, str(log)))
    return outcome
