"""Parsing never loses a file quietly, and the cache is keyed by content and config."""

from __future__ import annotations

from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.model.load import make_cache
from rankguard.summary.parse import SummaryCache, parse_all
from rankguard.summary.share import Table
from tests.conftest import write_tree


def _parse(root: Path, cache: SummaryCache):
    return parse_all(read_directory(root).files, cache)


def test_bad_files_become_errors_and_the_rest_is_read(tmp_path: Path):
    write_tree(tmp_path, {"good.py": "def f():\n    pass\n", "bad.py": "def f(:\n"})
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "deep.py").write_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    summaries, errors = _parse(tmp_path, SummaryCache(None))
    assert sorted(summaries) == ["good.py"]
    reasons = {e.path: e.message for e in errors}
    assert reasons["bad.py"].startswith("syntax error at line 1")
    assert reasons["latin.py"] == "not valid UTF-8: byte 0xe9 at offset 5"
    assert "nested" in reasons["deep.py"]


def test_a_coding_cookie_is_honoured(tmp_path: Path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    summaries, errors = _parse(tmp_path, SummaryCache(None))
    assert list(summaries) == ["latin.py"] and errors == []


def test_cache_hits_and_invalidation_by_content_never_by_config(tmp_path: Path):
    src = tmp_path / "src"
    write_tree(src, {"a.py": "def f():\n    pass\n", "b.py": "def g():\n    pass\n"})
    store = tmp_path / "cache"
    first = SummaryCache(store)
    _parse(src, first)
    assert (first.hits, first.misses) == (0, 2)

    again = SummaryCache(store)
    _parse(src, again)
    assert (again.hits, again.misses) == (2, 0)

    (src / "a.py").write_text("def f():\n    return 1\n")
    edited = SummaryCache(store)
    _parse(src, edited)
    assert (edited.hits, edited.misses) == (1, 1)

    # Summaries do not depend on config: a run with other settings reads them all back.
    other_config = make_cache(store)
    _parse(src, other_config)
    assert (other_config.hits, other_config.misses) == (2, 0)


def test_a_corrupt_cache_entry_is_ignored_and_rebuilt(tmp_path: Path):
    src = tmp_path / "src"
    write_tree(src, {"a.py": "def f():\n    pass\n"})
    store = tmp_path / "cache"
    _parse(src, SummaryCache(store))
    [entry] = list(store.rglob("*.pickle"))
    entry.write_bytes(entry.read_bytes()[:10])  # truncated
    cache = SummaryCache(store)
    summaries, errors = _parse(src, cache)
    assert list(summaries) == ["a.py"] and errors == [] and cache.misses == 1
    assert SummaryCache(store).get(read_directory(src).files[0].blob, Table()) is not None


def test_warm_rule_results_follow_a_config_change(tmp_path: Path):
    """Summaries are shared across configs, so the rules' cached results must carry the config:
    declaring the blocking call non-blocking removes its finding on a warm cache too."""
    import contextlib
    import io
    import json

    from rankguard.cli import main

    src = tmp_path / "src"
    write_tree(
        src,
        {
            "loop.py": "import time\nimport torch.distributed as dist\n\n"
            "def event_loop():\n    while True:\n        time.sleep(1)\n        dist.barrier()\n"
        },
    )
    rounds = 'rounds = ["*.event_loop"]\n'
    counts = []
    for extra in ("", 'non-blocking = ["time.sleep"]\n'):
        (tmp_path / "rankguard.toml").write_text(rounds + extra)
        out = io.StringIO()
        argv = ["check", str(src), "--config", str(tmp_path / "rankguard.toml")]
        with contextlib.redirect_stdout(out):
            main([*argv, "--format", "json", "--cache-dir", str(tmp_path / "cache")])
        counts.append(len(json.loads(out.getvalue())["findings"]))
    assert counts == [1, 0]
