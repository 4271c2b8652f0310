"""Which modules a warm run resolves again after a body edit (`summary.interface`,
`model.load`), and that it answers as `--no-cache` does after each edit.

Three modules: `work` holds a class whose method assigns `self` attributes (so part of that
method's body is what another module reads: the attribute's type), `use` calls through that
attribute, `other` is unrelated."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.adapters import store
from rankguard.cli import main
from tests.conftest import write_tree

FILES = {
    "pkg/__init__.py": "",
    "pkg/work.py": """
        import time


        class Helper:
            def go(self):
                time.sleep(1)


        class Other:
            def go(self):
                pass


        class Worker:
            def step(self):
                made = Helper()
                self.ready = made
                return None

            def later(self, items):
                return sorted(items, key=Other.go)
    """,
    "pkg/use.py": """
        from pkg.work import Worker


        def run(w: Worker):
            w.ready.go()
    """,
    "pkg/other.py": """
        def idle():
            return 0
    """,
}
STEP = "    def step(self):\n"


def _edit(root: Path, old: str, new: str) -> None:
    path = root / "pkg/work.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.fixture
def tree(tmp_path: Path, capsys):
    root = write_tree(tmp_path / "src", FILES)
    cache = str(tmp_path / "cache")

    def run(*extra: str) -> tuple[int, str]:
        store.COUNTS.clear()
        code = main(["graph", str(root), "--format", "json", *extra])
        return code, capsys.readouterr().out

    def resolved() -> int:
        """Modules resolved by a warm run; it must answer as `--no-cache` does."""
        warm = run("--cache-dir", cache)
        count = store.COUNTS["modules resolved"]
        prefix = "function resolved: "
        functions.clear()
        functions.update(k[len(prefix) :] for k in store.COUNTS if k.startswith(prefix))
        assert warm == run("--no-cache")
        return count

    functions: set[str] = set()  # those the last warm run resolved again
    resolved()
    return root, resolved, functions


def test_a_local_nothing_exported_reads_re_resolves_one_module(tree):
    """The edited method assigns `self.ready`, but the new local is read by nothing another
    module can ask about: only `work` is resolved again (main resolved all four modules: the
    method's every binding was part of the interface)."""
    root, resolved, _ = tree
    _edit(root, STEP, STEP + "        counter = 1\n")
    assert resolved() == 1
    _edit(root, "counter = 1", "counter = 2")
    assert resolved() == 1


def test_a_body_edit_re_resolves_the_edited_function_not_its_module(tree):
    """Within the edited module, a function whose line-free record did not change keeps its
    resolved calls (`model.load._unchanged_functions`); the edited method is resolved again,
    and the module's body, whose class statement ends lower now. `later` below the edit
    keeps its calls and its callback (`Other.go`, at a line one lower now: the graph says
    where, as `--no-cache` does)."""
    root, resolved, functions = tree
    _edit(root, STEP, STEP + "        counter = 1\n")
    assert resolved() == 1
    assert functions == {"pkg.work.Worker.step", "pkg.work"}


def test_a_local_an_attribute_is_read_through_changes_the_interface(tree):
    """`self.ready = made`: what `made` holds is what `use` reaches through `w.ready.go()`."""
    root, resolved, _ = tree
    _edit(root, "made = Helper()", "made = Other()")
    assert resolved() == 4


def _graphs_after_edit(
    tmp_path: Path, capsys, path: Path, edit: tuple[str, str]
) -> tuple[tuple[int, str], tuple[int, str]]:
    """`graph` once to fill the cache, the edit, then (exit code, output) warm and cold."""
    root = tmp_path / "src"
    argv = ["graph", str(root), "--format", "json"]
    main([*argv, "--cache-dir", str(tmp_path / "cache")])
    capsys.readouterr()
    path.write_text(path.read_text().replace(*edit))
    warm = main([*argv, "--cache-dir", str(tmp_path / "cache")]), capsys.readouterr().out
    cold = main([*argv, "--no-cache"]), capsys.readouterr().out
    return warm, cold


def test_an_annotated_function_returning_a_class_it_names(tmp_path: Path, capsys):
    """`-> Base` with `return fast()`: the resolver takes the class the return builds over the
    annotation, so that return is part of the interface even under an annotation (main left it
    out: after `fast()` became `slow()` a warm run kept the caller's old edge)."""
    root = write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/make.py": """
                import time


                class Base:
                    def go(self):
                        pass


                class Fast(Base):
                    def go(self):
                        pass


                class Slow(Base):
                    def go(self):
                        time.sleep(1)


                fast, slow = Fast, Slow  # (a capitalised name in a body is in the interface)


                def make() -> Base:
                    return fast()
            """,
            "pkg/use.py": """
                from pkg.make import make


                def run():
                    make().go()
            """,
        },
    )
    warm, cold = _graphs_after_edit(
        tmp_path, capsys, root / "pkg/make.py", ("return fast()", "return slow()")
    )
    assert "pkg.make.Slow.go" in cold[1]
    assert warm == cold


METHOD = """
class Worker:
    def __init__(self, size):
        self.size = size
        self.pool = make_pool()
        ready = self.pool
        self.ready = ready
{extra}
    def run(self):
        return None
"""


def _digest(extra: str) -> str:
    from rankguard.summary.interface import interface_digest
    from rankguard.summary.parse import parse_bytes

    summary = parse_bytes(METHOD.format(extra=extra).encode()).summary
    assert summary is not None
    return interface_digest(summary)


@pytest.mark.parametrize(
    ("extra", "changes"),
    [
        ("        counter = 1", False),  # a constant: evaluates nothing
        ("        counter = size + 1", False),  # arithmetic: evaluates nothing
        ("        counter = 1\n        counter = 1", False),  # a repeated statement adds nothing
        ("        helper = self.pool.helper()", True),  # evaluated: may take part in a cycle
        ("        ready = other_pool()", True),  # a local `self.ready` is read through
        ("        log('x')", False),  # no binding
        ("        self.extra = 1", True),  # a new attribute
    ],
)
def test_which_body_edits_change_the_interface(extra: str, changes: bool):
    """What of a method assigning `self` attributes is its module's interface: the statements
    others read, bindings they read, and bindings whose value the resolver evaluates."""
    assert (_digest(extra) != _digest("")) is changes


def test_mentioning_a_private_class_is_part_of_the_interface(tmp_path: Path, capsys):
    """Class-hierarchy dispatch keeps the derived classes a program names anywhere: a body
    that stops naming `_Impl` narrows `x.go()` in another module. `_Impl` is class-like
    (main took only names whose first character is upper-case: the warm run kept the edge)."""
    root = write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": """
                class Base:
                    def go(self):
                        pass


                class Real(Base):
                    def go(self):
                        pass


                class _Impl(Base):
                    def go(self):
                        pass
            """,
            "pkg/b.py": """
                from pkg.a import Base, Real


                def f(x: Base):
                    x.go()


                def g():
                    return Real()
            """,
            "pkg/c.py": """
                from pkg.a import _Impl


                def h():
                    print(_Impl)
            """,
        },
    )
    warm, cold = _graphs_after_edit(
        tmp_path, capsys, root / "pkg/c.py", ("print(_Impl)", "print(1)")
    )
    assert "pkg.a._Impl.go" not in cold[1]
    assert warm == cold


FORWARDING = """
class W:
    def __getattr__(self, name):
        return getattr(self.{held}, name) {shape}
"""


@pytest.mark.parametrize("shape", ["if name else None", "or None"])
def test_a_forwarding_return_of_any_shape_is_part_of_the_interface(shape: str):
    """`__getattr__` forwards the names a class lacks to what its return's `getattr` reads
    (`model.named.forwarded` reads the calls of every return, whatever its shape): forwarding
    to another attribute changes what other modules' `w.go()` reach. Reviewed at 1eb0d23: a
    conditional or an `or` kept only the return's shape, and a warm run kept the old edge."""
    from rankguard.summary.interface import interface_digest
    from rankguard.summary.parse import parse_bytes

    def digest(held: str) -> str:
        summary = parse_bytes(FORWARDING.format(held=held, shape=shape).encode()).summary
        assert summary is not None
        return interface_digest(summary)

    assert digest("a") != digest("b")


# `register` fills `self.handlers` by a call, and `use` calls what it holds (a fresh
# reviewer's program, session 19): the fill is what `use` resolves through.
FILLED = {
    "pkg/__init__.py": "",
    "pkg/work.py": """
        import time


        class Fast:
            def run(self):
                pass


        class Slow:
            def run(self):
                time.sleep(1)


        def make_fast():
            return Fast()


        def make_slow():
            return Slow()


        class Box:
            def __init__(self):
                self.handlers = []

            def register(self):
                self.handlers.append(make_fast())

            def use(self):
                for h in self.handlers:
                    h.run()
    """,
}


def test_what_a_method_puts_into_its_own_container_is_part_of_the_interface(tmp_path: Path, capsys):
    """`self.handlers.append(make_slow())` changes what `h.run()` in `use` runs: the fill is
    part of `work`'s interface, so `use` is resolved again (it kept `Fast.run` when only
    assignments counted)."""
    root = write_tree(tmp_path / "src", FILLED)
    cache = str(tmp_path / "cache")

    def graph(*extra: str) -> str:
        main(["graph", str(root), "--format", "json", *extra])
        return capsys.readouterr().out

    graph("--cache-dir", cache)
    path = root / "pkg/work.py"
    path.write_text(path.read_text().replace("append(make_fast())", "append(make_slow())"))
    warm = graph("--cache-dir", cache)
    assert "pkg.work.Slow.run" in warm
    assert warm == graph("--no-cache")
