"""A decorator's wrapper calls the function it was applied to at *that* decoration site.

`@timed_op def send(...)` binds `send` to `timed_op(send)`, the inner `log_wrapper` closing
over `func = send`: a call of `send(...)` runs the wrapper, whose `func(*args, **kwargs)` runs
`send`'s body, never `all_gather`'s, though the same decorator wraps both (DeepSpeed's
`deepspeed.comm` wraps every op this way). The collective index, the blocking walk and the
uniformity analysis all see that binding; where the decorator is applied by a call
(`f = timed_op(g)`) the wrapper's call still reaches every function it is applied to.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from rankguard.model import load_program
from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from rankguard.rules.rank_divergent_collective import RankDivergentCollective
from tests.check.helpers import HEAD, check_files

COMM = """
def get_default_args(fn):
    return {}


def timed_op(func):
    @functools.wraps(func)
    def log_wrapper(*args, **kwargs):
        get_default_args(func)
        return func(*args, **kwargs)

    return log_wrapper


@timed_op
def send(tensor, dst):
    return dist.send(tensor, dst)


@timed_op
def all_gather(out, tensor):
    return dist.all_gather(out, tensor)


@timed_op
def barrier():
    return dist.barrier()
"""


def _check(tmp_path: Path, body: str, rules: list) -> list:
    files = {"comm.py": HEAD + COMM, "mod.py": HEAD + "import comm\n" + textwrap.dedent(body)}
    return check_files(tmp_path, files, rules).findings


def test_the_finding_names_the_decorated_function_s_own_primitive(tmp_path: Path):
    findings = _check(
        tmp_path,
        """
        class Engine:
            def event_loop(self):
                while True:
                    t = torch.ones(2, device="cuda")
                    n = t.sum().item()
                    comm.send(t, 1)
        """,
        [BlockingBeforeCollective],
    )
    assert [f.extra["collective"]["callee"] for f in findings] == ["torch.distributed.send"]
    chain = [hop["function"] for hop in findings[0].extra["collective"]["chain"]]
    assert chain == ["mod.Engine.event_loop", "comm.timed_op.<locals>.log_wrapper", "comm.send"]


def test_rounds_list_each_call_site_s_primitive(tmp_path: Path):
    (tmp_path / "comm.py").write_text(HEAD + COMM)
    (tmp_path / "mod.py").write_text(
        HEAD
        + "import comm\n"
        + textwrap.dedent(
            """
            def event_loop():
                while True:
                    comm.send(torch.ones(1), 1)
                    comm.barrier()
            """
        )
    )
    program = load_program(read_directory(tmp_path))
    (found,) = find_rounds(program, ("*.event_loop",), collective_catalog())
    rows = [(c.site.callee, c.chain[0].line) for c in found.collectives]
    assert rows == [("torch.distributed.send", 11), ("torch.distributed.barrier", 12)]


def test_a_rank_conditional_send_through_the_decorator_is_point_to_point(tmp_path: Path):
    findings = _check(
        tmp_path,
        """
        def event_loop():
            while True:
                if dist.get_rank() == 0:
                    comm.send(torch.ones(1), 1)
                if dist.get_rank() == 0:
                    comm.barrier()
                dist.all_reduce(torch.ones(1))
        """,
        [RankDivergentCollective],
    )
    # Only the barrier: the send is point-to-point, expected to be rank-conditional.
    assert [(f.line, [p["callee"] for p in f.extra["primitives"]]) for f in findings] == [
        (14, ["torch.distributed.barrier"])
    ]


def test_a_decorator_applied_by_a_call_still_reaches_what_it_is_applied_to(tmp_path: Path):
    findings = _check(
        tmp_path,
        """
        def _gather(out, tensor):
            return dist.all_gather(out, tensor)


        gather = comm.timed_op(_gather)


        def event_loop():
            while True:
                t = torch.ones(2, device="cuda")
                n = t.sum().item()
                gather([t], t)
        """,
        [BlockingBeforeCollective],
    )
    assert "torch.distributed.all_gather" in {f.extra["collective"]["callee"] for f in findings}


STACKED = """
def outer(fn):
    def outer_wrapper(*args):
        return fn(*args)

    return outer_wrapper


def inner(fn):
    def inner_wrapper(*args):
        return fn(*args)

    return inner_wrapper


@outer
@inner
def send(tensor):
    return dist.send(tensor, 1)


@outer
def barrier():
    return dist.barrier()


@inner
def all_reduce(tensor):
    return dist.all_reduce(tensor)


def event_loop():
    while True:
        n = torch.ones(1, device="cuda").item()
        send(torch.ones(1))
"""


def test_stacked_decorators_bind_the_outer_wrapper_to_the_inner_one(tmp_path: Path):
    (tmp_path / "mod.py").write_text(HEAD + STACKED)
    program = load_program(read_directory(tmp_path))
    (found,) = find_rounds(program, ("*.event_loop",), collective_catalog())
    # The outer wrapper runs the inner wrapper (never `barrier`, which only `outer` wraps); the
    # inner wrapper's own call reaches every function `inner` is applied to, as before.
    primitives = {p.site.callee for c in found.collectives for p in c.primitives}
    assert primitives == {"torch.distributed.send", "torch.distributed.all_reduce"}


PROFILED = """
def timed(func):
    def wrapper(*args, prof=False, **kwargs):
        if prof:
            time.sleep(0)
        return func(*args, **kwargs)

    return wrapper


@timed
def send(tensor):
    return dist.send(tensor, 1)


@timed
def barrier():
    return dist.barrier()


def event_loop():
    while True:
        if dist.get_rank() == 0:
            send(torch.ones(1), prof=False)
        dist.all_reduce(torch.ones(1))
"""


def test_a_wrapper_pruned_by_a_constant_argument_keeps_its_binding(tmp_path: Path):
    # The call's constant `prof=False` prunes the wrapper's branch (`uniformity.collectives`):
    # the wrapper so entered still runs `send` only.
    findings = check_files(tmp_path, {"mod.py": HEAD + PROFILED}, [RankDivergentCollective])
    assert not findings.findings


# The decorator's parameter bound again in a form no assignment statement shows: its wrapper's
# `func(...)` may run something other than the function decorated there, so it keeps reaching
# every function the decorator is applied to (`send` and `barrier` both).
REBOUND = {
    # the control: an assignment statement, seen before `FunctionInfo.bound`
    "assignment": """
        func = _REPLACED.get(func, func)
""",
    "walrus": """
        if (func := _REPLACED.get(func, func)) is None:
            raise ValueError
""",
    "import": """
        if _FAST:
            from fastcomm import send as func
""",
    "match": """
        match func:
            case functools.partial(func=func):
                pass
""",
    # a sibling closure rebinds it through `nonlocal`: `send.bind(barrier)`
    "nonlocal-in-a-sibling": """
        def bind(impl):
            nonlocal func
            func = impl
""",
}

TIMED = """
_REPLACED = {{}}
_FAST = False


def timed(func):{rebound}
    def wrapper(*args):
        return func(*args)

    return wrapper


@timed
def send(tensor):
    return dist.send(tensor, 1)


@timed
def barrier():
    return dist.barrier()


def event_loop():
    while True:
        send(torch.ones(1))
"""


@pytest.mark.parametrize("form", sorted(REBOUND))
def test_a_parameter_rebound_otherwise_leaves_the_wrapper_unbound(tmp_path: Path, form: str):
    rebound = textwrap.indent(textwrap.dedent(REBOUND[form]), "    ")
    (tmp_path / "mod.py").write_text(HEAD + TIMED.format(rebound=rebound))
    program = load_program(read_directory(tmp_path))
    (found,) = find_rounds(program, ("*.event_loop",), collective_catalog())
    primitives = {p.site.callee for c in found.collectives for p in c.primitives}
    assert primitives == {"torch.distributed.send", "torch.distributed.barrier"}


def test_the_same_decorator_not_rebinding_its_parameter_runs_only_what_it_decorates(
    tmp_path: Path,
):
    (tmp_path / "mod.py").write_text(HEAD + TIMED.format(rebound="\n"))
    program = load_program(read_directory(tmp_path))
    (found,) = find_rounds(program, ("*.event_loop",), collective_catalog())
    primitives = {p.site.callee for c in found.collectives for p in c.primitives}
    assert primitives == {"torch.distributed.send"}
