"""Methods looked up by a computed name: `getattr(self.worker, method)(*args)`, the shape of an
RPC loop that runs whatever method a message names. The call may run any public method of the
receiver's class (or, for `f"_handle_{kind}"`, any method with that prefix), as `fallback`
edges; a class whose `__getattr__` forwards to an attribute lends that attribute's methods."""

from __future__ import annotations

from tests.conftest import callees

CODE = """
from typing import Optional


class Worker:
    def execute_model(self, batch):
        pass

    def load_model(self):
        pass

    def _private(self):
        pass

    @staticmethod
    def run_process(config):
        pass


class GpuWorker(Worker):
    def execute_model(self, batch):
        pass


class Wrapper:
    def __init__(self):
        self.worker: Optional[Worker] = None

    def __getattr__(self, attr):
        return getattr(self.worker, attr)

    def init_worker(self):
        pass


class Proc:
    def __init__(self):
        self.worker = Wrapper()

    def busy_loop(self, queue):
        while True:
            method, args = queue.get()
            func = getattr(self.worker, method)
            func(*args)

    def handle(self, kind):
        handler = getattr(self, f"_handle_{kind}")
        handler()

    def _handle_add(self):
        pass

    def _handle_abort(self):
        pass

    def handle_rpc(self, request):
        func = getattr(self, request.method)
        func()

    def other(self):
        pass

    def literal(self):
        method = getattr(self, "other")
        method()
"""


def test_a_method_named_at_run_time_may_be_any_public_method(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.Proc.busy_loop", "fallback") >= {
        "m.Wrapper.init_worker",
        "m.Worker.execute_model",
        "m.GpuWorker.execute_model",
        "m.Worker.load_model",
    }
    assert "m.Worker._private" not in callees(program, "m.Proc.busy_loop")
    assert "m.Worker.run_process" not in callees(program, "m.Proc.busy_loop")


def test_a_name_with_a_constant_prefix_narrows_to_those_methods(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.Proc.handle", "fallback") == {
        "m.Proc._handle_abort",
        "m.Proc._handle_add",
    }


def test_an_unconstrained_name_on_its_own_instance_is_not_followed(program_of):
    program = program_of({"m.py": CODE})
    assert callees(program, "m.Proc.handle_rpc", "fallback") == set()


def test_a_literal_name_stays_an_exact_call(program_of):
    program = program_of({"m.py": CODE})
    assert "m.Proc.other" in callees(program, "m.Proc.literal", "call")
    assert callees(program, "m.Proc.literal", "fallback") == set()


def test_a_forwarding_class_that_reads_its_own_property_terminates(program_of):
    """`LazyValue.__getattr__` forwards to `self.value`, a property that reads attributes of
    the same class: typing the forwarded value must not recurse."""
    program = program_of(
        {
            "m.py": """
                class LazyValue:
                    def __init__(self, creator):
                        self._creator = creator
                        self._value = None

                    def __getattr__(self, name):
                        return getattr(self.value, name)

                    @property
                    def value(self):
                        if self._creator is not None:
                            self._value = self._creator()
                        return self._value

                def use(lazy: LazyValue):
                    lazy.missing()
            """
        }
    )
    assert not program.errors
    assert callees(program, "m.use") == set()
