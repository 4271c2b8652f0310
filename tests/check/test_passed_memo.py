"""What a call site hands a helper's called parameters (`PassedCallables.binding`) is judged
from the site alone, except where the site hands on a parameter of its own caller, whose
binding on the walk's path (`held`) then answers. The collective index and the blocking walk
ask it at every entry of every path: on a vllm check 236,693 times for 39,788 distinct
(caller, site, callee, parameter) questions, each resolving the argument again (issue #14,
`benchmarks/README`). The part that does not depend on `held` is kept per site, so a repeated
question resolves nothing; the answer must stay the one `held` gives on each path. Counted,
not timed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.analysis.passed import PassedCallables
from rankguard.model import load_program
from tests.check.helpers import HEAD, config_of

CODE = """
def ping():
    pass


def pong():
    pass


def run(step, post):
    step()
    post()


def relay(hook):
    run(ping, hook)


def top():
    relay(pong)
    relay(ping)
"""


def _program(tmp_path: Path):
    (tmp_path / "mod.py").write_text(HEAD + textwrap.dedent(CODE))
    return load_program(read_directory(tmp_path, config_of({}).exclude))


def test_a_site_asked_again_resolves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    program = _program(tmp_path)
    passed = PassedCallables(program)
    relay = program.functions["mod.relay"]
    site = next(r.call for r in program.calls["mod.relay"] if r.call.target == ("run",))
    resolver = program.resolver
    asked: list[object] = []
    evaluate = resolver.evaluate

    def counting(fn, segs, scope=None):
        asked.append(segs)
        return evaluate(fn, segs, scope)

    monkeypatch.setattr(resolver, "evaluate", counting)
    first = passed.binding(relay, site, "mod.run", {})
    once = len(asked)
    for held in ({}, {"hook": frozenset({"mod.pong"})}, {"hook": frozenset({"mod.ping"})}):
        passed.binding(relay, site, "mod.run", held)
    assert len(asked) == once, f"{len(asked) - once} arguments resolved again for one site"
    assert first == {"step": frozenset({"mod.ping"})}


def test_the_held_binding_still_answers_per_path(tmp_path: Path):
    program = _program(tmp_path)
    passed = PassedCallables(program)
    relay = program.functions["mod.relay"]
    site = next(r.call for r in program.calls["mod.relay"] if r.call.target == ("run",))
    assert passed.binding(relay, site, "mod.run", {}) == {"step": frozenset({"mod.ping"})}
    held = {"hook": frozenset({"mod.pong"})}
    assert passed.binding(relay, site, "mod.run", held) == {
        "step": frozenset({"mod.ping"}),
        "post": frozenset({"mod.pong"}),
    }
    other = {"hook": frozenset({"mod.ping"})}
    assert passed.binding(relay, site, "mod.run", other)["post"] == frozenset({"mod.ping"})
    assert passed.binding(relay, site, "mod.run", {}) == {"step": frozenset({"mod.ping"})}
