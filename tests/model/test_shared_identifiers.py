"""Loaded summaries share their identifiers and references: equal ones are one object.

A cached summary is a pickle, and a pickle only shares what was one object when it was
written; the extractor makes a fresh tuple for every reference it meets, so without sharing
every `self.tp_group.all_reduce` of a file (and of every file) is its own tuple of its own
strings, and a large program's loaded summaries are mostly copies (`benchmarks/README`, where
`check`'s memory is). These tests hold the sharing, cold (parsed now) and warm (read back from
the disk cache), within a file and across files, and that sharing never merges values that are
equal but of different types (`1`, `True`, `1.0`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.summary.extract import summarize
from rankguard.summary.ir import CallSite, FileSummary, Stmt, walk_calls, walk_statements
from rankguard.summary.parse import SummaryCache, keep_digests, parse_all
from tests.conftest import write_tree

SOURCE = """
class Worker:
    def first(self, x):
        self.tp_group.all_reduce(x)

    def second(self, y):
        self.tp_group.all_reduce(y)
"""


def _calls(summary: FileSummary, name: str) -> list[CallSite]:
    return [
        call
        for function in summary.functions
        for call in walk_calls(function.body)
        if call.target and call.target[-1] == name
    ]


def _summaries(tmp_path: Path, files: dict[str, str], warm: bool) -> dict[str, FileSummary]:
    write_tree(tmp_path / "src", files)
    tree = read_directory(tmp_path / "src")
    cache_dir = tmp_path / "cache"
    summaries, errors = parse_all(tree.files, SummaryCache(cache_dir), jobs=1)
    assert errors == []
    if warm:  # a new run: everything read back from disk
        fresh = SummaryCache(cache_dir)
        summaries, _ = parse_all(tree.files, fresh, jobs=1)
        assert fresh.hits == len(files)
    return summaries


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_equal_references_in_one_file_are_one_object(tmp_path: Path, warm: bool):
    summary = _summaries(tmp_path, {"m.py": SOURCE}, warm)["m.py"]
    first, second = _calls(summary, "all_reduce")
    assert first.target == ("self", "tp_group", "all_reduce")
    assert first.target is second.target
    assert first.operands[0].reads != second.operands[0].reads  # x and y stay apart


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_equal_references_across_files_are_one_object(tmp_path: Path, warm: bool):
    summaries = _summaries(tmp_path, {"a.py": SOURCE, "b.py": SOURCE.replace("x", "z")}, warm)
    (in_a, second_a), (in_b, second_b) = (_calls(summaries[f], "all_reduce") for f in summaries)
    assert in_a.target is in_b.target
    assert second_a.operands[0].ref == ("y",)
    assert second_a.operands[0].ref is second_b.operands[0].ref


def test_sharing_keeps_equal_values_of_other_types_apart(tmp_path: Path):
    """`1 == True == 1.0` in Python, and so are tuples holding them: a table keyed by value
    alone would hand `x == True` the tree of `x == 1`, and `g(1.0)` the literals of `g(1)`."""
    source = """
    def f(x):
        if x == 1:
            g(1)
        if x == True:
            g(True)
        if x == 1.0:
            g(1.0)
        if x == 0:
            g(False)
    """
    expected = [("int", "1"), ("bool", "True"), ("float", "1.0"), ("int", "0")]
    for warm in (False, True):
        summary = _summaries(tmp_path / str(warm), {"m.py": source}, warm)["m.py"]
        (f,) = [function for function in summary.functions if function.name == "f"]
        tests = [s.cond for s in walk_statements(f.body) if s.kind == "if"]
        compared = [cond[2][1][1] for cond in tests]  # ("cmp", ops, (x, ("const", v)))
        assert [(type(v).__name__, repr(v)) for v in compared] == expected
        passed = [call.literals[0][1] for call in walk_calls(f.body)]  # (("0", v),)
        assert [(type(v).__name__, repr(v)) for v in passed] == [*expected[:3], ("bool", "False")]


def test_shared_summaries_are_equal_to_fresh_ones(tmp_path: Path):
    """Sharing changes which objects hold a value, never the value."""
    source = (Path(__file__).resolve().parents[2] / "rankguard/summary/extract.py").read_text()
    loaded = _summaries(tmp_path, {"m.py": source}, warm=True)["m.py"]
    fresh = summarize(source, ast.parse(source))
    keep_digests(fresh)  # kept with the summary, as parsing does
    assert loaded.functions == fresh.functions
    assert loaded.classes == fresh.classes
    assert loaded.imports == fresh.imports
    assert loaded.facts.keys() == fresh.facts.keys()
    for name in fresh.facts:
        assert loaded.facts[name] == fresh.facts[name], name
    assert isinstance(loaded.functions[0].body[0], Stmt)
