"""A cache of rule results (findings, and staleness rows for reports) by everything they
depend on.

Results are a pure function of the exact file set (the program key the resolution cache
already uses), the configuration, the chosen rules, the run's options and the code that
computes them. With that key, `rankguard check` on an unchanged tree and a report whose base was
analysed before pay only for loading; the program's file errors travel with the findings, so a
check answered from here loads no summary and no resolution at all.

The code part of the key hashes every file of the rankguard package and the source file of
every chosen rule (plugins included), so editing an analysis invalidates its cached results.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from rankguard.adapters import store
from rankguard.adapters.sources import SourceTree
from rankguard.analysis.discovery import Discovery
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.load import program_key
from rankguard.rules.base import Rule
from rankguard.rules.engine import CheckResult
from rankguard.summary.parse import SummaryCache

PACKAGE = Path(__file__).resolve().parents[1]


@dataclass
class Results:
    check: CheckResult
    staleness: list[dict[str, Any]] | None
    errors: list[ErrorRecord] = field(default_factory=list)  # the program's, as `check` shows
    discovery: Discovery | None = None  # the rounds discovered (none configured), to announce
    warnings: list[ErrorRecord] = field(default_factory=list)  # rounds reaching no collective


@cache
def package_digest() -> str:
    digest = hashlib.sha1()
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in (".py", ".toml", ".txt") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _rule_sources(rules: Sequence[type[Rule]]) -> list[str]:
    out: list[str] = []
    for rule in sorted(rules, key=lambda r: r.name):
        try:
            source = inspect.getsourcefile(rule)
            data = Path(source).read_bytes() if source else b""
        except (OSError, TypeError):
            data = b""
        out.append(f"{rule.name}:{rule.__module__}:{hashlib.sha1(data).hexdigest()}")
    return out


def results_path(
    tree: SourceTree,
    summaries: SummaryCache,
    config: Config,
    rules: Sequence[type[Rule]],
    options: str = "",
) -> Path | None:
    """Where these results are kept (None: the cache is off); `options` names every switch
    that changes what the rules report (e.g. `--include-round-tail`)."""
    if summaries.directory is None:
        return None
    digest = hashlib.sha256(program_key(tree, summaries).encode())
    digest.update(package_digest().encode())
    digest.update(config.digest().encode())  # rules read config; summaries do not
    for line in _rule_sources(rules):
        digest.update(line.encode() + b"\n")
    digest.update(options.encode())
    return summaries.directory / "results" / f"{digest.hexdigest()}.pickle"


def kept_path(summaries: SummaryCache) -> Path | None:
    """Where analyses keep per-function summaries (`adapters.keyed`): one file per version of
    this code, since a summary depends on the code that made it (the configuration is part of
    each analysis's own keys)."""
    if summaries.directory is None:
        return None
    digest = hashlib.sha256(f"{summaries.salt}\0{package_digest()}".encode()).hexdigest()
    return summaries.directory / "analyses" / f"{digest[:32]}.sqlite"


def load_results(path: Path | None) -> Results | None:
    return store.load(path, Results)


def store_results(path: Path | None, results: Results) -> None:
    store.store(path, results)
