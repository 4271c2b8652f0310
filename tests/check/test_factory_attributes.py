"""An attribute built by a factory method: `self.opt = self._make()`, where `_make` assigns a
local in its branches (`opt = A()` / `opt = B()`, a parameter rebound so too) and returns it.
The attribute holds what the local may hold, so `self.opt.step()` reaches `A.step`. And an
attribute's value set, cut to a few values, keeps the project's classes before library values:
five library optimizers stored before a project one do not hide the project's `step`."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_factory_returning_a_local_built_in_branches(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class A:
            def step(self):
                t = torch.ones(1, device="cuda")
                t.item()  # expect
                dist.all_reduce(t)

        class B:
            def step(self):
                pass

        class Engine:
            def __init__(self, fast):
                self.opt = self._make(fast)

            def _make(self, fast):
                if fast:
                    opt = A()
                else:
                    opt = B()
                return opt

            def run(self):
                while True:
                    self.opt.step()
                    dist.barrier()
        """,
    )


def test_a_factory_rebinding_its_parameter(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Zero:
            def step(self):
                t = torch.ones(1, device="cuda")
                t.item()  # expect
                dist.all_reduce(t)

        class Engine:
            def __init__(self, basic):
                self.opt = self._wrap(basic)

            def _wrap(self, optimizer):
                if optimizer is not None:
                    optimizer = Zero()
                return optimizer

            def run(self):
                while True:
                    self.opt.step()
                    dist.barrier()
        """,
    )


def test_library_values_do_not_crowd_out_a_project_class(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Mine:
            def step(self):
                t = torch.ones(1, device="cuda")
                t.item()  # expect
                dist.all_reduce(t)

        class Engine:
            def __init__(self, kind, params):
                if kind == 1:
                    self.opt = torch.optim.SGD(params)
                elif kind == 2:
                    self.opt = torch.optim.Adam(params)
                elif kind == 3:
                    self.opt = torch.optim.AdamW(params)
                elif kind == 4:
                    self.opt = torch.optim.RMSprop(params)
                elif kind == 5:
                    self.opt = torch.optim.Adagrad(params)
                else:
                    self.opt = Mine()

            def run(self):
                while True:
                    self.opt.step()
                    dist.barrier()
        """,
    )


# A local overwritten before the `return` no longer holds what it held: only the bindings that
# reach the `return` are what it returns (`opt = Base(); opt = FP16(opt); return opt`).
_WRAPPED = """
class Plain:
    def step(self):
        t = torch.ones(1, device="cuda")
        t.item(){plain}
        dist.all_reduce(t)

class Zero:
    def __init__(self, inner):
        self.inner = inner

    def step(self):
        t = torch.ones(1, device="cuda")
        t.item()  # expect
        dist.all_reduce(t)

def make(cfg, groups):
{body}

class Engine:
    def __init__(self, cfg, groups):
        self.optimizer = make(cfg, groups)

    def event_loop(self):
        while True:
            self.optimizer.step()
            dist.barrier()
"""


def _wrapped(body: str, plain_reaches: bool) -> str:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return _WRAPPED.format(body=indented, plain="  # expect" if plain_reaches else "")


def test_a_local_overwritten_in_sequence_returns_only_the_last(tmp_path: Path):
    body = """
opt = Plain()
opt = Zero(opt)
return opt
"""
    _assert_marked(tmp_path, _wrapped(body, plain_reaches=False))


def test_a_store_in_one_branch_joins_the_one_before(tmp_path: Path):
    body = """
opt = Plain()
if cfg:
    opt = Zero(opt)
return opt
"""
    _assert_marked(tmp_path, _wrapped(body, plain_reaches=True))


def test_a_store_in_a_loop_or_a_try_joins_the_one_before(tmp_path: Path):
    looped = """
opt = Plain()
for group in groups:
    opt = Zero(opt)
return opt
"""
    _assert_marked(tmp_path / "loop", _wrapped(looped, plain_reaches=True))
    tried = """
opt = Plain()
try:
    opt = Zero(opt)
except ValueError:
    pass
return opt
"""
    _assert_marked(tmp_path / "try", _wrapped(tried, plain_reaches=True))


def test_a_return_in_a_branch_sees_what_reaches_it_there(tmp_path: Path):
    body = """
opt = Plain()
if cfg:
    opt = Zero(opt)
    return opt
opt = Zero(opt)
return opt
"""
    _assert_marked(tmp_path, _wrapped(body, plain_reaches=False))
