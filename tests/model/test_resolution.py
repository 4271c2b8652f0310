"""Each resolution rule of the call graph, as a small program beside the edges it must yield."""

from __future__ import annotations

from tests.conftest import callees


def test_functions_methods_and_nested_functions(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                def helper():
                    pass

                def outer():
                    def inner():
                        helper()
                    inner()

                class C:
                    def a(self):
                        self.b()
                    def b(self):
                        pass
            """,
        }
    )
    assert callees(program, "pkg.m.outer") == {"pkg.m.outer.<locals>.inner"}
    assert callees(program, "pkg.m.outer.<locals>.inner") == {"pkg.m.helper"}
    assert callees(program, "pkg.m.C.a") == {"pkg.m.C.b"}


def test_imports_absolute_relative_alias_and_reexport(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "from .impl import work as exported\n",
            "pkg/impl.py": "def work():\n    pass\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/user.py": """
                import pkg.impl
                import pkg.impl as alias
                from .. import exported
                from ..impl import work as w
                from pkg import exported as again

                def go():
                    pkg.impl.work()
                    alias.work()
                    exported()
                    w()
                    again()
            """,
        }
    )
    edges = [(c, d["line"]) for _, c, d in program.graph.out_edges("pkg.sub.user.go", data=True)]
    assert sorted(edges) == [("pkg.impl.work", line) for line in range(8, 13)]


def test_self_method_through_mixin_in_another_module(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/mixin.py": """
                class PPMixin:
                    def event_loop_pp(self):
                        self.recv_batch()
            """,
            "pkg/sched.py": """
                from pkg.mixin import PPMixin

                class Scheduler(PPMixin):
                    def recv_batch(self):
                        pass
            """,
        }
    )
    assert callees(program, "pkg.mixin.PPMixin.event_loop_pp") == {"pkg.sched.Scheduler.recv_batch"}


def test_annotated_self_in_mixin(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/mixin.py": """
                from __future__ import annotations
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from pkg.sched import Scheduler

                class M:
                    def loop(self: Scheduler):
                        self.step()
            """,
            "pkg/sched.py": """
                from pkg.mixin import M

                class Scheduler(M):
                    def step(self):
                        pass
            """,
        }
    )
    assert callees(program, "pkg.mixin.M.loop") == {"pkg.sched.Scheduler.step"}


def test_super_and_constructors(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                class Base:
                    def __init__(self):
                        pass
                    def run(self):
                        pass

                class Child(Base):
                    def __init__(self):
                        super().__init__()
                    def run(self):
                        super().run()

                def make():
                    return Child()
            """,
        }
    )
    assert callees(program, "pkg.m.Child.__init__") == {"pkg.m.Base.__init__"}
    assert callees(program, "pkg.m.Child.run") == {"pkg.m.Base.run"}
    assert callees(program, "pkg.m.make") == {"pkg.m.Child.__init__"}


def test_attribute_types_from_assignments_annotations_and_returns(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/parts.py": """
                class Receiver:
                    def recv(self):
                        pass

                class Group:
                    def all_reduce(self):
                        pass
                    @property
                    def peer(self) -> "Receiver":
                        return Receiver()

                _GROUP = None

                def get_group() -> Group:
                    return _GROUP
            """,
            "pkg/sched.py": """
                from typing import Optional
                from pkg.parts import Receiver, Group, get_group

                class Scheduler:
                    cache: Optional[Receiver]

                    def __init__(self, group: Group):
                        self.group = group
                        self.init_parts()

                    def init_parts(self):
                        self.receiver = Receiver()
                        self.tp = get_group()

                    def loop(self):
                        self.receiver.recv()
                        self.group.all_reduce()
                        self.tp.all_reduce()
                        self.cache.recv()
                        self.tp.peer.recv()
                        get_group().all_reduce()
            """,
        }
    )
    got = sorted(
        (d["line"], c) for _, c, d in program.graph.out_edges("pkg.sched.Scheduler.loop", data=True)
    )
    assert got == [
        (16, "pkg.parts.Receiver.recv"),
        (17, "pkg.parts.Group.all_reduce"),
        (18, "pkg.parts.Group.all_reduce"),
        (19, "pkg.parts.Receiver.recv"),
        (20, "pkg.parts.Receiver.recv"),
        (21, "pkg.parts.Group.all_reduce"),
        (21, "pkg.parts.get_group"),
    ]


def test_fallback_edge_is_marked(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                class OnlyOne:
                    def very_specific(self):
                        pass

                def use(thing):
                    thing.very_specific()
            """,
        }
    )
    assert callees(program, "pkg.m.use", "fallback") == {"pkg.m.OnlyOne.very_specific"}
    assert callees(program, "pkg.m.use", "call") == set()


def test_an_event_or_stream_method_on_an_untyped_receiver_is_no_fallback(program_of):
    """`events[0].query()`, `stream.wait_event(e)`: CUDA events and streams, work handles and
    locks define these; the one program class that also does (an inference engine's `query`)
    is not what runs."""
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                class Engine:
                    def query(self, uid): pass
                    def record(self, x): pass
                    def wait_stream(self, s): pass
                    def elapsed_time(self, e): pass
                    def is_completed(self): pass
                    def acquire(self): pass

                def poll(events, stream, work, lock):
                    events[0].query()
                    events[0].record()
                    stream.wait_stream(stream)
                    events[0].elapsed_time(events[1])
                    work.is_completed()
                    lock.acquire()
            """,
        }
    )
    assert callees(program, "pkg.m.poll", "fallback") == set()


def test_callables_passed_as_values_are_callback_edges(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                import threading

                class Dispatcher:
                    def __init__(self, table):
                        self.table = table
                    def __call__(self, obj):
                        pass

                class S:
                    def __init__(self):
                        self.t = threading.Thread(target=self.watch)
                        self.dispatch = Dispatcher([(int, self.on_int)])
                    def watch(self):
                        pass
                    def on_int(self, x):
                        pass
                    def loop(self):
                        self.dispatch(1)
            """,
        }
    )
    assert callees(program, "pkg.m.S.__init__", "callback") == {"pkg.m.S.watch", "pkg.m.S.on_int"}
    # Calling the table reaches what it holds: a call edge, refined as a dispatch.
    dispatch = {
        c: d.get("via")
        for _, c, d in program.graph.out_edges("pkg.m.S.loop", data=True)
        if d["kind"] == "call"
    }
    assert dispatch == {"pkg.m.Dispatcher.__call__": None, "pkg.m.S.on_int": "dispatch"}


def test_unresolved_calls_are_kept_with_their_text(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                def f(x):
                    x.mystery_method_nobody_defines()
            """,
        }
    )
    assert ("pkg.m.f", "x.mystery_method_nobody_defines", "pkg/m.py", 2) in program.unresolved


def test_externals_keep_their_import_path(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                import torch.distributed as dist
                from torch.distributed import all_reduce
                import torch

                def f(t):
                    dist.broadcast(t, 0)
                    all_reduce(t)
                    torch.distributed.barrier()
                    print("x")
            """,
        }
    )
    assert callees(program, "pkg.m.f") == {
        "torch.distributed.broadcast",
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
        "<builtin>.print",
    }


def test_module_global_rebound_inside_a_function(program_of):
    # deepspeed.comm's shape: `cdb = None` at module level, set by `init_distributed`.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/backend.py": """
                class TorchBackend:
                    def all_reduce(self, t):
                        pass
            """,
            "pkg/comm.py": """
                from pkg.backend import TorchBackend

                cdb = None

                def init_distributed():
                    global cdb
                    cdb = TorchBackend()

                def all_reduce(t):
                    return cdb.all_reduce(t)
            """,
        }
    )
    assert callees(program, "pkg.comm.all_reduce") == {"pkg.backend.TorchBackend.all_reduce"}


def test_class_level_dispatch_table_through_method_type(program_of):
    # deepspeed's PipelineEngine: instructions run through a class-level table of methods.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/engine.py": """
                from types import MethodType

                class Engine:
                    def _exec_send(self):
                        pass

                    def _exec_recv(self):
                        pass

                    _INSTRUCTION_MAP = {"send": _exec_send, "recv": _exec_recv}

                    def _exec_schedule(self, cmds):
                        for cmd in cmds:
                            self._exec_instr = MethodType(self._INSTRUCTION_MAP[cmd], self)
                            self._exec_instr()
            """,
        }
    )
    dispatched = {
        callee
        for _, callee, data in program.graph.out_edges(
            "pkg.engine.Engine._exec_schedule", data=True
        )
        if data.get("via") == "dispatch"
    }
    assert dispatched == {"pkg.engine.Engine._exec_send", "pkg.engine.Engine._exec_recv"}


def test_method_order_is_c3(program_of):
    # PyCG mro/parents_same_superclass: D(B, C), B(A), C(A): C3 puts C before A.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                class A:
                    def func(self):
                        pass

                class B(A):
                    pass

                class C(A):
                    def func(self):
                        pass

                class D(B, C):
                    pass

                def use():
                    D().func()
            """,
        }
    )
    assert program.mro("pkg.m.D") == ["pkg.m.D", "pkg.m.B", "pkg.m.C", "pkg.m.A"]
    # D() has no __init__ in the program: the constructor edge names the class itself.
    assert callees(program, "pkg.m.use") == {"pkg.m.D", "pkg.m.C.func"}


def test_a_subscripted_base_is_the_class_it_subscripts(program_of):
    # `class Sampling(Spec[int])`, `class Spec(Generic[T])`: the parameters are for type
    # checkers; the base is `Spec`, whose methods the subclass inherits.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                from typing import Generic, TypeVar

                T = TypeVar("T")

                class Spec(Generic[T]):
                    def describe(self):
                        pass

                class Sampling(Spec[int]):
                    pass

                def use():
                    Sampling().describe()
            """,
        }
    )
    assert program.mro("pkg.m.Sampling") == ["pkg.m.Sampling", "pkg.m.Spec"]
    assert program.classes["pkg.m.Spec"].external_bases == ["typing.Generic"]
    assert "pkg.m.Spec.describe" in callees(program, "pkg.m.use")


def test_an_annotated_container_attribute_has_its_value_s_methods(program_of):
    # `self._done: set[int] = set()`: the annotation names the elements; the value is a set,
    # whose `add` is the builtin's. An annotation the model cannot place defers to the value.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                from collections import deque

                class Req:
                    def run(self):
                        pass

                class W:
                    def __init__(self):
                        self._done: set[int] = set()
                        self._reqs: list[Req] = []
                        self._queue: deque[Req] = deque()
                        self._table: "Table" = dict()

                    def m(self):
                        self._done.add(1)
                        self._reqs.append(Req())
                        self._queue.popleft()
                        self._table.pop(1)
                        for r in self._reqs:
                            r.run()
            """,
        }
    )
    found = callees(program, "pkg.m.W.m")
    assert {
        "<builtin>.set().add",
        "<builtin>.list().append",
        "collections.deque().popleft",
        "<builtin>.dict().pop",
        "pkg.m.Req.run",
    } <= found


def test_a_parameter_or_local_shadows_a_global(program_of):
    # PyCG external/attribute_assigned: `a` inside `fn` is the parameter, not the global.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                class Cls:
                    def __call__(self):
                        pass

                a = Cls()

                def fn(a):
                    a()

                def local_too():
                    a = unknown_factory()
                    a()
            """,
        }
    )
    assert callees(program, "pkg.m.fn") == set()
    assert callees(program, "pkg.m.local_too") == set()


def test_calls_through_a_parameter_reach_what_callers_pass(program_of):
    # PyCG args/assigned_call; sglang's `run_with_timeout(fn)`-style helpers.
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                def step():
                    pass

                def run(fn, *, other=None):
                    fn()

                class Loop:
                    def tick(self):
                        pass
                    def drive(self, callback):
                        callback()
                    def go(self):
                        run(step)
                        self.drive(self.tick)
            """,
        }
    )
    edges = {
        (caller, callee, data.get("via"))
        for caller in ("pkg.m.run", "pkg.m.Loop.drive")
        for _, callee, data in program.graph.out_edges(caller, data=True)
    }
    assert edges == {
        ("pkg.m.run", "pkg.m.step", "argument"),
        ("pkg.m.Loop.drive", "pkg.m.Loop.tick", "argument"),
    }


def test_tuple_unpacking_keeps_each_value(program_of):
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                def f1():
                    pass

                def f2():
                    pass

                def use():
                    a, b = f1, f2
                    a()
                    b()
            """,
        }
    )
    assert callees(program, "pkg.m.use", "call") == {"pkg.m.f1", "pkg.m.f2"}


def test_an_enum_member_is_an_instance_of_its_enum(program_of):
    """`Mode.IDLE` is a `Mode` at run time, whatever its class body assigns (`auto()`, a
    literal): a method called on a member, or on an attribute some code sets to one, is the
    enum's own method, not also a method of what `auto()` returns or of `enum.IntEnum`'s
    attribute of that name."""
    program = program_of(
        {
            "pkg/__init__.py": "",
            "pkg/m.py": """
                from dataclasses import dataclass
                from enum import Enum, IntEnum, auto

                class Mode(IntEnum):
                    EXTEND = auto()
                    IDLE = auto()

                    def is_extend(self):
                        return self == Mode.EXTEND

                class Plain(Enum):
                    A = 0
                    B = 1

                    def is_a(self):
                        return self == Plain.A

                @dataclass
                class Batch:
                    mode: Mode
                    plain: Plain

                def relabel(batch: Batch):
                    batch.mode = Mode.EXTEND
                    batch.plain = Plain.B

                def member():
                    Mode.IDLE.is_extend()

                def literal_member():
                    Plain.A.is_a()

                def local():
                    m = Mode.IDLE
                    m.is_extend()

                def field(batch: Batch):
                    batch.mode.is_extend()
                    batch.plain.is_a()
            """,
        }
    )
    assert callees(program, "pkg.m.member") == {"pkg.m.Mode.is_extend"}
    assert callees(program, "pkg.m.literal_member") == {"pkg.m.Plain.is_a"}
    assert callees(program, "pkg.m.local") == {"pkg.m.Mode.is_extend"}
    assert callees(program, "pkg.m.field") == {"pkg.m.Mode.is_extend", "pkg.m.Plain.is_a"}
