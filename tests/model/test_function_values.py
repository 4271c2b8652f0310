"""Functions as values: a lambda is a function of its own (named `<lambdaN>` in its scope, as
PyCG names it); a callable passed as an argument reaches the callee's call of that parameter
however many parameters it went through, including edges found through other arguments."""

from __future__ import annotations

from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog
from tests.conftest import callees

LAMBDAS = """
import torch.distributed as dist


def func1():
    pass


def func2():
    pass


square = lambda x: x + 1
square(1)

call_it = lambda f: f()
call_it(func1)
call_it(func2)


def run(step):
    step()


def other(step):
    step()


class Worker:
    def __init__(self):
        self.on_done = lambda: dist.barrier()

    def event_loop(self):
        while True:
            run(lambda: dist.all_reduce(None))
            self.on_done()


def elsewhere():
    other(lambda: func2())
"""


def test_a_stored_lambda_is_a_function_that_calls_reach(program_of):
    program = program_of({"m.py": LAMBDAS})
    assert {"m.<lambda1>", "m.<lambda2>"} <= callees(program, "m", "call")
    assert callees(program, "m.<lambda2>", "call") == {"m.func1", "m.func2"}


def test_a_lambda_passed_as_an_argument_binds_at_its_call_site_only(program_of):
    program = program_of({"m.py": LAMBDAS})
    loop_lambda = "m.Worker.event_loop.<locals>.<lambda1>"
    assert callees(program, "m.run", "call") == {loop_lambda}
    assert callees(program, "m.other", "call") == {"m.elsewhere.<locals>.<lambda1>"}
    assert callees(program, loop_lambda, "call") == {"torch.distributed.all_reduce"}
    # An attribute holding a lambda: calling it runs the lambda.
    assert callees(program, "m.Worker.event_loop", "call") >= {
        "m.run",
        "m.Worker.__init__.<locals>.<lambda1>",
    }


def test_a_round_meets_collectives_inside_lambdas(program_of):
    program = program_of({"m.py": LAMBDAS})
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert sorted(c.site.callee for c in rnd.collectives) == [
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
    ]


CHAINED = """
def nested_func():
    pass


def param_func(a):
    a()


def func(a):
    a(nested_func)


def func3(a):
    a()


def func2(a, b):
    a()
    func3(b)


def func1(a, b, c):
    a()
    func2(b, c)


def main():
    c = func
    c(param_func)
    func1(lambda: 1, lambda: 2, lambda: 3)


class MyClass:
    def func3(self):
        pass

    def func2(self, a):
        a()

    def func1(self, a, b):
        a(b)


def use():
    obj = MyClass()
    obj.func1(obj.func2, obj.func3)
"""


def test_a_callable_passed_down_several_parameters_reaches_the_call(program_of):
    program = program_of({"m.py": CHAINED})
    assert callees(program, "m.func1", "call") == {"m.func2", "m.main.<locals>.<lambda1>"}
    assert callees(program, "m.func2", "call") == {"m.func3", "m.main.<locals>.<lambda2>"}
    assert callees(program, "m.func3", "call") == {"m.main.<locals>.<lambda3>"}


def test_edges_found_through_arguments_bring_their_own_arguments(program_of):
    program = program_of({"m.py": CHAINED})
    assert callees(program, "m.func", "call") == {"m.param_func"}
    assert callees(program, "m.param_func", "call") == {"m.nested_func"}
    assert callees(program, "m.MyClass.func1", "call") == {"m.MyClass.func2"}
    assert callees(program, "m.MyClass.func2", "call") == {"m.MyClass.func3"}


PER_SITE = """
import torch.distributed as dist


def with_timeout(fn):
    return fn()


def sync_names():
    with_timeout(lambda: dist.broadcast_object_list([]))


def sync_flags():
    with_timeout(lambda: dist.all_reduce(None))


def relay(fn):
    with_timeout(fn)


class S:
    def event_loop(self):
        while True:
            sync_names()
            relay(lambda: dist.barrier())
"""


def test_a_round_follows_only_the_callable_its_own_call_site_passes(program_of):
    """`with_timeout` is called with two lambdas: the model keeps both edges (PyCG's view), but
    a round entering it from `sync_names` meets only the lambda `sync_names` passes, and one
    passed down through `relay`'s parameter only the lambda given to `relay`."""
    program = program_of({"m.py": PER_SITE})
    assert len(callees(program, "m.with_timeout", "call")) == 3
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [c.site.callee for c in rnd.collectives] == [
        "torch.distributed.broadcast_object_list",
        "torch.distributed.barrier",
    ]
