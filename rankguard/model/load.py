"""From a PATH or a revision to a `Program`, through two caches.

The build phase is cached apart from the checks (import-linter's shape): per-file summaries by
content, and the whole program's resolution by the exact set of (path, module, blob) it was
computed from. An unchanged tree therefore pays only for reading files and loading summaries;
a changed file pays for its own parse and one resolution pass.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
from collections.abc import Iterator
from pathlib import Path

from rankguard.adapters import store
from rankguard.adapters.sources import SourceTree, read_directory
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.build import build_program
from rankguard.model.program import Program
from rankguard.summary.ir import FileSummary
from rankguard.summary.parse import SummaryCache, default_cache_dir, parse_all


def make_cache(cache_dir: Path | None = None, enabled: bool = True) -> SummaryCache:
    return SummaryCache((cache_dir or default_cache_dir()) if enabled else None)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Loading and resolving allocate millions of small acyclic objects; the cyclic collector
    re-scans them over and over (measured: 4.9 s of 6 s loading sglang's summaries) for
    nothing, so it waits until the model is built."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def program_key(tree: SourceTree, cache: SummaryCache) -> str:
    """Identity of a program: its exact (path, module, blob) set under the cache's salt."""
    digest = hashlib.sha256(cache.salt.encode())
    for src in sorted(tree.files, key=lambda f: f.path):
        digest.update(f"{src.path}\0{src.module}\0{src.blob}\n".encode())
    return digest.hexdigest()


def _resolution_path(cache: SummaryCache, key: str) -> Path | None:
    if cache.directory is None:
        return None
    return cache.directory / "programs" / f"{key}.pickle"


def load_program(tree: SourceTree, config: Config, cache: SummaryCache | None = None) -> Program:
    cache = cache or SummaryCache(None)
    with paused_gc():
        summaries, errors = parse_all(tree.files, cache)
        return program_from_summaries(tree, summaries, errors, cache)


def program_from_summaries(
    tree: SourceTree,
    summaries: dict[str, FileSummary],
    errors: list[ErrorRecord],
    cache: SummaryCache,
) -> Program:
    """The program over summaries a caller already holds (one parse serves both), with its
    resolution from the cache when this exact file set was resolved before."""
    with paused_gc():
        where = _resolution_path(cache, program_key(tree, cache))
        cached = store.load(where, dict)
        try:
            program, resolution = build_program(tree, summaries, [*tree.errors, *errors], cached)
        except (KeyError, ValueError):  # a resolution that does not fit: rebuild it
            cached = None
            program, resolution = build_program(tree, summaries, [*tree.errors, *errors])
        if cached is None:
            store.store(where, resolution)
    return program


def load_path(path: Path, config: Config, cache: SummaryCache | None = None) -> Program:
    return load_program(read_directory(path, config.exclude), config, cache)
