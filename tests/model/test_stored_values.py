"""Values stored and taken out again: a function stored into a container (`d[k] = f`) or into
an object's attribute from outside its class (`job.callback = f`) is what a later call through
the container or the attribute runs; an instance attribute assigned by methods of several
classes of the MRO holds what each assigns; methods of builtin values (`" ".join`, `{}.items`,
`self.q = []` then `self.q.append`) resolve to the builtin's method."""

from __future__ import annotations

from tests.conftest import callees

STORES = """
def func2():
    pass


def on_done():
    pass


HANDLERS = {}


def register(key="a"):
    HANDLERS[key] = func2


def dispatch():
    HANDLERS["a"]()


def local_table():
    table = {}
    table["x"] = on_done
    table["x"]()


class Job:
    def run(self):
        self.callback()


def wire():
    job = Job()
    job.callback = on_done
    job.run()


class A:
    def func(self):
        self.child()


class B(A):
    def __init__(self):
        self.child = self.func2

    def func2(self):
        pass


def use_b():
    B().func()
"""


def test_a_function_stored_into_a_dict_is_reached_through_it(program_of):
    program = program_of({"m.py": STORES})
    assert callees(program, "m.dispatch", "call") == {"m.func2"}
    assert callees(program, "m.local_table", "call") == {"m.on_done"}


def test_a_function_stored_into_an_attribute_from_outside_is_reached(program_of):
    program = program_of({"m.py": STORES})
    assert callees(program, "m.Job.run", "call") == {"m.on_done"}


def test_a_bound_method_a_subclass_stores_is_reached_from_the_base(program_of):
    program = program_of({"m.py": STORES})
    assert callees(program, "m.A.func", "call") == {"m.B.func2"}


BUILTINS = """
def text():
    " ".join(["1", "2"])
    "a b".split(" ")


def table():
    d = {"a": 1}
    d.items()
    return [x for x in d]


class Queue:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)
"""


def test_methods_of_builtin_values_resolve_to_the_builtin(program_of):
    program = program_of({"m.py": BUILTINS})
    assert callees(program, "m.text", "call") == {"<builtin>.str().join", "<builtin>.str().split"}
    assert callees(program, "m.table", "call") == {"<builtin>.dict().items"}
    assert callees(program, "m.Queue.push", "call") == {"<builtin>.list().append"}
    assert not [u for u in program.unresolved if u[0].startswith("m.")]


CHOSEN = """
class Npu:
    def step(self):
        pass


class Cuda:
    def step(self):
        pass


class Default:
    def step(self):
        pass


class Runner:
    def __init__(self, npu, given=None):
        self.worker = Npu() if npu else Cuda()
        self.fallback = given or Default()

    def run(self):
        self.worker.step()
        self.fallback.step()
"""


def test_a_conditional_expression_or_an_or_holds_any_side(program_of):
    program = program_of({"m.py": CHOSEN})
    assert callees(program, "m.Runner.run", "call") == {
        "m.Npu.step",
        "m.Cuda.step",
        "m.Default.step",
    }


def test_an_attribute_holds_what_a_call_returns_not_the_function_called(program_of):
    """`self.model = get_model(cfg)` stores the model get_model builds; calling `self.model(x)`
    runs the model, not get_model again (its loading would seem to run every round). A function
    handed to the call (`functools.partial(f, 1)`, `MethodType(g, self)`) may be what is stored,
    and a function stored by reference (`self.cb = self._finish`) is what a call runs."""
    program = program_of(
        {
            "m.py": """
            import functools

            import torch


            def get_model(cfg) -> torch.nn.Module:
                open(cfg)
                return load(cfg)


            def step(n):
                pass


            class Runner:
                def __init__(self, cfg):
                    self.model = get_model(cfg)
                    self.stepper = functools.partial(step, 1)
                    self.cb = self._finish

                def _finish(self):
                    pass

                def event_loop(self):
                    while True:
                        self.model(1)
                        self.stepper()
                        self.cb()
            """
        }
    )
    reached = callees(program, "m.Runner.event_loop")
    assert "m.get_model" not in reached
    assert {"m.step", "m.Runner._finish"} <= reached


def test_a_library_function_a_method_returns_is_what_the_attribute_calls(program_of):
    """`self.gather = self.pick()` where `pick` returns `dist.all_gather_into_tensor` (or an
    older name, by what the installed library has): calling `self.gather(out, inp)` runs that
    library function, a collective the round meets there."""
    program = program_of(
        {
            "m.py": """
            import torch.distributed as dist


            class Backend:
                def __init__(self):
                    self.gather = self.pick()

                @classmethod
                def pick(cls):
                    if hasattr(dist, "all_gather_into_tensor"):
                        return dist.all_gather_into_tensor
                    return dist._all_gather_base

                def all_gather(self, out, inp):
                    return self.gather(out, inp)
            """
        }
    )
    assert callees(program, "m.Backend.all_gather") == {
        "torch.distributed.all_gather_into_tensor",
        "torch.distributed._all_gather_base",
    }
