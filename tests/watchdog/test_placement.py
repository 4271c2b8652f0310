"""Issue #16: the finding and the codemod's stamp go in the innermost frame of the chain where the
hook is in scope, around the smallest statement reaching the wait, never around a call whose
callee already holds a stamped wait; the codemod's output is re-checked."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import textwrap
from pathlib import Path

from rankguard.cli import main

CONFIG = """
[tool.rankguard]
rounds = ["*.event_loop"]
watchdog-hooks = ["on_blocked_recv"]
"""

COMM = """
import torch.distributed as dist

def broadcast_pyobj(data, src=0):
    box = [data]
    dist.broadcast_object_list(box, src=src)
    return box[0]
"""

RECEIVER = """
import contextlib
import torch.distributed as dist
from pkg.comm import broadcast_pyobj

class Receiver:
    @contextlib.contextmanager
    def on_blocked_recv(self, name):
        self.blocked = name
        yield
        self.blocked = None

    def recv_requests(self):
        with self.on_blocked_recv("chain_receive"):
            dist.recv(self.buf, src=0)
        reqs = broadcast_pyobj(self.buf)
        return reqs

    def event_loop(self):
        while True:
            reqs = self.recv_requests()
            self.process(reqs)

    def process(self, reqs):
        pass
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    for name, text in {"pyproject.toml": CONFIG, "pkg/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _run(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main([*args, "--no-cache"])
    return code, buffer.getvalue()


def _findings(root: Path) -> list[dict]:
    code, out = _run("check", str(root), "--select", "unwatched-collective", "--format", "json")
    assert code in (0, 1)
    return json.loads(out)["findings"]


def _nested_stamps(root: Path) -> list[tuple[str, int]]:
    """`with ...on_blocked_recv(...)` blocks lexically inside another one."""
    out = []
    for file in sorted(root.rglob("*.py")):
        tree = ast.parse(file.read_text())

        def visit(node: ast.AST, inside: bool, file: Path = file) -> None:
            stamp = isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call)
                and ast.unparse(i.context_expr.func).endswith("on_blocked_recv")
                for i in node.items
            )
            if stamp and inside:
                out.append((file.name, node.lineno))
            for child in ast.iter_child_nodes(node):
                visit(child, inside or stamp)

        visit(tree, False)
    return out


def test_finding_lands_in_the_receiver_not_the_round(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/comm.py": COMM, "pkg/recv.py": RECEIVER})
    (finding,) = _findings(root)
    assert finding["function"] == "pkg.recv.Receiver.recv_requests"
    assert (finding["path"], finding["line"]) == ("pkg/recv.py", 15)
    assert finding["stamp"] == "broadcast_pyobj"
    assert finding["round"] == "pkg.recv.Receiver.event_loop"
    assert "only the round loop" not in finding["message"]


def test_codemod_output_is_rechecked(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/comm.py": COMM, "pkg/recv.py": RECEIVER})
    code, _ = _run("fix", "stamp-watchdog", str(root), "--write")
    assert code == 0
    text = (root / "pkg" / "recv.py").read_text()
    assert (
        'with self.on_blocked_recv("broadcast_pyobj"):\n            reqs = broadcast_pyobj' in text
    )
    assert _findings(root) == []
    assert _nested_stamps(root) == []


# A round loop whose `self` has the hook; `call` is what it calls each round.
LOOP = """
class Loop:
    @contextlib.contextmanager
    def on_blocked_recv(self, name):
        yield

    def event_loop(self):
        while True:
            reqs = {call}
"""

MODULE_LOOP = """
import contextlib
from pkg.comm import broadcast_pyobj

def fetch(buf):
    return broadcast_pyobj(buf)

""" + LOOP.format(call="fetch(self.buf)")


def test_only_the_round_loop_can_hold_it(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/comm.py": COMM, "pkg/loop.py": MODULE_LOOP})
    (finding,) = _findings(root)
    assert finding["function"] == "pkg.loop.Loop.event_loop"
    assert (finding["path"], finding["line"]) == ("pkg/loop.py", 15)
    assert "only the round loop can hold" in finding["message"]
    _run("fix", "stamp-watchdog", str(root), "--write")
    assert _findings(root) == []
    assert _nested_stamps(root) == []


NESTED = """
import contextlib
import torch.distributed as dist
from pkg.comm import broadcast_pyobj

def pull(loop):
    with loop.on_blocked_recv("chain_receive"):
        dist.recv(loop.buf, src=0)
    return broadcast_pyobj(loop.buf)

""" + LOOP.format(call="pull(self)")


def test_never_around_a_call_whose_callee_holds_a_stamped_wait(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/comm.py": COMM, "pkg/loop.py": NESTED})
    (finding,) = _findings(root)
    assert finding["function"] == "pkg.loop.Loop.event_loop"
    assert finding["fixable"] is False
    assert "already holds a stamped wait" in finding["message"]
    code, out = _run("fix", "stamp-watchdog", str(root))
    assert (code, out) == (0, "")  # nothing the codemod may do without nesting stamps
