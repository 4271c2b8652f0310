"""Whether a helper launches device work does not depend on which caller asked first."""

from __future__ import annotations

from rankguard.analysis.launches import Launches

CHAIN = "\n".join(
    [f"def f{i}(rows):\n    f{i + 1}(rows)\n" for i in range(7)]
    + ["def f7(rows):\n    rows.append(1)\n", "def use(rows):\n    f0(rows)\n    f3(rows)\n"]
)


def _quiet(program, name: str) -> bool:
    launches = Launches(program)
    call = next(r for r in program.calls["m.use"] if r.call.target == (name,))
    return launches.quiet_call(call.call, call.targets)


def test_a_deep_chain_of_host_helpers_is_quiet_whichever_is_asked_first(program_of):
    program = program_of({"m.py": CHAIN})
    launches = Launches(program)
    calls = {r.call.target[0]: r for r in program.calls["m.use"]}
    first = launches.quiet_call(calls["f0"].call, calls["f0"].targets)
    then = launches.quiet_call(calls["f3"].call, calls["f3"].targets)
    assert (first, then) == (True, True)
    assert _quiet(program, "f3") and _quiet(program, "f0")
