"""Where a tensor lives: `cpu` (host memory, pinned or not), `device` (an accelerator),
`scalar` (a Python number or list read off a tensor: host data, no tensor), or unknown (None),
read from value trees (`summary.conditions`) and call sites; and `stream` for the Work handle of
an asynchronous collective on a device group, whose `wait()` holds a stream, not the host.

The rules are PyTorch's: factories allocate on the CPU unless given `device=`; `.cpu()`,
`.numpy()` and `.pin_memory()` give host tensors, `.item()` and `.tolist()` Python values,
`.cuda()` a device tensor, `.to(x)` wherever `x` names (a dtype keeps the placement); indexing
and elementwise methods (`.sum()`, `.float()`, `.detach()`, ...) keep the placement of their
receiver. Operators and tensor functions (`a % n`, `x == 0`, `torch.cumsum(x)`, `F.pad(x, p)`)
make their result where their tensor operands live (`combined`), and so do einops' functions
(`einops.reduce(x, ...)`). A `for` that unpacks `enumerate(xs)` or `zip(xs, ys)` gives each
target an element of the iterable it pairs with (`unpacked`); unpacking a value whose placement
is known (`values, counts = torch.unique(x, return_counts=True)`) gives each part that
placement; what a function returns on every path, read from its body with its parameters
unknown, is where its caller binds it (`model.returns`). A `torch.device(...)` or a device
string is itself given the placement it names, so `device = torch.device("cpu" if c else
"cuda")` followed by `torch.empty(n, device=device)` is decided by what is known of `c`.
A test on a tensor's device (`assert x.device == cpu`, `if x.is_cpu:`) places it on the side
taken (`asserted`).

An integer device index (`torch.cuda.current_device()`, `x.get_device()`, a literal `0`) is a
Python int (`index`: host data, a sync on it reads nothing), and where a device is expected
(`device=`, `.to(...)`, `torch.device(...)`) it names the accelerator: PyTorch reads an int
device as an index of the current accelerator, never as the CPU.

Attributes are placed program-wide, by name: an attribute every assignment in the program
gives a host value (`self.seq_lens_cpu = seq_lens.cpu()`) is a host value wherever it is read.
Where no assignment places a value, a name that says host (`*_cpu`, `*_host`, a buffer's `.np`)
is taken at its word.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rankguard.model.facts import UNKNOWN, Cond, Facts, choose
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, walk_statements

CPU, DEVICE, SCALAR = "cpu", "device", "scalar"
INDEX = "index"  # a Python int naming an accelerator: host data, a device where one is expected
STREAM = "stream"  # a device group's Work handle: waiting on it orders a stream, not the host
HOST = frozenset((CPU, SCALAR, INDEX))  # no device data: a sync on it reads nothing from a device
# Calls that give the index of an accelerator (`torch.cuda.current_device()`, `t.get_device()`).
_INDEX_CALLS = frozenset(("current_device", "get_device", "current_device_index"))
_INDEX_TEXT = re.compile(r"(?:^|\.)(?:current_device|get_device|current_device_index)\(\)$")

FACTORIES = frozenset(
    (
        "tensor", "zeros", "ones", "empty", "full", "arange", "frombuffer", "from_numpy",
        "randn", "rand", "randint", "linspace", "eye", "Tensor", "IntTensor", "LongTensor",
        "FloatTensor", "BoolTensor", "ByteTensor", "HalfTensor", "DoubleTensor", "ShortTensor",
        "CharTensor", "as_tensor", "zeros_like", "ones_like", "empty_like",
        "full_like",
    )
)  # fmt: skip
_LIKE = frozenset(("zeros_like", "ones_like", "empty_like", "full_like"))
_COPIES = frozenset(("tensor", "as_tensor"))  # given a tensor, they keep its device
# Calls whose result is a Python number whatever they are handed (`len(batch)`, a clock).
_NUMBERS = frozenset(
    [("len",), ("int",), ("float",), ("bool",)]
    + [("time", clock) for clock in ("time", "monotonic", "perf_counter", "time_ns")]
)
_TO_HOST = frozenset(("cpu", "numpy", "pin_memory"))
# Methods whose result is a Python value on the host (a copy, an event's timing, a count).
TO_PYTHON = frozenset(
    ("tolist", "item", "elapsed_time", "numel", "nelement", "dim", "element_size")
)
# Methods whose result lives where their receiver does.
KEEPS = frozenset(
    (
        "sum", "max", "min", "mean", "float", "int", "long", "half", "bfloat16", "double",
        "bool", "detach", "clone", "contiguous", "view", "reshape", "flatten", "squeeze",
        "unsqueeze", "permute", "transpose", "t", "abs", "argmax", "argmin", "cumsum", "prod",
        "any", "all", "nonzero", "sort", "topk", "values", "indices", "masked_fill",
        "index_select", "gather", "expand", "repeat", "narrow", "split", "chunk", "type",
        "clamp", "to_dense", "count_nonzero", "eq", "ne", "gt", "lt", "ge", "le",
        "add", "sub", "mul", "div", "remainder", "floor_divide", "neg", "pow", "floor", "ceil",
        "round", "exp", "log", "sqrt", "cumprod", "diff", "flip", "roll", "masked_select",
        "norm", "std", "var", "median", "amax", "amin", "nansum", "logsumexp", "square",
        "isnan", "isinf", "isfinite", "logical_not", "sign", "reciprocal",
    )
)  # fmt: skip
# Modules whose functions make tensors from tensors (`torch.cumsum(x)`, `F.pad(x, p)`; `F` is
# PyTorch's own spelling of `torch.nn.functional`): the result lives with its operands.
_TENSOR_MODULES = frozenset(
    (("torch",), ("F",), ("torch", "nn", "functional"), ("nn", "functional"))
)
# Functions of other tensor libraries that make a tensor of the same framework from their tensor
# operands, on the operands' device (einops works on the tensor it is handed and returns one).
_TENSOR_FUNCTIONS = frozenset(
    ("einops", name) for name in ("rearrange", "reduce", "repeat", "einsum")
)
_DTYPES = frozenset(
    (
        "float", "float16", "float32", "float64", "bfloat16", "half", "double", "int", "int8",
        "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
    )
)  # fmt: skip
_ACCELERATORS = ("cuda", "npu", "xpu", "musa", "mps", "hpu")
_HOST_NAMES = frozenset(("np", "cpu", "numpy"))
_HOST_SUFFIXES = ("_cpu", "_host", "_np", "_numpy")
_DEVICE_TEXT = re.compile(r"""^(?:torch\.device\()?f?['"](?P<kind>\w+)""")
# A device process group, as its name says (`tp_gpu_group`, `pg.device_group`, `nccl_group`).
_DEVICE_GROUP = re.compile(r"(?:^|_)(?:gpu|device|nccl|cuda)_?group$")
# torch.distributed collectives whose Work, on a device group, is waited for by a stream (not a
# barrier: its Work synchronizes the host on NCCL too).
_STREAM_COLLECTIVES = frozenset(
    (
        "broadcast", "all_reduce", "reduce", "all_gather", "all_gather_into_tensor",
        "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
        "scatter",
    )
)  # fmt: skip

Env = Mapping[str, str]
# What one assignment gives an attribute: its tree, the placements of the function's locals
# there, and the trees of the locals it binds once (a counter read through a local).
Given = tuple[Any, Env, Mapping[str, Any]]
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
        return _as_device(env.get(text))
    if text.isdigit() or _INDEX_TEXT.search(text):
        return DEVICE  # `device=0`, `device=torch.cuda.current_device()`: an accelerator's index
    match = _DEVICE_TEXT.match(text)
    return named(match.group("kind")) if match else None


def _as_device(place: str | None) -> str | None:
    """A placement read where a device is expected: an int index names the accelerator (a
    Python number there can only be an index)."""
    return DEVICE if place in (INDEX, SCALAR) else place


def device_of(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    """Where a device argument (`device=`, `.to(x)`, `torch.device(x)`) puts a tensor: a
    literal int or an index is the accelerator."""
    if tree and tree[0] == "const" and type(tree[1]) is int:
        return DEVICE
    return _as_device(of_tree(tree, env, known, attrs))


def produced(call: CallSite, env: Env, receiver: Callable[[], str | None]) -> str | None:
    """Where the value a call returns lives, when the call tells (`receiver` reads its
    receiver's placement, for methods that keep it)."""
    target = call.target
    method = target[-1] if target else ""
    if method in _TO_HOST:
        return CPU
    if method in TO_PYTHON:
        return SCALAR
    if method == "cuda":
        return DEVICE
    if method == "to":
        device = call.kwarg("device") or (call.args[0] if call.args else None)
        if device is None or _dtype(tuple(device.split("."))):
            return receiver()
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


def combined(places: Iterable[str | None]) -> str | None:
    """Where what an operator or a tensor function makes from its operands lives: on a device
    if any operand is; on the host if a host tensor is among them (PyTorch refuses to mix a
    host tensor with a device one, save a 0-dim host tensor: such a scalar is taken as the
    rare case it is); a Python value if every operand is one; else unknown."""
    seen = {SCALAR if place == INDEX else place for place in places}
    if DEVICE in seen:
        return DEVICE
    if CPU in seen:
        return CPU
    return SCALAR if seen == {SCALAR} else None


def agree(first: str | None, second: str | None) -> str | None:
    """One placement for a value that is either: host data both ways counts as host."""
    if first == second:
        return first
    if INDEX in (first, second):  # as a device, an index is the accelerator: the two differ
        return None
    return CPU if first in HOST and second in HOST else None


def of_tree(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    """The placement of a value tree (an assignment's or a return's)."""
    if not tree:
        return None
    tag = tree[0]
    if tag == "const":
        return named(tree[1]) if isinstance(tree[1], str) else None  # `device=0` is a device
    if tag == "ref":
        return of_segs(tree[1], env, attrs)
    if tag == "if":
        found = choose(tree, known, lambda side, facts: of_tree(side, env, facts, attrs))
        if found is UNKNOWN:
            found = agree(*(of_tree(side, env, known, attrs) for side in tree[2:4]))
        return found
    if tag in ("arith", "cmp"):
        return combined(_operand(t, env, known, attrs) for t in tree[-1])
    if tag != "call":
        return None
    segs, args, kwargs = tree[1], tree[2], dict(tree[3])
    if segs in _NUMBERS:
        return SCALAR
    method = segs[-1]
    if method in _TO_HOST:
        return CPU
    if method in TO_PYTHON:
        return SCALAR
    if method == "cuda":
        return DEVICE
    if method == "to":
        device = kwargs.get("device") or (args[0] if args else None)
        if device is None or (device[0] == "ref" and _dtype(device[1])):
            return _receiver(tree, env, known, attrs)
        return device_of(device, env, known, attrs)
    if method in _INDEX_CALLS and len(segs) >= 2:
        return INDEX
    if method in _STREAM_COLLECTIVES and kwargs.get("async_op") == ("const", True):
        return _work(kwargs.get("group"))
    module = segs[:-1]
    if len(segs) == 2 and segs[0] == "torch":
        if method == "device":
            return device_of(args[0], env, known, attrs) if args else None
        if method in FACTORIES:
            device = kwargs.get("device")
            if device is not None:
                return device_of(device, env, known, attrs)
            if method in _COPIES and args and of_tree(args[0], env, known, attrs) == DEVICE:
                return DEVICE  # made from a tensor: where that tensor lives
            if method not in _LIKE:
                return CPU  # PyTorch's default device
    if module in _TENSOR_MODULES or segs in _TENSOR_FUNCTIONS:
        return combined(_operand(t, env, known, attrs) for t in args)
    if method in KEEPS and len(segs) >= 2:
        return _receiver(tree, env, known, attrs)
    return None


def _work(group: Any) -> str | None:
    """The Work handle of an asynchronous collective on a group its name says is a device
    group (NCCL) is `STREAM`: its `wait()` makes the current stream wait and returns, so the
    host does not wait for the peers (PyTorch's semantics for CUDA collectives). Any other
    group (gloo, the default group, a bare `group`) is not known: its `wait()` may block."""
    if group and group[0] == "ref" and _DEVICE_GROUP.search(group[1][-1]):
        return STREAM
    return None


def unpacked(
    tree: Any, count: int, env: Env, known: Facts, attrs: Attrs
) -> tuple[str | None, ...] | None:
    """Where each of the `count` targets of a `for` that unpacks what it iterates lives, when
    the pairing is sure: `for i, x in enumerate(xs)` gives an index (a Python number) and an
    element of `xs`; `for a, b in zip(xs, ys)`, one target per iterable, an element of each.
    An element lives where its iterable does. None where the pairing is not sure: an argument
    that may be starred (read as `other`), a count that differs (a nested target)."""
    if not tree or tree[0] != "call" or len(tree) > 4:
        return None
    segs, args = tree[1], tree[2]
    if any(not arg or arg[0] == "other" for arg in args):
        return None  # `zip(a, *rest)`: which iterable pairs with which target is not known
    if segs == ("enumerate",) and count == 2 and 1 <= len(args) <= 2:
        return (SCALAR, of_tree(args[0], env, known, attrs))
    if segs == ("zip",) and count == len(args):
        return tuple(of_tree(arg, env, known, attrs) for arg in args)
    return None


def _receiver(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    if len(tree) > 4:  # a method of a computed value: its receiver's tree
        return of_tree(tree[4], env, known, attrs)
    return of_segs(tree[1][:-1], env, attrs)


def _operand(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    """An operand's placement; a literal is a Python value (never a device name here), a
    list or tuple of tensors (`torch.cat([a, b])`) is where its tensors are."""
    if tree and tree[0] == "tuple":
        return combined(_operand(t, env, known, attrs) for t in tree[1])
    return SCALAR if tree and tree[0] == "const" else of_tree(tree, env, known, attrs)


def _dtype(segs: Segs) -> bool:
    """`torch.int64`, `x.dtype`, `self.kv_dtype`: a dtype, which `.to(...)` converts in place."""
    return (len(segs) == 2 and segs[0] == "torch" and segs[1] in _DTYPES) or segs[-1].endswith(
        "dtype"
    )


def asserted(cond: Cond, positive: bool, env: Env, known: Facts, attrs: Attrs) -> Env:
    """`env` with what a test establishes on the side taken (`positive`); `env` itself when
    it establishes nothing."""
    placed = _tested(cond, positive, env, known, attrs)
    return {**env, **placed} if placed else env


def _tested(cond: Cond, positive: bool, env: Env, known: Facts, attrs: Attrs) -> dict[str, str]:
    """Placements a test establishes on the side taken: `x.device == cpu`, `x.device.type !=
    "cpu"` failing, `x.is_cpu`, `not x.is_cpu`, `x.is_cuda`... and every part of an `and`
    that holds (an `or` that fails)."""
    tag = cond[0] if cond else "other"
    if tag == "not":
        return _tested(cond[1], not positive, env, known, attrs)
    out: dict[str, str] = {}
    if tag in ("and", "or"):
        if (tag == "and") == positive:
            for part in cond[1]:
                out.update(_tested(part, positive, env, known, attrs))
        return out
    if tag == "ref" and len(cond[1]) >= 2 and cond[1][-1] in ("is_cpu", "is_cuda"):
        if cond[1][-1] == "is_cpu":
            out[".".join(cond[1][:-1])] = CPU if positive else DEVICE
        elif positive:  # not on CUDA tells nothing: another accelerator, or the host
            out[".".join(cond[1][:-1])] = DEVICE
        return out
    if tag == "cmp" and len(cond[1]) == 1 and cond[1][0] in ("==", "!=", "is"):
        if (cond[1][0] == "!=") == positive:
            return out
        for side, other in (cond[2], cond[2][::-1]):
            segs = side[1] if side[0] == "ref" else ()
            if segs[-2:] == ("device", "type"):
                segs = segs[:-1]
            if len(segs) >= 2 and segs[-1] == "device" and CALL not in segs:
                place = of_tree(other, env, known, attrs)
                if place in (CPU, DEVICE):
                    out[".".join(segs[:-1])] = place
    return out


def bound(call: CallSite, env: Env, known: Facts, attrs: Attrs) -> Env:
    """`env` as a call inside a comprehension sees it: each variable takes an element of what
    it iterates, which lives where that does (`[v.item() for v in host]` reads the host)."""
    if not call.bound:
        return env
    inner = dict(env)
    paired: tuple[str | None, ...] | None = None
    for name, tree in call.bound:
        if tree[0] == "unpack":  # one name of `for i, x in enumerate(xs)`, in order
            _, position, count, iterable = tree
            if position == 0:  # the iterable is read before any of its names is bound
                paired = unpacked(iterable, count, inner, known, attrs)
            place = paired[position] if paired else None
        else:
            place = of_tree(tree, inner, known, attrs)
        prefix = name + "."  # it names another object now: nothing said of the old one holds
        inner = {k: v for k, v in inner.items() if k != name and not k.startswith(prefix)}
        if place is not None:
            inner[name] = place
    return inner


def of_segs(segs: Segs, env: Env, attrs: Attrs) -> str | None:
    """A reference: a local's fact, or an attribute's program-wide placement, else what its
    name says (`by_name`)."""
    while segs and segs[-1] == SUBSCRIPT:
        segs = segs[:-1]
    if not segs or CALL in segs[-1:]:
        return None
    found = env.get(".".join(segs))
    if found is None and len(segs) > 1 and segs[-1] == "device":
        found = _device_attribute(segs[:-1], env, attrs)
    found = found or (attrs(segs[-1]) if len(segs) > 1 else None)
    return found or by_name(segs[-1])


def _device_attribute(owner: Segs, env: Env, attrs: Attrs) -> str | None:
    """`ids.device` names where the tensor `ids` lives (`torch.tensor(x, device=ids.device)`
    builds on the host when `ids` was made there): read before the program-wide placement of
    every attribute called `device`, which says nothing of this tensor."""
    if SUBSCRIPT in owner or CALL in owner:
        return None
    place = env.get(".".join(owner)) or (attrs(owner[-1]) if len(owner) > 1 else None)
    return place if place in (CPU, DEVICE) else None


def by_name(name: str) -> str | None:
    """`seq_lens_cpu`, `ids_host`, a buffer's `np` view: the host copies a program keeps beside
    its device tensors are named so. Read only where no assignment places the value."""
    return CPU if name in _HOST_NAMES or name.endswith(_HOST_SUFFIXES) else None


class AttributePlacement:
    """Program-wide: the placement every assignment gives an attribute name (a local read on
    the way counts only when the function binds it once: no parameter, loop or `with` target
    binds it too). A counter (`self.done = 0`, then
    only `self.done += len(batch)`) reads itself: it is a Python number if it is one wherever
    it is taken to be one, checked per attribute."""

    def __init__(
        self,
        bodies: Mapping[str, tuple[Stmt, ...]],
        params: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self._bodies = bodies
        self._params = params or {}  # each function's parameters: bound on entry
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
        values: dict[str, list[Given]] = {}  # name -> what each assignment gives it
        for function, body in self._bodies.items():
            flat = list(walk_statements(body))
            assigns = [s for s in flat if s.kind == "assign" and s.tree]
            # Bound once by any statement (a `for` or `with` target binds too), never on entry.
            single = Counter(t[0] for s in flat for t in s.targets if len(t) == 1)
            single.update(self._params.get(function, ()))
            env: dict[str, str] = {}
            locals_: dict[str, Any] = {}  # locals bound once, each to its tree
            for stmt in assigns:
                place = of_tree(stmt.tree, env, {}, lambda _: None)
                for target in stmt.targets:
                    if len(target) == 1:
                        if single[target[0]] == 1:
                            locals_ = {**locals_, target[0]: stmt.tree}
                        if place is not None and single[target[0]] == 1:
                            env = {**env, target[0]: place}
                        continue
                    if target[-1] in (CALL, SUBSCRIPT):
                        continue
                    name = target[-1]
                    found[name] = agree(found[name], place) if name in values else place
                    values.setdefault(name, []).append((stmt.tree, env, locals_))
        counters = [name for name, given in values.items() if _counts_itself(name, given, found)]
        found.update(dict.fromkeys(counters, SCALAR))
        return found


def _counts_itself(name: str, given: list[Given], found: Mapping[str, str | None]) -> bool:
    """A counter: one assignment gives attribute `name` a number (`= 0`), and, taking it for a
    Python number, every other keeps it one (`+= len(batch)`, `= self.done + 1`, or a local
    bound once to such a value: `n = self.done + 1; ...; self.done = n`). Read against the
    table before any counter is settled, so the answer does not depend on the order."""
    if found[name] is not None:
        return False

    def attrs(attr: str) -> str | None:
        return SCALAR if attr == name else found.get(attr)

    def kept(tree: Any, env: Env, locals_: Mapping[str, Any]) -> bool:
        if tree[0] == "const" and _number(tree[1]):
            return True
        # What the function's once-bound locals hold, taking the counter for a number.
        hypothesis = dict(env)
        for local, bound in locals_.items():
            place = of_tree(bound, hypothesis, {}, attrs)
            if place is not None:
                hypothesis[local] = place
        return of_tree(tree, hypothesis, {}, attrs) == SCALAR

    seeded = any(tree[0] == "const" and _number(tree[1]) for tree, _, _ in given)
    return seeded and all(kept(*item) for item in given)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float))
