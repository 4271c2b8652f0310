"""From a PATH or a revision to a `Program`, through the parse cache."""

from __future__ import annotations

from pathlib import Path

from rankguard.adapters.sources import SourceTree, read_directory
from rankguard.config import Config
from rankguard.model.build import build_program
from rankguard.model.program import Program
from rankguard.summary.parse import SummaryCache, default_cache_dir, parse_all


def make_cache(config: Config, cache_dir: Path | None = None, enabled: bool = True) -> SummaryCache:
    return SummaryCache((cache_dir or default_cache_dir()) if enabled else None, config.digest())


def load_program(tree: SourceTree, config: Config, cache: SummaryCache | None = None) -> Program:
    cache = cache or SummaryCache(None, config.digest())
    summaries, errors = parse_all(tree.files, cache)
    return build_program(tree, summaries, [*tree.errors, *errors])


def load_path(path: Path, config: Config, cache: SummaryCache | None = None) -> Program:
    return load_program(read_directory(path, config.exclude), config, cache)
