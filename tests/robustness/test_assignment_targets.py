"""Every assignment-target shape Python allows goes through the whole pipeline without a crash.

A nested unpacking (`a, (b, c) = f, (g, h)`) once made the summary hold a list where a statement
belonged, and every command died on it. Targets are generated from a grammar of shapes (names,
attributes, subscripts, starred, nested tuples and lists) and placed in every binding form
(plain, chained, annotated, augmented, walrus, `for`, `with`, comprehension), inside a round
that reaches a collective, and run through `check` (summary, model, every rule) and `staleness`
(the staleness flows), the two commands that read every fact a summary holds.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankguard.cli import main

BUDGET = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

LEAVES = st.tuples(
    st.sampled_from(["a", "b", "self.x", "d[0]", "d[k]", "self.t[i]", "f"]),
    st.sampled_from(["f", "g", "h", "self.m", "torch.cuda.mem_get_info"]),
)


def _shape(depth: int) -> st.SearchStrategy[tuple[str, str]]:
    """(target, value) of one shape: the value mirrors the target, with callables as leaves."""
    if depth == 0:
        return LEAVES
    inner = _shape(depth - 1)
    starred = inner.map(lambda tv: (f"*{tv[0]}", tv[1]))
    elements = st.lists(st.one_of(inner, starred), min_size=1, max_size=3).filter(
        lambda xs: sum(x[0].startswith("*") for x in xs) <= 1  # one starred per level
    )

    def joined(xs: list[tuple[str, str]], open_: str, close: str) -> tuple[str, str]:
        targets = ", ".join(x[0] for x in xs)
        values = ", ".join(x[1] for x in xs)
        tail = "," if open_ == "(" else ""
        return f"{open_}{targets}{tail}{close}", f"{open_}{values}{tail}{close}"

    return st.one_of(
        inner,
        elements.map(lambda xs: joined(xs, "(", ")")),
        elements.map(lambda xs: joined(xs, "[", "]")),
    )


FORMS = [
    "{t} = {v}",
    "{t} = {t2} = {v}",
    "for {t} in items:\n    pass",
    "with ctx() as {t}:\n    pass",
    "ys = [0 for {t} in items]",
]
SIMPLE_FORMS = ["a: int = {v}", "self.x += 1", "d[k] -= f()", "if (a := f()):\n    pass"]


def _program(statement: str) -> str:
    body = "".join(f"            {line}\n" for line in statement.splitlines())
    return (
        "import torch\nimport torch.distributed as dist\n\n"
        "def f():\n    return 1\n\ndef g():\n    return 2\n\ndef h():\n    return 3\n\n"
        "class S:\n"
        "    def m(self):\n        return 4\n\n"
        "    def event_loop(self, items, d, k, i, ctx):\n"
        "        while True:\n"
        f"{body}"
        "            dist.all_reduce(torch.zeros(1))\n"
    )


def _check(source: str) -> None:
    compile(source, "example.py", "exec")  # the generator only makes valid Python
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "example.py").write_text(source)
        (root / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.event_loop"]\n')
        for command in ("check", "staleness"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([command, str(root), "--no-cache", "--format", "json"])
            assert code in (0, 1), f"{command} exited {code}: {err.getvalue()}\n{source}"
            assert json.loads(out.getvalue()).get("errors", []) == [], source


def test_nested_unpacking_of_callables_runs_every_command():
    _check(_program("a, (b, c) = f, (g, h)"))


@BUDGET
@given(st.sampled_from(FORMS), _shape(3), _shape(2))
def test_every_target_shape_in_every_binding_form(
    form: str, shape: tuple[str, str], second: tuple[str, str]
):
    target, value = shape
    statement = form.format(t=target, t2=second[0], v=value)
    _check(_program(statement))


def test_simple_binding_forms():
    for form in SIMPLE_FORMS:
        _check(_program(form.format(v="f()")))
