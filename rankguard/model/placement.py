"""Where a tensor lives: `cpu` (host memory, pinned or not), `device` (an accelerator), or
unknown (None), read from value trees (`summary.conditions`) and call sites.

The rules are PyTorch's: factories allocate on the CPU unless given `device=`; `.cpu()`,
`.numpy()`, `.tolist()`, `.item()` and `.pin_memory()` give host values, `.cuda()` a device
one, `.to(x)` wherever `x` names; indexing and elementwise methods (`.sum()`, `.float()`,
`.detach()`, ...) keep the placement of their receiver. A `torch.device(...)` or a device
string is itself given the placement it names, so `device = torch.device("cpu" if c else
"cuda")` followed by `torch.empty(n, device=device)` is decided by what is known of `c`.

Attributes are placed program-wide, by name: an attribute every assignment in the program
gives a host value (`self.seq_lens_cpu = seq_lens.cpu()`) is a host value wherever it is read.
Where no assignment places a value, a name that says host (`*_cpu`, `*_host`, a buffer's `.np`)
is taken at its word.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from rankguard.model.facts import UNKNOWN, Facts, choose
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt

CPU, DEVICE = "cpu", "device"

FACTORIES = frozenset(
    (
        "tensor", "zeros", "ones", "empty", "full", "arange", "frombuffer", "from_numpy",
        "randn", "rand", "randint", "linspace", "eye", "IntTensor", "LongTensor", "FloatTensor",
        "BoolTensor", "ByteTensor", "as_tensor", "zeros_like", "ones_like", "empty_like",
        "full_like",
    )
)  # fmt: skip
_LIKE = frozenset(("zeros_like", "ones_like", "empty_like", "full_like"))
_TO_HOST = frozenset(("cpu", "numpy", "tolist", "item", "pin_memory"))
# Methods whose result lives where their receiver does.
KEEPS = frozenset(
    (
        "sum", "max", "min", "mean", "float", "int", "long", "half", "bfloat16", "double",
        "bool", "detach", "clone", "contiguous", "view", "reshape", "flatten", "squeeze",
        "unsqueeze", "permute", "transpose", "t", "abs", "argmax", "argmin", "cumsum", "prod",
        "any", "all", "nonzero", "sort", "topk", "values", "indices", "masked_fill",
        "index_select", "gather", "expand", "repeat", "narrow", "split", "chunk", "type",
        "clamp", "to_dense", "count_nonzero", "numel", "eq", "ne", "gt", "lt", "ge", "le",
    )
)  # fmt: skip
_ACCELERATORS = ("cuda", "npu", "xpu", "musa", "mps", "hpu")
_HOST_NAMES = frozenset(("np", "cpu", "numpy"))
_HOST_SUFFIXES = ("_cpu", "_host", "_np", "_numpy")
_DEVICE_TEXT = re.compile(r"""^(?:torch\.device\()?f?['"](?P<kind>\w+)""")

Env = Mapping[str, str]
Attrs = Callable[[str], str | None]


def named(device: str) -> str | None:
    """`"cpu"`, `"cuda:0"`, `"npu"`: the placement a device name gives."""
    kind = device.split(":", 1)[0].strip().lower()
    if kind == "cpu":
        return CPU
    return DEVICE if kind in _ACCELERATORS else None


def _text_placement(text: str | None, env: Env) -> str | None:
    """A call site keeps only short argument text: a literal device or a known local."""
    if text is None:
        return None
    text = text.strip()
    if text.isidentifier():
        return env.get(text)
    match = _DEVICE_TEXT.match(text)
    return named(match.group("kind")) if match else None


def produced(call: CallSite, env: Env, receiver: Callable[[], str | None]) -> str | None:
    """Where the value a call returns lives, when the call tells (`receiver` reads its
    receiver's placement, for methods that keep it)."""
    target = call.target
    method = target[-1] if target else ""
    if method in _TO_HOST:
        return CPU
    if method == "cuda":
        return DEVICE
    if method == "to":
        device = call.kwarg("device") or (call.args[0] if call.args else None)
        return _text_placement(device, env)
    if len(target) == 2 and target[0] == "torch":
        if method == "device":
            return _text_placement(call.args[0] if call.args else None, env)
        if method in FACTORIES:
            device = call.kwarg("device")
            if device is None:
                return None if method in _LIKE else CPU  # PyTorch's default device
            return _text_placement(device, env)
    if method in KEEPS and len(target) >= 2:
        return receiver()
    return None


def of_tree(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    """The placement of a value tree (an assignment's or a return's)."""
    if not tree:
        return None
    tag = tree[0]
    if tag == "const":
        return named(tree[1]) if isinstance(tree[1], str) else None
    if tag == "ref":
        return of_segs(tree[1], env, attrs)
    if tag == "if":
        found = choose(tree, known, lambda side, facts: of_tree(side, env, facts, attrs))
        return None if found is UNKNOWN else found
    if tag != "call":
        return None
    segs, args, kwargs = tree[1], tree[2], dict(tree[3])
    method = segs[-1]
    if method in _TO_HOST:
        return CPU
    if method == "cuda":
        return DEVICE
    if method == "to":
        device = kwargs.get("device") or (args[0] if args else None)
        return of_tree(device, env, known, attrs) if device else None
    if len(segs) == 2 and segs[0] == "torch":
        if method == "device":
            return of_tree(args[0], env, known, attrs) if args else None
        if method in FACTORIES:
            device = kwargs.get("device")
            if device is None:
                return None if method in _LIKE else CPU
            return of_tree(device, env, known, attrs)
    if method in KEEPS and len(segs) >= 2:
        if len(tree) > 4:  # a method of a computed value: its receiver's tree
            return of_tree(tree[4], env, known, attrs)
        return of_segs(segs[:-1], env, attrs)
    return None


def of_segs(segs: Segs, env: Env, attrs: Attrs) -> str | None:
    """A reference: a local's fact, or an attribute's program-wide placement, else what its
    name says (`by_name`)."""
    while segs and segs[-1] == SUBSCRIPT:
        segs = segs[:-1]
    if not segs or CALL in segs[-1:]:
        return None
    found = env.get(".".join(segs)) or (attrs(segs[-1]) if len(segs) > 1 else None)
    return found or by_name(segs[-1])


def by_name(name: str) -> str | None:
    """`seq_lens_cpu`, `ids_host`, a buffer's `np` view: the host copies a program keeps beside
    its device tensors are named so. Read only where no assignment places the value."""
    return CPU if name in _HOST_NAMES or name.endswith(_HOST_SUFFIXES) else None


class AttributePlacement:
    """Program-wide: the placement every assignment gives an attribute name (a local read on
    the way counts only when the function assigns it once)."""

    def __init__(self, bodies: Mapping[str, tuple[Stmt, ...]]) -> None:
        self._bodies = bodies
        self._attrs: dict[str, str | None] | None = None

    def attribute(self, name: str) -> str | None:
        if self._attrs is None:
            self._attrs = self._index()
        return self._attrs.get(name)

    def table(self) -> dict[str, str | None]:
        """Every attribute name assigned in the program, with its placement (None: unknown)."""
        if self._attrs is None:
            self._attrs = self._index()
        return self._attrs

    def _index(self) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        seen: set[str] = set()
        for body in self._bodies.values():
            assigns = [s for s in _flat(body) if s.kind == "assign" and s.tree]
            once = Counter(t[0] for s in assigns for t in s.targets if len(t) == 1)
            env: dict[str, str] = {}
            for stmt in assigns:
                place = of_tree(stmt.tree, env, {}, lambda _: None)
                for target in stmt.targets:
                    if len(target) == 1:
                        if place is not None and once[target[0]] == 1:
                            env[target[0]] = place
                        continue
                    if target[-1] in (CALL, SUBSCRIPT):
                        continue
                    name = target[-1]
                    if name not in seen:
                        seen.add(name)
                        found[name] = place
                    elif found.get(name) != place:
                        found[name] = None
        return found


def _flat(body: tuple[Stmt, ...]) -> list[Stmt]:
    out: list[Stmt] = []
    for stmt in body:
        out.append(stmt)
        for block in stmt.blocks:
            out.extend(_flat(block))
    return out
