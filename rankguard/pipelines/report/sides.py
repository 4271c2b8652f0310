"""One side of a report: a revision read from git objects, modelled and checked.

Both sides share one summary cache (content-addressed by blob id), so the head pays only for
the blobs the change touched; with the disk cache off an in-memory layer still shares them.
They share the resolution too (`Shared`): the head re-resolves only the modules whose content
changed, when no interface did; and the per-function summaries analyses keep (`kept`), so the
head re-walks only the functions whose keys the change moved. A side keeps what the report's
sections read of its program (its errors, its functions' local names, its summaries), not the
program: the base's model and analyses are gone before the head's are built, so a report holds
one program at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.adapters.sources import SourceTree, open_repository, read_revision, resolve_revision
from rankguard.analysis.discovery import Discovery, require_rounds
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.load import Shared, load_program
from rankguard.pipelines.collector import frozen
from rankguard.pipelines.report.findings import local_names
from rankguard.pipelines.report.staleness import RowSource
from rankguard.pipelines.results_cache import Results, load_results, results_path, store_results
from rankguard.rules.base import Rule, RuleContext
from rankguard.rules.engine import CheckResult, run_rules
from rankguard.summary.ir import FileSummary
from rankguard.summary.parse import SummaryCache


@dataclass
class Side:
    label: str  # "base" or "head"
    rev: str  # as the user wrote it
    commit: str  # full hexsha
    tree: SourceTree
    result: CheckResult
    errors: list[ErrorRecord]  # the program's: files unread, unparsed, or a module read twice
    local_names: dict[str, str]  # `findings.local_names` of the program
    summaries: dict[str, FileSummary]  # by path, of the modules the program holds
    staleness: list[dict[str, Any]] | None = None  # None: the audit is not available
    discovery: Discovery | None = None  # the rounds discovered, when none are configured

    @property
    def data(self) -> dict[str, bytes]:
        return {f.path: f.data for f in self.tree.files}

    def to_json(self) -> dict[str, Any]:
        return {"rev": self.rev, "commit": self.commit, "files": len(self.tree.files)}


def commit_of(repo_path: Path, rev: str) -> Any:  # -> git.Commit
    """The commit `rev` names (an InputError naming the ref when it does not resolve)."""
    return resolve_revision(open_repository(repo_path), rev)


def load_side(
    label: str,
    repo_path: Path,
    rev: str,
    subdir: str,
    config: Config,
    cache: SummaryCache,
    rules: Sequence[type[Rule]],
    staleness_source: RowSource | None = None,
    shared: Shared | None = None,
    kept: KeyedStore | None = None,
) -> Side:
    """Read `rev` (below `subdir`), build its program and run every chosen rule on it (or
    take the results from the cache when this exact file set was analysed before).

    Each side's rounds are its own: configured patterns, else discovered from that revision's
    code (a loop the head adds is a round the head adds). The head must have rounds: a
    pattern matching nothing there, or nothing discovered, is an input error. `shared`: the
    resolution both sides of one report share (`model.load.Shared`); `kept`: where the
    analyses of one side keep per-function summaries for the other (`adapters.keyed`)."""
    commit = commit_of(repo_path, rev)
    tree = read_revision(repo_path, commit.hexsha, subdir, config.exclude)
    program = load_program(tree, cache, shared)
    data = {f.path: f.data for f in tree.files}
    context = RuleContext(
        program, config, read_source=lambda rel: data[rel].decode("utf-8", "replace"), kept=kept
    )
    discovery = None
    if label == "head":  # announced, and checked: the head must have rounds
        origin = f"{rev}:{subdir or '.'}" if not config.source else str(config.source)
        discovery = require_rounds(
            program, config.rounds, lambda: context.discovery, origin, lambda: context.reach
        )
    where = results_path(tree, cache, config, rules)
    results = load_results(where)
    if results is None or (staleness_source is not None and results.staleness is None):
        with frozen() as release:  # the loaded model, out of the collector's scans; thawed after
            check = run_rules(program, config, rules, context=context, between=release)
            rows = staleness_source(context) if staleness_source is not None else None
        results = Results(check, rows, program.errors)
        if not check.failures:  # a rule that raised is retried next run, not remembered
            store_results(where, results)
    rows = results.staleness if staleness_source is not None else None
    summaries = {m.path: m.summary for m in program.modules.values()}
    names = local_names(program)
    return Side(
        label, rev, commit.hexsha, tree, results.check, program.errors, names, summaries,
        rows, discovery,
    )  # fmt: skip
