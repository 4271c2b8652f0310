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
