"""What the caller knows about an argument holds for the parameter it fills, and a call in an
assert's message runs only on the path where the assert fails (which raises)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked


def test_a_call_in_an_assert_message_runs_only_when_the_assert_fails(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def loop():
            while True:
                owners = torch.ones(4, device="cuda")
                assert owners.numel() == 4, f"bad owners {owners.tolist()}"
                assert owners.numel() > 0, owners.cpu()
                total = owners.sum().item()  # expect
                dist.all_reduce(owners)
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_none_test_on_the_argument_holds_for_the_parameter(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        _endpoint = None

        def make(endpoint=None, bind=True):
            if endpoint is None:
                time.sleep(1)
                return
            if bind:
                open("x")
            subprocess.run(["connect"])  # expect

        def send():
            if _endpoint is None:
                return
            make(_endpoint, bind=False)

        def loop():
            while True:
                send()
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_facts_on_an_arguments_attributes_hold_for_the_parameters(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Kind:
            IDLE = 0
            EXTEND = 1

        def run_idle(batch):
            if batch.kind == Kind.EXTEND:
                torch.cuda.synchronize()
            return batch

        def run_any(batch):
            if batch.kind == Kind.EXTEND:
                torch.cuda.synchronize()  # expect

        def loop(work):
            while True:
                if work.kind == Kind.IDLE:
                    run_idle(work)
                run_any(work)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


REFUSALS = """
class Mode:
    NULL = 0
    PREFILL = 1

def _reject_reason(s, new_role):
    sa = s.args
    checks = (
        (new_role not in ("prefill", "decode"), True, lambda: "bad role"),
        (s.mode == Mode.NULL, True, lambda: "not disaggregated"),
        (sa.staging, False, lambda: "staging"),
    )
    return next(((msg(), safe) for failed, safe, msg in checks if failed), None)

def _refusal(s):
    if s.waiting:
        return None
    if s.mode == Mode.NULL:
        return ("not disaggregated", True)
    return None

def _late_refusal(s):
    if s.waiting:
        return None
    if s.mode == Mode.NULL:
        return "not disaggregated"

def handle_switch(s, req):
    rejection = _reject_reason(s, req.role)
    if rejection is not None:
        return rejection
    torch.cuda.synchronize()

def handle_resize(s, req):
    reason = _late_refusal(s)
    if reason is not None:
        return reason
    open("resize")  # expect

class S:
    def __init__(self, mode):
        self.mode = mode
        self.busy = False
        self.args = None

    def event_loop_normal(self):
        while True:
            req = recv()
            handle_switch(self, req)
            handle_resize(self, req)
            dist.barrier()

def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop_normal()
"""


def test_a_helper_that_refuses_in_the_rounds_mode_stops_the_handler(tmp_path: Path):
    """`_reject_reason` returns a row of its table whose test holds: under the round's
    `mode == NULL` it refuses, so the handler returns before its work. `_late_refusal` may
    return None first (when waiting), so its caller's work stays reported."""
    _assert_marked(tmp_path, REFUSALS, {"rounds": ["*.event_loop_*"]})


def test_a_refusal_under_a_fact_the_round_may_lose_is_low_confidence(tmp_path: Path):
    """Where a method may reassign the mode, the refusal is not certain: the handler's work
    stays reported, with low confidence, saying which fact must change."""
    switch = "    def switch(self):\n        self.mode = Mode.PREFILL\n\n"
    code = REFUSALS.replace("    def event_loop_normal", switch + "    def event_loop_normal")
    sync = "    torch.cuda.synchronize()"
    code = code.replace(sync + "\n", sync + "  # expect\n")
    findings = _assert_marked(tmp_path, code, {"rounds": ["*.event_loop_*"]})
    by_callee = {f.extra["blocking"]["callee"]: f.extra for f in findings}
    assert by_callee["torch.cuda.synchronize"]["confidence"] == "low"
    assert "`s.mode`" in by_callee["torch.cuda.synchronize"]["confidence_note"]
    assert by_callee["open"]["confidence"] != "low"


def _switched_past_the_refusal(extra_in_loop: str = "") -> str:
    """REFUSALS where the mode is reassigned by `switch`, which the handler runs only past
    its refusal (as a role switch re-initialises the mode)."""
    switch = "    def switch(self):\n        self.mode = Mode.PREFILL\n\n"
    code = REFUSALS.replace("    def event_loop_normal", switch + "    def event_loop_normal")
    sync = "    torch.cuda.synchronize()\n"
    code = code.replace(sync, sync + "    s.switch()\n")
    loop = "            handle_switch(self, req)\n"
    return code.replace(loop, loop + extra_in_loop)


def test_a_fact_broken_only_past_its_own_refusal_holds_all_round(tmp_path: Path):
    """The only writer of `mode` runs past a refusal the round's `mode == NULL` makes
    certain: no path of the round breaks the fact first, so the work past the refusal is
    not a path of the round at all (an inductive invariant), not merely doubted."""
    _assert_marked(tmp_path, _switched_past_the_refusal(), {"rounds": ["*.event_loop_*"]})


def test_a_writer_the_round_runs_outside_doubt_leaves_the_fact_shaky(tmp_path: Path):
    code = _switched_past_the_refusal("            if poll():\n                self.switch()\n")
    sync = "    torch.cuda.synchronize()"
    findings = _assert_marked(
        tmp_path, code.replace(sync + "\n", sync + "  # expect\n"), {"rounds": ["*.event_loop_*"]}
    )
    by_callee = {f.extra["blocking"]["callee"]: f.extra for f in findings}
    assert by_callee["torch.cuda.synchronize"]["confidence"] == "low"


def test_an_argument_the_call_constructs_decides_isinstance_in_the_callee(tmp_path: Path):
    # `apply(Free(...))`: inside `apply`, `action` is exactly a `Free`, so neither the `Backup`
    # branch nor the not-an-`Action` one runs from `drain`; from `flush`, which passes an
    # action of unknown class, the `Backup` branch can.
    findings = _assert_marked(
        tmp_path,
        """
        class Action:
            pass

        class Free(Action):
            def __init__(self, pages):
                self.pages = pages

        class Backup(Action):
            pass

        def apply(action):
            if isinstance(action, Free):
                pass
            elif isinstance(action, (Backup, int)):
                time.sleep(1)  # expect
            if not isinstance(action, Action):
                open("never")  # expect

        def drain(pages):
            apply(Free(pages.pop()))

        def flush(queue):
            apply(queue.pop())

        def loop(pages):
            while True:
                drain(pages)
                dist.barrier()

        def flushing_loop(queue):
            while True:
                flush(queue)
                dist.barrier()
        """,
        {"rounds": ["mod.loop", "mod.flushing_loop"]},
    )
    assert {f.extra["round"] for f in findings} == {"mod.flushing_loop"}


_SPECS = """
class Spec:
    pass

class SamplingSpec(Spec):
    pass

class RotarySpec(Spec):
    pass
"""
_REGISTRY = (
    _SPECS
    + """
_SAMPLING = SamplingSpec()
_REBOUND = SamplingSpec()
for _LOOPED in (SamplingSpec(),):
    pass

def reset():
    global _REBOUND
    _REBOUND = RotarySpec()

def build(spec):
    if isinstance(spec, SamplingSpec):
        return 1
    if isinstance(spec, RotarySpec):
        time.sleep(1)  # REACHED
        return 2
    open("neither")  # REACHED

def loop(x):
    while True:
        sample(x)
        dist.barrier()
"""
)


def test_a_module_singleton_decides_isinstance_as_a_constructed_argument_does(tmp_path: Path):
    # `build(_SAMPLING)` with `_SAMPLING = SamplingSpec()` the module's one binding of that
    # global: as exact as `build(SamplingSpec())`, so a registry's other branches do not run.
    sample = "def sample(x):\n    build(_SAMPLING)\n"
    _assert_marked(
        tmp_path, _REGISTRY.replace("  # REACHED", "") + sample, {"rounds": ["mod.loop"]}
    )


_HANDED_ON = (
    _SPECS
    + """
class Base:
    @classmethod
    def build(cls, spec):
        if isinstance(spec, RotarySpec):
            time.sleep(1)  # expect
        return spec

class Cuda(Base):
    @classmethod
    def build(cls, spec):
        if isinstance(spec, SamplingSpec):
            return 1
        return super().build(spec)

class Rebinding(Base):
    @classmethod
    def build(cls, spec):
        spec = pick(spec)
        return super().build(spec)

def loop():
    while True:
        Cuda.build(RotarySpec())
        Cuda.build(SamplingSpec())
        dist.barrier()

def rebinding_loop():
    while True:
        Rebinding.build(SamplingSpec())
        dist.barrier()
"""
)


@pytest.mark.parametrize("round_name", ["mod.loop", "mod.rebinding_loop"])
def test_a_dispatcher_hands_the_exact_class_on_to_its_base(tmp_path: Path, round_name: str):
    # A backend's registry tries its own specs, then hands the spec on to its base's registry
    # (`super().build(spec)`): the base's branch runs for the class the caller constructed
    # (`RotarySpec`), and for any class once the parameter is rebound before it is handed on.
    _assert_marked(tmp_path, _HANDED_ON, {"rounds": [round_name]})


def test_a_handed_on_class_decides_the_base(tmp_path: Path):
    # Called with a `SamplingSpec` only: the base's `RotarySpec` branch does not run.
    code = _HANDED_ON.replace("  # expect", "").replace("        Cuda.build(RotarySpec())\n", "")
    _assert_marked(tmp_path, code, {"rounds": ["mod.loop"]})


@pytest.mark.parametrize(
    "sample",
    [
        "def sample(x):\n    build(_REBOUND)\n",  # bound again under `global`
        "def sample(x):\n    build(_LOOPED)\n",  # bound by a module-level loop
        "def sample(_SAMPLING):\n    build(_SAMPLING)\n",  # a parameter of that name
        "def sample(x):\n    _SAMPLING = x\n    build(_SAMPLING)\n",  # a local
        "def sample(x):\n    [build(_SAMPLING) for _SAMPLING in x]\n",  # a comprehension's
        "def sample(x):\n    _SAMPLING = x\n\n    def inner():\n        build(_SAMPLING)\n\n"
        "    inner()\n",  # the enclosing function's local
    ],
    ids=["global-rebound", "loop-bound", "parameter", "local", "comprehension", "enclosing"],
)
def test_a_name_bound_otherwise_decides_nothing(tmp_path: Path, sample: str):
    code = _REGISTRY.replace("# REACHED", "# expect") + sample
    _assert_marked(tmp_path, code, {"rounds": ["mod.loop"]})


_SINGLETON = (
    _SPECS
    + """
import os
import sys


def build(spec):
    if isinstance(spec, RotarySpec):
        time.sleep(1)  # expect
        return 2
    return 1

def loop():
    while True:
        sample()
        dist.barrier()

_SPEC = SamplingSpec()

def sample():
    build(_SPEC)
"""
)


@pytest.mark.parametrize(
    "rebinding",
    [
        'if os.environ.get("ROTARY"):\n    _SPEC = RotarySpec()\n',
        "try:\n    import flash_attn\nexcept ImportError:\n    _SPEC = RotarySpec()\n",
        'with open("x") as _SPEC:\n    pass\n',
        "def swap(specs):\n    global _SPEC\n    for _SPEC in specs:\n        pass\n",
        'globals()["_SPEC"] = RotarySpec()\n',
        'setattr(sys.modules[__name__], "_SPEC", RotarySpec())\n',
        "_SPEC.__class__ = RotarySpec\n",
        "from other import *\n",
        'vars()["_SPEC"] = RotarySpec()\n',
        'sys.modules[__name__].__dict__["_SPEC"] = RotarySpec()\n',
        "def put(name):\n    setattr(sys.modules[__name__], name, RotarySpec())\n",
        'object.__setattr__(_SPEC, "__class__", RotarySpec)\n',
    ],
    ids=[
        *("if", "try", "with-as", "global-for", "globals", "setattr", "class-assigned", "star"),
        *("vars", "module-dict", "computed-setattr", "object-setattr"),
    ],
)
def test_a_singleton_bound_otherwise_anywhere_decides_nothing(tmp_path: Path, rebinding: str):
    _assert_marked(tmp_path, _SINGLETON + rebinding, {"rounds": ["mod.loop"]})


@pytest.mark.parametrize(
    "handing_on",
    [
        "        if (spec := RotarySpec()):\n            pass\n",
        "        def swap():\n            nonlocal spec\n            spec = RotarySpec()\n"
        "        swap()\n",
        "        match RotarySpec():\n"
        "            case RotarySpec() as spec:\n                pass\n",
    ],
    ids=["walrus", "nonlocal", "match-as"],
)
def test_a_parameter_rebound_in_any_form_hands_no_class_on(tmp_path: Path, handing_on: str):
    code = _HANDED_ON.replace("        spec = pick(spec)\n", handing_on)
    _assert_marked(tmp_path, code, {"rounds": ["mod.rebinding_loop"]})


def test_a_keyword_caught_by_kwargs_is_no_parameter(tmp_path: Path):
    # `dispatch(spec=...)` fills `**kw`; the `spec` inside is the module's global.
    program = """
spec = RotarySpec()

def build(p):
    if isinstance(p, RotarySpec):
        time.sleep(1)  # expect

def dispatch(**kw):
    build(spec)

def loop():
    while True:
        dispatch(spec=SamplingSpec())
        dist.barrier()
"""
    _assert_marked(tmp_path, _SPECS + program, {"rounds": ["mod.loop"]})


@pytest.mark.parametrize(
    ("imported", "mark"),
    [("from typing import Generic", ""), ("from mylib import Generic", "  # expect")],
    ids=["typing", "elsewhere"],
)
def test_a_generic_base_decides_isinstance_as_a_plain_one_does(
    tmp_path: Path, imported: str, mark: str
):
    # `typing.Generic` adds type parameters, not a `__new__` or an `__instancecheck__`: a spec
    # class typed by what it builds (`class Spec(Generic[T])`) is as exact as a plain one. A
    # base of that name from elsewhere may do anything.
    program = f"""
{imported}

T = 1

class Spec(Generic[T]):
    pass

class SamplingSpec(Spec[int]):
    pass

class RotarySpec(Spec[str]):
    pass

def build(spec):
    if isinstance(spec, RotarySpec):
        time.sleep(1){mark}

def loop():
    while True:
        build(SamplingSpec())
        dist.barrier()
"""
    _assert_marked(tmp_path, program, {"rounds": ["mod.loop"]})


def test_a_reassigned_parameter_or_a_base_outside_the_program_decides_nothing(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Count(int):
            pass

        class Free:
            pass

        def apply(action, queue):
            if isinstance(action, Free):
                action = queue.pop()
            if not isinstance(action, Free):
                time.sleep(1)  # expect

        def count(n):
            if isinstance(n, int):
                return
            open("maybe")  # expect: its base is outside the program, so undecided

        def probe(n):
            if not isinstance(n, (str, bytes)):
                return
            subprocess.run(["unknown"])  # expect

        def loop(queue):
            while True:
                apply(Free(), queue)
                count(Count(1))
                probe(Count(2))
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_params_record_the_call_constructs_has_its_defaults_in_the_callee(tmp_path: Path):
    # `match(Params(key=k))` leaves `req` at the record's default, None: inside `match`,
    # `params.req is None` holds, so the early return is taken from `checkpoint` and the
    # request path runs only from `admit`, which passes one. A field some method reassigns
    # after construction (`hits`) says nothing.
    findings = _assert_marked(
        tmp_path,
        """
        import dataclasses

        @dataclasses.dataclass
        class Params:
            key: str
            req: object = None
            hits: int = 0

        class Owner:
            def bump(self, params):
                params.hits = 1

        def match(params):
            if params.req is None:
                return 0
            time.sleep(1)  # expect
            if params.hits != 0:
                open("stats")  # expect

        def checkpoint(k):
            match(Params(key=k))

        def admit(k, r):
            match(Params(key=k, req=r))

        def loop(k, r):
            while True:
                checkpoint(k)
                dist.barrier()

        def admitting_loop(k, r):
            while True:
                admit(k, r)
                dist.barrier()
        """,
        {"rounds": ["mod.loop", "mod.admitting_loop"]},
    )
    assert {f.extra["round"] for f in findings} == {"mod.admitting_loop"}


def test_record_classes_from_outside_the_program_still_decide_isinstance(tmp_path: Path):
    # `msgspec.Struct` subclasses construct and test as plain classes do.
    findings = _assert_marked(
        tmp_path,
        """
        import msgspec

        class Free(msgspec.Struct, frozen=True):
            pages: list

        class Backup(msgspec.Struct, frozen=True):
            node: int

        def apply(action):
            if isinstance(action, Backup):
                time.sleep(1)  # expect

        def loop(pages):
            while True:
                apply(Free(pages=pages))
                dist.barrier()

        def backing_loop(node):
            while True:
                apply(Backup(node=node))
                dist.barrier()
        """,
        {"rounds": ["mod.loop", "mod.backing_loop"]},
    )
    assert {f.extra["round"] for f in findings} == {"mod.backing_loop"}


def test_a_known_argument_survives_a_branch_that_tests_it_again(tmp_path: Path):
    # `in_capture` is False from the call; the first `if` tests it again on one side only.
    # Both sides still know it afterwards (the side that assumed `not in_capture` must not
    # hold a vaguer "falsy" that the join then takes for a disagreement).
    _assert_marked(
        tmp_path,
        """
        def prepare(lens, busy, in_capture: bool = False):
            if busy and lens is not None:
                if in_capture:
                    lens.zero_()
                else:
                    lens.add_(1)
            if in_capture:
                n = lens.cpu()

        def loop(lens, busy):
            while True:
                prepare(lens, busy)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_record_field_given_a_name_the_caller_knows_holds_its_value(tmp_path: Path):
    # `match(Params(key=k, cow=cow))` where the caller knows `cow` is False (its own caller
    # passed it): inside `match`, `params.cow` is False.
    findings = _assert_marked(
        tmp_path,
        """
        import dataclasses

        @dataclasses.dataclass
        class Params:
            key: str
            cow: bool = True

        def match(params):
            if params.cow:
                time.sleep(1)  # expect

        def lookup(k, cow=True):
            match(Params(key=k, cow=cow))

        def loop(k):
            while True:
                lookup(k, cow=False)
                dist.barrier()

        def copying_loop(k):
            while True:
                lookup(k)
                dist.barrier()
        """,
        {"rounds": ["mod.loop", "mod.copying_loop"]},
    )
    assert {f.extra["round"] for f in findings} == {"mod.copying_loop"}


def test_calling_a_torch_module_runs_its_forward(tmp_path: Path):
    # `self.sampler(logits)` on an `nn.Module` runs `Sampler.forward` (torch's `__call__`),
    # and returns what `forward` returns; a class of its own `__call__` runs that instead.
    _assert_marked(
        tmp_path,
        """
        from torch import nn

        class Sampler(nn.Module):
            def forward(self, logits):
                ids = logits.argmax(-1)
                return ids.tolist()  # expect

        class Runner:
            def __init__(self):
                self.sampler = Sampler()

            def step(self, logits):
                return self.sampler(logits)

            def loop(self, logits):
                while True:
                    self.step(logits)
                    dist.barrier()
        """,
        {"rounds": ["mod.Runner.loop"]},
    )


def test_a_negated_argument_is_the_opposite_of_what_the_caller_knows(tmp_path: Path):
    # `overlap=True` at the call, then `wait_on_reqs=(not overlap)`: the callee's parameter is
    # false there, so its branch that asserts it is infeasible and the sync under the same
    # config test is not reached. Where the caller does not know `overlap`, nothing is said.
    (finding,) = _assert_marked(
        tmp_path,
        """
        def communicate(config, wait_on_reqs):
            if config.batch:
                assert wait_on_reqs
            if config.batch and config.sync:
                torch.cuda.synchronize()  # expect

        def send_recv(config, overlap=False):
            communicate(config, wait_on_reqs=(not overlap))

        def loop(config, flag):
            while True:
                send_recv(config, overlap=True)
                send_recv(config, overlap=flag)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    (loop_call,) = [hop for hop in finding.extra["chain"] if hop["function"] == "mod.loop"]
    assert loop_call["line"] == finding.line + 8  # through `overlap=flag` only
