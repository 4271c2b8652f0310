"""What a name or expression may stand for, as far as static resolution can tell."""

from __future__ import annotations

from typing import NamedTuple

BUILTIN_PREFIX = "<builtin>."


class Value(NamedTuple):
    """kind: module | class | function | instance | external | builtin | items | generator.

    `generator` is what calling a generator function gives (`name` is the function): its body
    runs where it is advanced (`next(g)`, `for x in g`), and iterating it gives what it yields.

    `items` is a container annotated with one element type (`List[T]`): `name` is the
    element's name and `bound` the element's kind, so iterating or subscripting it yields
    `Value(bound, name)`. For `self` declared in a method, `bound` is that method's qualified
    name: `self` is an object whose class runs it (`model.hierarchy.running`).

    `name` is a qualified name in the program (module, class, function), the class of an
    instance, or the dotted import path of something outside the program. `bound` is the class
    a method was looked up on (for `self.m`), so the method's own `self` is typed precisely.
    """

    kind: str
    name: str
    bound: str | None = None
    via: str | None = None  # how it was found, when not plainly: "fallback", "dispatch"
    # A decorator's wrapper standing for the function it decorates at one site (`@dec def f`
    # makes `f` the wrapper `dec` returns, closing over `f`): that function's qualified name.
    wraps: str | None = None

    def member(self, attr: str) -> Value:
        return Value("external", f"{self.name}.{attr}")


def external(name: str) -> Value:
    return Value("external", name)


def builtin_instance(kind: str) -> Value:
    """A value of a builtin type (`{}`, `[]`, `"..."`): its methods are the builtin's."""
    return external(f"{BUILTIN_PREFIX}{kind}()")


def names_a_callable(value: Value) -> bool:
    """`value` says which callable a call of it runs: a function, or a library or builtin name
    (`dist.all_gather_into_tensor`). A library *instance* (`x: Callable` reads as
    `typing.Callable()`) says nothing about which callable it is."""
    if value.kind == "external":
        return not value.name.endswith("()")
    return value.kind in ("function", "builtin")


# `torch.get_device_module()` / `getattr(torch, device_type)`: the accelerator's submodule.
DEVICE_MODULE_GETTER = "torch.get_device_module"
DEVICE_MODULES = tuple(
    Value("external", f"torch.{name}", via="device") for name in ("cuda", "xpu", "npu", "mps")
)
