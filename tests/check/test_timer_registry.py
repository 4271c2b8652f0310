"""A registry of timers, the shape of DeepSpeed's `SynchronizedWallClockTimer` and
megatron-core's `Timers`: calling the registry (`self.timers(name)`) runs its `__call__`,
which files a timer in a dict attribute (`self.timers[name] = self.Timer(name)`) and returns
it (`return self.timers[name]`); a timer appends event pairs to a list attribute
(`self.event_timers.append(CudaEventTimer(start, end))`) and reads them back in a loop or a
comprehension, whose `get_elapsed_msec` waits on a stored event (`self.end_event.synchronize()`).
Each hop alone, then the whole chain from a round."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked
from tests.conftest import callees

# Two classes define each timer method, so no unique-name fallback can stand in for typing.
_TWIN = """
class Other:
    def stop(self):
        pass

    def get(self):
        pass
"""


def test_calling_an_instance_gives_what_its_call_returns(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": _TWIN
            + """
class Timer:
    def stop(self):
        pass

class Timers:
    def __call__(self, name):
        return Timer()

class Engine:
    def __init__(self):
        self.timers = Timers()

    def run(self):
        self.timers("x").stop()
""",
        }
    )
    assert "pkg.m.Timer.stop" in callees(program, "pkg.m.Engine.run", "call")


def test_a_dict_attribute_filed_in_one_method_gives_its_elements_in_another(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": _TWIN
            + """
class Timers:
    class Timer:
        def stop(self):
            pass

    def __init__(self):
        self.timers = {}

    def __call__(self, name):
        if name not in self.timers:
            self.timers[name] = self.Timer()
        return self.timers[name]

class Engine:
    def __init__(self):
        self.timers = Timers()

    def run(self):
        self.timers("x").stop()
""",
        }
    )
    assert "pkg.m.Timers.Timer.stop" in callees(program, "pkg.m.Engine.run", "call")


_LIST = (
    _TWIN
    + """
class Pair:
    def get(self):
        pass

class Timer:
    def __init__(self):
        self.event_timers = []

    def stop(self):
        self.event_timers.append(Pair())
"""
)


def test_a_list_attribute_appended_to_gives_its_elements_to_a_loop(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": _LIST
            + """
    def elapsed(self):
        for et in self.event_timers:
            et.get()
""",
        }
    )
    assert "pkg.m.Pair.get" in callees(program, "pkg.m.Timer.elapsed", "call")


def test_a_list_attribute_appended_to_gives_its_elements_to_a_comprehension(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": _LIST
            + """
    def elapsed(self):
        return sum([et.get() for et in self.event_timers])
""",
        }
    )
    assert "pkg.m.Pair.get" in callees(program, "pkg.m.Timer.elapsed", "call")


def test_a_comprehension_variable_shadows_a_global_of_its_name(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
class Pair:
    def get(self):
        pass

et = Pair()

def f(xs):
    return [et.get() for et in xs]
""",
        }
    )
    assert "pkg.m.Pair.get" not in callees(program, "pkg.m.f", "call")


def test_an_event_stored_from_a_constructor_parameter_blocks_on_synchronize(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        class CudaEventTimer:
            def __init__(self, start_event, end_event):
                self.start_event = start_event
                self.end_event = end_event

            def get_elapsed_msec(self):
                self.end_event.synchronize()  # expect
                return self.start_event.elapsed_time(self.end_event)

        def event_loop(et):
            while True:
                et = CudaEventTimer(torch.cuda.Event(), torch.cuda.Event())
                et.get_elapsed_msec()
                dist.barrier()
        """,
    )
    # The stored event is not typed (its parameter has no annotation): `synchronize` on an
    # untyped receiver is matched by its name, at low confidence.
    assert [(f.extra["blocking"]["kind"], f.extra["confidence"]) for f in findings] == [
        ("device-sync", "low")
    ]


def test_the_timer_registry_chain_from_a_round(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        _TWIN
        + """
        class Other2:
            def elapsed(self):
                return 0

            def get_elapsed_msec(self):
                return 0

        class CudaEventTimer:
            def __init__(self, start_event, end_event):
                self.start_event = start_event
                self.end_event = end_event

            def get_elapsed_msec(self):
                self.end_event.synchronize()  # expect
                return self.start_event.elapsed_time(self.end_event)

        class SynchronizedWallClockTimer:
            class Timer:
                def __init__(self, name):
                    self.event_timers = []
                    self.start_event = None

                def start(self):
                    self.start_event = torch.cuda.Event(enable_timing=True)
                    self.start_event.record()

                def stop(self):
                    end_event = torch.cuda.Event(enable_timing=True)
                    end_event.record()
                    self.event_timers.append(CudaEventTimer(self.start_event, end_event))

                def _get_elapsed_msec(self):
                    records = [et.get_elapsed_msec() for et in self.event_timers]
                    self.event_timers.clear()
                    return sum(records)

                def elapsed(self, reset=True):
                    return self._get_elapsed_msec()

            def __init__(self):
                self.timers = {}

            def __call__(self, name):
                if name not in self.timers:
                    self.timers[name] = self.Timer(name)
                return self.timers[name]

        class PipelineEngine:
            def __init__(self):
                self.timers = SynchronizedWallClockTimer()

            def train_batch(self):
                while True:
                    self.timers("train").start()
                    self.timers("train").stop()
                    self.timers("train").elapsed(reset=True)
                    dist.barrier()
        """,
    )
    chain = [step["function"].rsplit(".", 2)[-2:] for step in findings[0].extra["chain"]]
    assert chain == [
        ["PipelineEngine", "train_batch"],
        ["Timer", "elapsed"],
        ["Timer", "_get_elapsed_msec"],
        ["CudaEventTimer", "get_elapsed_msec"],
    ]
