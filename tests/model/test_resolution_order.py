"""The model answers the same whichever question is asked first.

What a function returns, an attribute's values, a function's locals and a module's names are
learned lazily and memoised, and a question may come back to itself (`make_a` returns what
`make_b` returns, which may return what `make_a` returns). A cold build asks in the order of
the functions' names; a warm run, which takes most of its resolution from the cache, asks only
what the edited module and the analyses need, in their own order. If an answer computed while
another was still open (its cycle guard answering "nothing yet") were memoised, later answers
would depend on which question came first, and a warm check would differ from `--no-cache`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rankguard.cli import main
from rankguard.model.resolve import Resolver
from tests.conftest import write_tree

MAKERS = """
import threading


class Holder:
    def __init__(self):
        self.lock = threading.Lock()

    def ping(self):
        pass


def make_a():
    return make_b()


def make_b(flag=False):
    if flag:
        return make_a()
    return Holder()
"""
# Resolved first in a cold build (names sort first): it asks what `make_b` returns first.
EARLY = """
from pkg.makers import make_b


def early():
    x = make_b()
    x.ping()
"""
LOOP = """
import torch.distributed as dist

from pkg.makers import make_a


class S:
    def event_loop(self):
        while True:
            h = make_a()
            with h.lock:  # held across the program's own code: a wait
                h.ping()
            dist.barrier()
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/makers.py": MAKERS,
    "pkg/aa_early.py": EARLY,
    "pkg/loop.py": LOOP,
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def _names(values) -> list[str]:
    return sorted(f"{v.kind}:{v.name}" for v in values)


def test_what_a_function_returns_does_not_depend_on_which_was_asked_first(program_of):
    program = program_of(FILES)
    make_a = program.functions["pkg.makers.make_a"]
    make_b = program.functions["pkg.makers.make_b"]
    a_first = Resolver(program)
    answers_a_first = (_names(a_first.returns(make_a)), _names(a_first.returns(make_b)))
    b_first = Resolver(program)
    answers_b_first = (_names(b_first.returns(make_b)), _names(b_first.returns(make_a)))
    answers_b_first = answers_b_first[::-1]
    assert answers_a_first == answers_b_first
    assert answers_a_first[0] == ["instance:pkg.makers.Holder"]


def test_a_local_typed_through_a_cycle_is_the_same_in_any_order(program_of):
    program = program_of(FILES)
    loop = program.functions["pkg.loop.S.event_loop"]
    early = program.functions["pkg.aa_early.early"]
    fresh = Resolver(program)
    alone = _names(fresh.evaluate(loop, ("h", "lock")))
    after = Resolver(program)
    after.evaluate(early, ("x", "ping"))  # what a cold build asks first
    assert _names(after.evaluate(loop, ("h", "lock"))) == alone
    assert alone == ["external:threading.Lock()"]


def test_warm_check_after_an_edit_equals_no_cache(capsys, tmp_path: Path):
    """The edited module is resolved again first in the warm run, the rest comes from the
    cache: the `with h.lock:` finding must not depend on that order."""
    root = write_tree(tmp_path / "proj", FILES)
    config = ("--config", str(root / "pyproject.toml"), "--format", "json")
    cache = ("--cache-dir", str(tmp_path / "cache"))

    def run(*argv: str) -> str:
        main(["check", str(root / "pkg"), *config, *argv])
        return capsys.readouterr().out

    assert run(*cache) == run("--no-cache")
    loop = root / "pkg" / "loop.py"
    loop.write_text(loop.read_text().replace("            pass\n", "            pass\n" * 2))
    warm = run(*cache)
    assert warm == run("--no-cache")
    assert "threading.Lock" in warm
    shutil.rmtree(tmp_path / "cache")
