"""Ways a base's method runs on an object of a subclass that overrides it, each of which keeps
that subclass among the method's `self` (`model.hierarchy.running`): a class-body alias or
property of the method, a hand-on further up or down the MRO or inside a closure, a call of the
method taken from its class (`B.m(obj)`, `super(C, obj).m()`, `B.m.__get__(obj)`, a table, a
`getattr` on the class by a computed name). A fresh review found ten of them dropped by the
first version of the rule (each failed before 87caaf4); `partialmethod`, `module_table` and
`mixin_chain` were kept by it already and stay as guards."""

from __future__ import annotations

import pytest

from tests.conftest import callees

HEAD = """
import functools
import torch.distributed as dist
"""
CASES: dict[str, tuple[str, str, str]] = {}


def case(name: str, src: str, caller: str, want: str) -> None:
    CASES[name] = (src, caller, want)


# case: 1 alias in class body
case(
    "alias",
    """
class B:
    def m(self):
        self.n()
    run = m
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    C().run()
""",
    "m.B.m",
    "m.C.n",
)
# case: 2 handing-on in a class later in MRO than the override
case(
    "later_super",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def x(self):
        super().m()
class D(C):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    D().x()
""",
    "m.B.m",
    "m.D.n",
)
# case: 3 Base.m(obj) from a module function
case(
    "unbound_call_outside",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    B.m(C())
""",
    "m.B.m",
    "m.C.n",
)
# case: 4 super(C, obj).m() outside
case(
    "super_outside",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    c = C()
    super(C, c).m()
""",
    "m.B.m",
    "m.C.n",
)
# case: 5 B.m.__get__(obj)()
case(
    "get_descr",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    B.m.__get__(C())()
""",
    "m.B.m",
    "m.C.n",
)
# case: 6 partialmethod in class body
case(
    "partialmethod",
    """
class B:
    def m(self, x):
        self.n()
    def n(self): pass
class C(B):
    def m(self, x): pass
    go = functools.partialmethod(B.m, 1)
    def n(self): dist.barrier()
def main():
    C().go()
""",
    "m.B.m",
    "m.C.n",
)
# case: 7 private base class taken as value
case(
    "private_table",
    """
class _B:
    def m(self):
        self.n()
    def n(self): pass
class C(_B):
    def m(self): pass
    def n(self): dist.barrier()
TABLE = {1: _B.m}
def main():
    TABLE[1](C())
""",
    "m._B.m",
    "m.C.n",
)
# case: 8 module-level table of uppercase base (value ref in module body)
case(
    "module_table",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
TABLE = {1: B.m}
def main():
    TABLE[1](C())
""",
    "m.B.m",
    "m.C.n",
)
# case: 9 getattr(B, name)(obj)
case(
    "getattr_class",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main(name="m"):
    getattr(B, name)(C())
""",
    "m.B.m",
    "m.C.n",
)
# case: 10 nested function in subclass method hands on
case(
    "nested_handon",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class C(B):
    def m(self):
        def later():
            B.m(self)
        later()
    def n(self): dist.barrier()
def main():
    C().m()
""",
    "m.B.m",
    "m.C.n",
)
# case: 11 a mixin earlier in the MRO hands on past the override
case(
    "mixin_chain",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
class M:
    def m(self):
        super().m()
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
class D(M, C):
    pass
def main():
    D().m()
""",
    "m.B.m",
    "m.C.n",
)
# case: 12 property alias: p = property(m)
case(
    "property_of",
    """
class B:
    def m(self):
        return self.n()
    p = property(m)
    def n(self): pass
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    C().p
""",
    "m.B.m",
    "m.C.n",
)
# case: 13 a classmethod runs the method on an object it is handed
case(
    "classmethod_calls",
    """
class B:
    def m(self):
        self.n()
    def n(self): pass
    @classmethod
    def run_on(cls, obj):
        B.m(obj)
class C(B):
    def m(self): pass
    def n(self): dist.barrier()
def main():
    B.run_on(C())
""",
    "m.B.m",
    "m.C.n",
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_subclass_stays_a_receiver(program_of, name):
    src, caller, want = CASES[name]
    program = program_of({"m.py": HEAD + src})
    assert want in callees(program, caller, "call")
