"""Turn source files into summaries: decode, parse, summarise, cache, in parallel.

One parse per file content: results (errors included) are cached on disk under the git blob id,
the code that summarises (never the config), so a PR's base and head share nearly every
entry and an unchanged tree costs only the reads. Entries are written atomically, so two runs
can share one cache; an entry that fails to load is treated as missing and rebuilt.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import tokenize
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rankguard import __version__
from rankguard.adapters import store
from rankguard.adapters.sources import SourceFile
from rankguard.adapters.store import write_atomic
from rankguard.core import progress
from rankguard.core.errors import ErrorRecord
from rankguard.summary.extract import summarize
from rankguard.summary.interface import interface_of
from rankguard.summary.ir import FileSummary
from rankguard.summary.lineless import function_digests
from rankguard.summary.share import Table, dumps, loads


def _code_fingerprint() -> str:
    """A hash of the code that produces summaries and resolutions: editing it (a new extractor,
    a resolver fix) invalidates what the old code cached, with no version to remember to bump."""
    digest = hashlib.sha1()
    package = Path(__file__).resolve().parent.parent
    for folder in ("summary", "model"):
        for path in sorted((package / folder).glob("*")):
            if path.suffix in (".py", ".txt"):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_fingerprint()
_PARALLEL_THRESHOLD = 24


def default_cache_dir() -> Path:
    env = os.environ.get("RANKGUARD_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rankguard"


@dataclass
class Parsed:
    """A file's summary, or the reason it has none."""

    summary: FileSummary | None
    error: str | None = None


def decode(data: bytes) -> str:
    """Source text, honouring a PEP 263 coding cookie; raises ValueError with the reason."""
    if b"\0" in data:
        raise ValueError("contains NUL bytes: not a Python source file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # Undecodable first lines land here too; decoding names the offending byte.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise ValueError(
                f"not valid UTF-8: byte 0x{data[bad.start]:02x} at offset {bad.start}"
            ) from bad
        raise ValueError(f"bad encoding declaration: {exc}") from exc
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"not valid {encoding.upper()}: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from exc
    except LookupError as exc:
        raise ValueError(f"unknown encoding '{encoding}'") from exc


def parse_bytes(data: bytes) -> Parsed:
    try:
        source = decode(data)
    except ValueError as exc:
        return Parsed(None, str(exc))
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return Parsed(None, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (RecursionError, MemoryError):
        return Parsed(None, "too deeply nested to parse")
    except ValueError as exc:
        return Parsed(None, f"cannot parse: {exc}")
    try:
        summary = summarize(source, tree)
        keep_digests(summary)
        return Parsed(summary)
    except RecursionError:
        return Parsed(None, "too deeply nested to summarise")


class SummaryCache:
    """Content-addressed store of `Parsed` results; `None` directory disables the disk.

    An in-memory layer keeps every result this cache has handed out by blob id, so the trees
    of one run (a report's base and head) share one summary object per identical file instead
    of a copy per side, whether or not the disk cache is on.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        # Summaries depend on the file's content and the code that summarises it, never on
        # config: changing `watchdog-hooks` must not re-parse the tree.
        self.salt = f"{__version__}-{CODE_VERSION}"
        self.hits = 0
        self.misses = 0
        self.memory: dict[str, Parsed] = {}

    def _path(self, blob: str) -> Path:
        assert self.directory is not None
        return self.directory / "summaries" / self.salt / blob[:2] / f"{blob}.pickle"

    def get(self, blob: str, table: Table) -> Parsed | None:
        """The result for `blob`, its values shared through `table` (`summary.share`)."""
        found = self.memory.get(blob)
        if found is None and self.directory is not None:
            found = store.load(self._path(blob), Parsed, partial(loads, table=table))
            if found is not None:
                self.memory[blob] = found
        return found

    def put(self, blob: str, payload: bytes, table: Table) -> Parsed:
        """Keep a freshly parsed result (pickled by the worker that parsed it)."""
        if self.directory is not None:
            write_atomic(self._path(blob), payload)
        parsed: Parsed = loads(payload, table)
        self.memory[blob] = parsed
        return parsed


def keep_digests(summary: FileSummary) -> None:
    """The digests computed once per file, by the worker that parses it, and kept with the
    summary: its interface (`summary.interface`) and its functions' line-free digests
    (`summary.lineless`)."""
    interface_of(summary)
    function_digests(summary)


def _parse_to_bytes(data: bytes) -> bytes:
    return dumps(parse_bytes(data))


def parse_all(
    files: Iterable[SourceFile], cache: SummaryCache, jobs: int | None = None
) -> tuple[dict[str, FileSummary], list[ErrorRecord]]:
    """Summaries by path, and an error record for every file that has none."""
    files = list(files)
    bar = progress.current()
    bar.phase("parse", len(files), "files")
    results: dict[str, Parsed] = {}
    missing: list[SourceFile] = []
    table = Table()  # one object per identifier and reference for all these files
    for src in files:
        cached = cache.get(src.blob, table)
        if cached is None:
            missing.append(src)
        else:
            results[src.path] = cached
            bar.advance()
    cache.hits += len(files) - len(missing)
    cache.misses += len(missing)
    jobs = jobs or os.cpu_count() or 1
    if len(missing) >= _PARALLEL_THRESHOLD and jobs > 1:
        # Largest files first so the pool's tail is short.
        missing.sort(key=lambda s: -len(s.data))
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            payloads = pool.map(_parse_to_bytes, (s.data for s in missing), chunksize=8)
            for src, payload in zip(missing, payloads, strict=True):
                results[src.path] = cache.put(src.blob, payload, table)
                bar.advance()
    else:
        for src in missing:
            payload = _parse_to_bytes(src.data)
            results[src.path] = cache.put(src.blob, payload, table)
            bar.advance()
    summaries = {path: r.summary for path, r in results.items() if r.summary is not None}
    errors = [ErrorRecord(path, r.error) for path, r in results.items() if r.error]
    return summaries, sorted(errors)
