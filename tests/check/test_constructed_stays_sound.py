"""What a constructed argument and a memo attribute must not be taken to say: a class whose
`isinstance` answer a base outside the program or a metaclass gives, a `__new__` that hands back
another class's object, a field default a subclass or an outside base overrides; and a flag, a
fresh local object or an attribute another method resets, which are no cache. Each program
keeps its blocking call, uncached (a reviewer's programs, each seen failing on the first
versions of `analysis.instances` and `analysis.memo`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _run

STILL_REACHED = {
    "abc_register": (
        "mod.loop",
        """
        import abc

        class Action(abc.ABC):
            pass

        class Free:
            pass

        Action.register(Free)

        def apply(action):
            if isinstance(action, Action):
                time.sleep(1)  # REAL: Free is registered

        def loop():
            while True:
                apply(Free())
                dist.barrier()
        """,
    ),
    "runtime_protocol": (
        "mod.loop",
        """
        from typing import Protocol, runtime_checkable

        @runtime_checkable
        class Closable(Protocol):
            def close(self): ...

        class Free:
            def close(self):
                pass

        def apply(action):
            if isinstance(action, Closable):
                time.sleep(1)  # REAL: structural check passes

        def loop():
            while True:
                apply(Free())
                dist.barrier()
        """,
    ),
    "metaclass_instancecheck": (
        "mod.loop",
        """
        class Meta(type):
            def __instancecheck__(cls, obj):
                return True

        class Anything(metaclass=Meta):
            pass

        class Free:
            pass

        def apply(action):
            if isinstance(action, Anything):
                time.sleep(1)  # REAL: metaclass hook says True

        def loop():
            while True:
                apply(Free())
                dist.barrier()
        """,
    ),
    "dataclass_field_default_override": (
        "mod.loop",
        """
        import dataclasses

        @dataclasses.dataclass
        class Base:
            key: str
            req: object = None

        @dataclasses.dataclass
        class Params(Base):
            req: object = dataclasses.field(default="x")

        def match(params):
            if params.req is None:
                return 0
            time.sleep(1)  # REAL: req is "x"

        def loop(k):
            while True:
                match(Params(key=k))
                dist.barrier()
        """,
    ),
    "plain_subclass_of_dataclass": (
        "mod.loop",
        """
        import dataclasses

        @dataclasses.dataclass
        class Base:
            key: str
            req: object = "x"

        class Params(Base):
            req: object = None   # not a dataclass: Base's __init__ stores "x"

        def match(params):
            if params.req is None:
                return 0
            time.sleep(1)  # REAL

        def loop(k):
            while True:
                match(Params(key=k))
                dist.barrier()
        """,
    ),
    "post_init_outside": (
        "mod.loop",
        """
        import dataclasses
        from lib import Validated

        @dataclasses.dataclass
        class Params(Validated):
            key: str
            req: object = None

        def match(params):
            if params.req is None:
                return 0
            time.sleep(1)  # REAL if Validated.__post_init__ sets req

        def loop(k):
            while True:
                match(Params(key=k))
                dist.barrier()
        """,
    ),
    "annotated_factory": (
        "mod.loop",
        """
        class Action:
            pass

        class Backup(Action):
            pass

        def make(queue) -> Action:
            return queue.pop()

        def apply(action):
            if isinstance(action, Backup):
                time.sleep(1)  # REAL

        def loop(queue):
            while True:
                apply(make(queue))
                dist.barrier()
        """,
    ),
    "classmethod_factory": (
        "mod.loop",
        """
        class Action:
            @classmethod
            def create(cls, kind):
                return Backup() if kind else cls()

        class Backup(Action):
            pass

        def apply(action):
            if isinstance(action, Backup):
                time.sleep(1)  # REAL

        def loop(kind):
            while True:
                apply(Action.create(kind))
                dist.barrier()
        """,
    ),
    "subclass_instance_via_new": (
        "mod.loop",
        """
        class Action:
            def __new__(cls, kind):
                return super().__new__(Backup if kind else cls)

        class Backup(Action):
            pass

        def apply(action):
            if isinstance(action, Backup):
                time.sleep(1)  # REAL

        def loop(kind):
            while True:
                apply(Action(kind))
                dist.barrier()
        """,
    ),
}

NOT_CACHED = {
    "flag_early_return_is_not_a_memo": (
        "mod.S.event_loop",
        """
        class S:
            def step(self, batch):
                if self.paused:
                    return
                subprocess.run(["x"])
                if batch.done:
                    self.paused = False

            def event_loop(self, batch):
                while True:
                    self.step(batch)
                    dist.barrier()
        """,
    ),
    "local_object_memo": (
        "mod.S.event_loop",
        """
        class Out:
            def __init__(self):
                self.buf = None

        class S:
            def step(self):
                out = Out()
                if out.buf is None:
                    out.buf = subprocess.run(["x"])
                return out

            def event_loop(self):
                while True:
                    self.step()
                    dist.barrier()
        """,
    ),
    "reset_every_round_memo": (
        "mod.S.event_loop",
        """
        class S:
            def batch(self):
                if self._cur is None:
                    self._cur = subprocess.run(["x"])
                return self._cur

            def finish(self):
                self._cur = None

            def event_loop(self):
                while True:
                    self.batch()
                    dist.barrier()
                    self.finish()
        """,
    ),
}


@pytest.mark.parametrize("program", sorted(STILL_REACHED))
def test_the_branch_may_still_run(tmp_path: Path, program: str):
    round_name, code = STILL_REACHED[program]
    _, result = _run(tmp_path, code, {"rounds": [round_name]})
    assert result.findings


@pytest.mark.parametrize("program", sorted(NOT_CACHED))
def test_no_cache_is_claimed(tmp_path: Path, program: str):
    round_name, code = NOT_CACHED[program]
    _, result = _run(tmp_path, code, {"rounds": [round_name]})
    assert [f.extra.get("cadence") for f in result.findings] == [None]
