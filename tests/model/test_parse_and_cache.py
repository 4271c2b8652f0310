"""Parsing never loses a file quietly, and the cache is keyed by content and config."""

from __future__ import annotations

from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.core.config import Config
from rankguard.summary.parse import SummaryCache, parse_all
from tests.conftest import write_tree


def _parse(root: Path, cache: SummaryCache):
    return parse_all(read_directory(root).files, cache)


def test_bad_files_become_errors_and_the_rest_is_read(tmp_path: Path):
    write_tree(tmp_path, {"good.py": "def f():\n    pass\n", "bad.py": "def f(:\n"})
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "deep.py").write_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    summaries, errors = _parse(tmp_path, SummaryCache(None, "t"))
    assert sorted(summaries) == ["good.py"]
    reasons = {e.path: e.message for e in errors}
    assert reasons["bad.py"].startswith("syntax error at line 1")
    assert reasons["latin.py"] == "not valid UTF-8: byte 0xe9 at offset 5"
    assert "nested" in reasons["deep.py"]


def test_a_coding_cookie_is_honoured(tmp_path: Path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    summaries, errors = _parse(tmp_path, SummaryCache(None, "t"))
    assert list(summaries) == ["latin.py"] and errors == []


def test_cache_hits_and_invalidation_by_content_and_config(tmp_path: Path):
    src = tmp_path / "src"
    write_tree(src, {"a.py": "def f():\n    pass\n", "b.py": "def g():\n    pass\n"})
    store = tmp_path / "cache"
    first = SummaryCache(store, Config().digest())
    _parse(src, first)
    assert (first.hits, first.misses) == (0, 2)

    again = SummaryCache(store, Config().digest())
    _parse(src, again)
    assert (again.hits, again.misses) == (2, 0)

    (src / "a.py").write_text("def f():\n    return 1\n")
    edited = SummaryCache(store, Config().digest())
    _parse(src, edited)
    assert (edited.hits, edited.misses) == (1, 1)

    other_config = SummaryCache(store, Config(rounds=("*.loop",)).digest())
    _parse(src, other_config)
    assert (other_config.hits, other_config.misses) == (0, 2)


def test_a_corrupt_cache_entry_is_ignored_and_rebuilt(tmp_path: Path):
    src = tmp_path / "src"
    write_tree(src, {"a.py": "def f():\n    pass\n"})
    store = tmp_path / "cache"
    _parse(src, SummaryCache(store, "d"))
    [entry] = list(store.rglob("*.pickle"))
    entry.write_bytes(entry.read_bytes()[:10])  # truncated
    cache = SummaryCache(store, "d")
    summaries, errors = _parse(src, cache)
    assert list(summaries) == ["a.py"] and errors == [] and cache.misses == 1
    assert SummaryCache(store, "d").get(read_directory(src).files[0].blob) is not None
