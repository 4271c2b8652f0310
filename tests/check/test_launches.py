"""Whether a helper launches device work does not depend on which caller asked first."""

from __future__ import annotations

from rankguard.analysis.launches import Launches

CHAIN = "\n".join(
    [f"def f{i}(rows):\n    f{i + 1}(rows)\n" for i in range(7)]
    + ["def f7(rows):\n    rows.append(1)\n", "def use(rows):\n    f0(rows)\n    f3(rows)\n"]
)


def test_a_deep_chain_of_host_helpers_is_quiet_whichever_is_asked_first(program_of):
    program = program_of({"m.py": CHAIN})
    calls = {r.call.target[0]: r for r in program.calls["m.use"]}
    for order in (("f0", "f3"), ("f3", "f0")):
        launches = Launches(program)
        answers = [launches.quiet_call(calls[n].call, calls[n].targets) for n in order]
        assert answers == [True, True], order
