"""A collective called through a group coordinator's method runs over the receiver's group.

`Coordinator.all_reduce(self, x)` reduces over `self.device_group`, a field whose name says
nothing; which group it is depends on the object the caller handed as `self`:
`get_tp_group().all_reduce(x)` reduces over the TP group, `self.stage.all_reduce(x)` (the
field assigned from `get_pp_group()`) over the pipeline group. The pipeline rank is the same
on every rank of one stage's TP group, so it gates a TP reduction safely; it does not gate a
pipeline reduction safely. A receiver we cannot name leaves the group unknown (any group).
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run

COORDINATOR = (
    "class Coordinator:\n"
    "    def __init__(self, ranks):\n"
    "        self.rank_in_group = ranks.index(dist.get_rank())\n"
    "        self.device_group = dist.new_group(ranks)\n\n"
    "    def all_reduce(self, x):\n"
    "        dist.all_reduce(x, group=self.device_group)\n"
    "        return x\n\n"
    "_TP: Coordinator | None = None\n"
    "_PP: Coordinator | None = None\n\n"
    "def init_groups():\n"
    "    global _TP, _PP\n"
    "    _TP = Coordinator([0, 1])\n"
    "    _PP = Coordinator([0, 2])\n\n"
    "def get_tp_group() -> Coordinator:\n"
    "    return _TP\n\n"
    "def get_pp_group() -> Coordinator:\n"
    "    return _PP\n\n"
    "def reduce_over_tp(x):\n"
    "    return get_tp_group().all_reduce(x)\n\n"
    "def reduce_over(group: Coordinator, x):\n"
    "    return group.all_reduce(x)\n\n"
    "def reduce_over_or_tp(group: Coordinator, x):\n"
    "    group = group or get_tp_group()\n"
    "    return group.all_reduce(x)\n\n"
)


def _round(*gated: str, gate: str = "get_pp_group().rank_in_group == 0") -> str:
    body = "".join(f"            if {gate}:\n                {call}\n" for call in gated)
    return COORDINATOR + (
        "class S:\n"
        "    def __init__(self, t, other: Coordinator):\n"
        "        self.t = t\n"
        "        self.stage = get_pp_group()\n"
        "        self.other = other\n\n"
        "    def event_loop(self):\n"
        "        while True:\n" + body
    )


def _line(code: str, text: str) -> int:
    return code.splitlines().index(" " * 16 + text) + 1


def test_a_pipeline_rank_gating_a_tp_reduction_through_a_helper_is_uniform(program_of) -> None:
    assert run(program_of, _round("reduce_over_tp(self.t)")) == []


def test_a_group_handed_as_an_argument_is_the_callers_receiver(program_of) -> None:
    assert run(program_of, _round("reduce_over(get_tp_group(), self.t)")) == []


def test_a_pipeline_rank_gating_a_pipeline_reduction_varies(program_of) -> None:
    code = _round("self.stage.all_reduce(self.t)", "reduce_over(get_pp_group(), self.t)")
    found = run(program_of, code)
    assert lines(found) == [
        _line(code, "self.stage.all_reduce(self.t)"),
        _line(code, "reduce_over(get_pp_group(), self.t)"),
    ]
    assert [d.groups for d in found] == [("pp",), ("pp",)]


def test_a_receiver_that_cannot_be_named_is_any_group(program_of) -> None:
    code = _round("self.other.all_reduce(self.t)")
    found = run(program_of, code)
    assert lines(found) == [_line(code, "self.other.all_reduce(self.t)")]
    assert found[0].groups == ()


def test_a_rank_read_from_a_getters_result_is_a_rank_of_that_group(program_of) -> None:
    code = _round("dist.barrier()")
    found = run(program_of, code)
    assert lines(found) == [_line(code, "dist.barrier()")]
    assert found[0].sources[0][0].dimension == "pp"


def test_a_parameter_rebound_in_the_helper_is_not_what_the_caller_passed(program_of) -> None:
    code = _round("reduce_over_or_tp(get_tp_group(), self.t)")
    found = run(program_of, code)
    assert lines(found) == [_line(code, "reduce_over_or_tp(get_tp_group(), self.t)")]
    assert found[0].groups == ()


# The helper binds its parameter again where no assignment statement shows it: the reduction
# may run over the pipeline group, whatever the caller passed, so the group is unknown.
REBOUND = {
    "walrus": (
        "def reduce_over_rebound(group: Coordinator, x):\n"
        "    if (group := group or get_pp_group()) is None:\n"
        "        raise ValueError\n"
        "    return group.all_reduce(x)\n\n"
    ),
    "nonlocal-in-a-closure": (
        "def reduce_over_rebound(group: Coordinator, x):\n"
        "    def fall_back():\n"
        "        nonlocal group\n"
        "        group = get_pp_group()\n\n"
        "    if not group:\n"
        "        fall_back()\n"
        "    return group.all_reduce(x)\n\n"
    ),
}


@pytest.mark.parametrize("form", sorted(REBOUND))
def test_a_parameter_rebound_otherwise_is_not_what_the_caller_passed(program_of, form) -> None:
    code = _round("reduce_over_rebound(get_tp_group(), self.t)")
    code = code.replace("class S:", REBOUND[form] + "class S:")
    found = run(program_of, code)
    assert lines(found) == [_line(code, "reduce_over_rebound(get_tp_group(), self.t)")]
    assert found[0].groups == ()


# The default group's handle (`dist.group.WORLD`, or `group=None`) is the world, handed
# through a helper's parameter too: every rank id varies over it.
def test_the_default_groups_handle_is_the_world(program_of) -> None:
    code = _round(
        "reduce_over_world(self.t, dist.group.WORLD)", "dist.all_reduce(self.t, group=None)"
    )
    found = run(program_of, code.replace("class S:", WORLD + "class S:"))
    assert [d.groups for d in found] == [("world",), ("world",)]


WORLD = "def reduce_over_world(x, group):\n    dist.all_reduce(x, group=group)\n\n"


def test_a_field_of_a_getters_result_names_its_group_only_as_a_handle(program_of) -> None:
    # `self.stage.buffer` is data, not the pipeline group: the group is `self.other`'s.
    code = _round("dist.all_reduce(self.stage.buffer, group=self.other.device_group)")
    found = run(program_of, code)
    assert [d.groups for d in found] == [()]
