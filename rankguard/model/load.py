"""From a PATH or a revision to a `Program`, through three caches.

The build phase is cached apart from the checks (import-linter's shape): per-file summaries by
content; the whole program's resolution by the exact set of (path, module, blob) it was
computed from; and each module's own resolution by its content and the *interfaces* of all
modules (`summary.interface`). An unchanged tree pays only for reading files and loading
summaries; a body edit that changes no interface re-resolves the edited functions alone (plus
the cheap whole-program passes); an interface change re-resolves everything.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
from collections.abc import Iterator
from pathlib import Path

from rankguard.adapters import store
from rankguard.adapters.sources import SourceTree, read_directory
from rankguard.core import progress
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.core.stack import deep_recursion
from rankguard.model.build import ModulePart, build_program
from rankguard.model.program import Program
from rankguard.summary.interface import interface_of
from rankguard.summary.ir import FileSummary
from rankguard.summary.lineless import function_digests
from rankguard.summary.parse import SummaryCache, default_cache_dir, parse_all
from rankguard.summary.share import Table

# Resolutions one process shares between programs (a report's base and head), by interface key
# (`interface_key`): the module parts that key's resolution made, as kept on disk.
Shared = dict[str, dict]


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


def _resolution_path(cache: SummaryCache, key: str, kind: str = "programs") -> Path | None:
    if cache.directory is None:
        return None
    return cache.directory / kind / f"{key}.pickle"


def interface_key(tree: SourceTree, summaries: dict[str, FileSummary], cache: SummaryCache) -> str:
    """Identity of what every module's resolution may read of the others: the (path, module,
    interface) set under the cache's salt. Body edits that change no interface keep it."""
    digest = hashlib.sha256(cache.salt.encode())
    for src in sorted(tree.files, key=lambda f: f.path):
        summary = summaries.get(src.path)
        face = interface_of(summary) if summary is not None else "-"
        digest.update(f"{src.path}\0{src.module}\0{face}\n".encode())
    return digest.hexdigest()


def _reusable(tree: SourceTree, packed: dict | None) -> dict[str, ModulePart]:
    """The module parts of a resolution made under the same interfaces whose module content
    is unchanged (blob ids match)."""
    if not packed:
        return {}
    blobs, parts = packed["blobs"], packed["modules"]
    now = _module_blobs(tree)
    return {m: parts[m] for m, b in now.items() if m in parts and blobs.get(m) == b}


def _unchanged_functions(
    tree: SourceTree,
    summaries: dict[str, FileSummary],
    packed: dict | None,
    cache: SummaryCache,
) -> dict[str, ModulePart]:
    """For each edited module of a resolution made under the same interfaces, the part of
    its functions whose line-free record (and those of the functions enclosing them) did not
    change, when the module still defines the same functions (`summary.lineless`). Their
    calls resolve as they did, and their callbacks too (lines moved by as much as the
    function moved): what resolving a function reads beyond its own record is
    the interfaces (the key) and the module's names; a body edit in one method of a large
    module re-resolves that method, not the module (sglang's scheduler.py: 214 functions).
    The old summary comes from the summary cache by the blob the resolution was made from."""
    if not packed:
        return {}
    blobs, parts = packed["blobs"], packed["modules"]
    found: dict[str, ModulePart] = {}
    for src in tree.files:
        old = blobs.get(src.module)
        part = parts.get(src.module)
        new = summaries.get(src.path)
        if part is None or new is None or old is None or len(old) != 1 or old[0] == src.blob:
            continue
        before = cache.get(old[0], Table())
        if before is None or before.summary is None:
            continue
        was, now = function_digests(before.summary), function_digests(new)
        if was.keys() != now.keys():
            continue
        moved = _moves(before.summary, new)
        calls: dict[str, list] = {}
        callbacks: dict[str, list] = {}
        for qual, digest in now.items():
            if was[qual] != digest:
                continue
            name = _qualified(src.module, qual)
            calls[name] = part["calls"][name]
            by = moved[qual]  # a callback names the line of its reference: moved with it
            kept = part["callbacks"].get(name, ())
            callbacks[name] = [(target, line + by) for target, line in kept]
        found[src.module] = {"calls": calls, "callbacks": callbacks}
    return found


def _moves(before: FileSummary, now: FileSummary) -> dict[str, int]:
    """How far each function's first line moved."""
    was = {info.qualname: info.line for info in before.functions}
    return {info.qualname: info.line - was.get(info.qualname, info.line) for info in now.functions}


def _qualified(module: str, qualname: str) -> str:
    return f"{module}.{qualname}" if qualname else module


def _module_blobs(tree: SourceTree) -> dict[str, tuple[str, ...]]:
    """Every file's blob by module name (a stub and its module share one)."""
    found: dict[str, list[str]] = {}
    for src in tree.files:
        found.setdefault(src.module, []).append(src.blob)
    return {module: tuple(sorted(blobs)) for module, blobs in found.items()}


def load_program(
    tree: SourceTree, cache: SummaryCache | None = None, shared: Shared | None = None
) -> Program:
    cache = cache or SummaryCache(None)
    with paused_gc():
        summaries, errors = parse_all(tree.files, cache)
        return program_from_summaries(tree, summaries, errors, cache, shared)


def program_from_summaries(
    tree: SourceTree,
    summaries: dict[str, FileSummary],
    errors: list[ErrorRecord],
    cache: SummaryCache,
    shared: Shared | None = None,
) -> Program:
    """The program over summaries a caller already holds (one parse serves both), with its
    resolution from the cache when this exact file set was resolved before. With `shared`,
    module parts made under the same interfaces are taken from (and given to) the other
    programs of this process, with or without the disk cache."""
    # Resolution asks lazily and recursively (a return type asks the returns it is made of):
    # which question comes first decides how deep one goes, so it gets the rules' stack room.
    with paused_gc(), deep_recursion():
        progress.current().phase("resolve", len(summaries), "modules")
        where = _resolution_path(cache, program_key(tree, cache))
        cached = store.load(where, dict)
        errors = [*tree.errors, *errors]
        faces = interface_key(tree, summaries, cache)
        if cached is not None:
            try:
                program = build_program(tree, summaries, errors, resolution=cached)[0]
                program.interfaces = faces
                return program
            except (KeyError, ValueError):  # a resolution that does not fit: rebuild it
                pass
        by_interface = _resolution_path(cache, faces, "modules")
        known = shared.get(faces) if shared is not None else None
        packed = known if known is not None else store.load(by_interface, dict)
        reuse = _reusable(tree, packed)
        unchanged = _unchanged_functions(tree, summaries, packed, cache)
        try:
            program, resolution = build_program(tree, summaries, errors, reuse, unchanged)
        except (KeyError, ValueError):  # a part that does not fit: resolve everything
            reuse = {}
            program, resolution = build_program(tree, summaries, errors)
        program.interfaces = faces
        store.COUNTS["modules resolved"] += len(program.modules) - len(reuse)
        store.store(where, resolution)
        packed = {"blobs": _module_blobs(tree), "modules": resolution["modules"]}
        store.store(by_interface, packed)
        if shared is not None:
            shared[faces] = packed
    return program


def load_path(path: Path, config: Config, cache: SummaryCache | None = None) -> Program:
    return load_program(read_directory(path, config.exclude), cache)
