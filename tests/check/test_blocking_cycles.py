"""Summaries of functions on a cycle of calls (`analysis.blocking`): one that was cut short at a
function still being summarised is reused only where walking it again would give the same
answer, so a cycle entered through many call sites is walked once per way in, not once per path
(sglang's hybrid attention backends, which delegate to each other, were summarised 2,058 times
each per run)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rankguard.adapters import store
from rankguard.adapters.sources import read_directory
from rankguard.model import load_program
from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from rankguard.rules.session import AnalysisSession
from tests.check.helpers import HEAD, check_files, config_of

# a -> b (three call sites) -> c -> a: every path through the cycle asks for c's summary under
# the same stack and the same facts. The round enters `a` quietly (its sleep infeasible), so the
# sleep is reached only through the round's own call of `b`, which walks into `a`.
CYCLE = """
def a(n, quiet=False):
    if not quiet:
        time.sleep(1)
    b(n)

def b(n):
    c(n)
    c(n)
    c(n)

def c(n):
    gc.collect()
    a(n)

def event_loop(n):
    while True:
        a(n, True)
        dist.barrier()
        b(n)
        dist.all_reduce(None)
"""


def _summarised(tmp_path: Path) -> tuple[dict[str, int], dict[int, set[str]]]:
    store.COUNTS.clear()
    code = HEAD + textwrap.dedent(CYCLE)
    result = check_files(tmp_path, {"mod.py": code}, [BlockingBeforeCollective])
    prefix = "blocking summary computed: mod."
    counts = {k[len(prefix) :]: v for k, v in store.COUNTS.items() if k.startswith(prefix)}
    paired: dict[int, set[str]] = {}
    for finding in result.findings:
        paired.setdefault(finding.line, set()).add(finding.extra["collective"]["callee"])
    return counts, paired


def test_a_cycle_member_cut_the_same_way_is_summarised_once(tmp_path: Path):
    counts, _ = _summarised(tmp_path)
    # `c` once under the stack (round, a, b), cut at `a`; then `b`, `c` and `a` again once
    # the round calls `b` itself: `a` is off the stack there, a different answer, walked
    # again (cut at `b`), once. Was a 4, b 2, c 6: each of `b`'s calls of `c` walked it.
    assert counts == {"a": 2, "b": 2, "c": 2}


def test_a_summary_cut_at_a_function_is_not_reused_where_that_function_is_off_the_stack(
    tmp_path: Path,
):
    """`b` summarised inside the quiet `a` is cut at `a`; the round's own call of `b` walks
    into `a` (not quiet there), so the sleep waits for the all-reduce."""
    _, paired = _summarised(tmp_path)
    lines = (HEAD + textwrap.dedent(CYCLE)).splitlines()
    sleep = lines.index("        time.sleep(1)") + 1
    collect = lines.index("    gc.collect()") + 1
    barrier, all_reduce = "torch.distributed.barrier", "torch.distributed.all_reduce"
    assert paired == {sleep: {all_reduce}, collect: {barrier}}


# The round enters the cycle a -> b -> c -> a three ways: quietly at `a`, at `c` (which walks
# `a` not quiet: the sleep), and quietly at `a` again under another fact (`tag`). Each entry
# walks the cycle afresh: the third does not take `c` as the second left it memoised (that
# answer depended on which entry ran first), so it is the first's, cut at `a`, and `ORDERS`
# gives the same pairs whichever way round the entries come.
MEMOISED_SINCE = """
def a(n, quiet=False, tag=None):
    if not quiet:
        time.sleep(1)
    b(n)

def b(n):
    c(n)

def c(n):
    gc.collect()
    a(n)

def event_loop(n):
    while True:
        a(n, True)
        dist.barrier()
        c(n)
        dist.all_reduce(None)
        a(n, True, 1)
        dist.broadcast(None, 0)
"""
ORDERS = [
    MEMOISED_SINCE,
    MEMOISED_SINCE.replace(
        "        c(n)\n        dist.all_reduce(None)\n        a(n, True, 1)\n",
        "        a(n, True, 1)\n        dist.all_reduce(None)\n        c(n)\n",
    ),
]


def _pairs(tmp_path: Path, source: str) -> set[tuple[int, str]]:
    code = HEAD + textwrap.dedent(source)
    (tmp_path / "mod.py").write_text(code)
    config = config_of({"rounds": ["*.event_loop"]})
    session = AnalysisSession(load_program(read_directory(tmp_path, config.exclude)), config)
    (rnd,) = session.rounds
    lines = code.splitlines()
    named = {
        lines.index("        time.sleep(1)") + 1: "sleep",
        lines.index("    gc.collect()") + 1: "collect",
    }
    return {
        (named[p.blocking.line], p.site.callee.rsplit(".", 1)[1])
        for p in session.blocking.regions(rnd).pairs
    }


def test_each_entry_into_a_cycle_walks_it_afresh(tmp_path: Path):
    """The sleep waits for the all-reduce through `c`'s own entry; the quiet entries cut the
    recursion at `a`, so they pair only the collect (the walk does not follow `a` into itself
    under other facts: a known limit, now the same whatever ran before)."""
    assert _pairs(tmp_path, MEMOISED_SINCE) == {
        ("sleep", "all_reduce"),
        ("collect", "barrier"),
        ("collect", "all_reduce"),
        ("collect", "broadcast"),
    }


def test_the_pairs_do_not_depend_on_the_order_of_the_entries(tmp_path: Path):
    """The quiet entry tagged `1` pairs what it runs with the collective after it, whether
    `c`'s entry ran before it (first order: the broadcast) or not (second: the all-reduce).
    It paired the sleep too when `c`'s memoised summary answered inside it."""
    first, second = (_pairs(tmp_path, source) for source in ORDERS)
    assert {p for p in first if p[1] == "broadcast"} == {("collect", "broadcast")}
    assert {p for p in second if p[1] == "all_reduce"} == {("collect", "all_reduce")}
