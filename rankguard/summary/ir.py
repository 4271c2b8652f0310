"""The compact, picklable record a file is reduced to.

Analyses never see syntax trees: they walk these records, which keep calls in evaluation order
inside a statement tree (branches, loops, try/finally, with), assignments with what they read,
and definitions with their annotations. A record depends only on the file's content, which is
why it can be cached by blob id and shared between a PR's base and head.

A *reference* (`Segs`) is a dotted chain as written: `self.tp_group.all_reduce` is
`("self", "tp_group", "all_reduce")`; `()` marks a call result (`get_pp_group().send` is
`("get_pp_group", "()", "send")`), `[]` a subscript, and `<expr>` a base we do not follow.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Segs = tuple[str, ...]
CALL = "()"
SUBSCRIPT = "[]"
OPAQUE = "<expr>"

# Container methods that add an element (the position of the argument added) and that add
# every element of their argument: how a container, local (`model.localtypes`) or an
# attribute (`model.stores`), is filled; a method filling its own attribute is part of its
# module's interface (`summary.interface`).
ADDS = {"append": 0, "add": 0, "appendleft": 0, "insert": 1, "setdefault": 1}
MERGES = frozenset(("extend", "update"))
FILLS = frozenset(ADDS) | MERGES


def dotted(text: str) -> Segs | None:
    """`w`, `self.batch`: an argument's text that is a plain reference, as segments."""
    parts = tuple(text.split("."))
    return parts if all(p.isidentifier() for p in parts) else None


def segs_text(segs: Segs) -> str:
    out = ""
    for seg in segs:
        if seg in (CALL, SUBSCRIPT):
            out += seg
        else:
            out += ("." if out else "") + seg
    return out


@dataclass(slots=True, frozen=True)
class Operand:
    """One argument of a call as analyses read it, so none has to re-parse argument text.

    `reads` are the maximal references it reads itself and `calls` the targets of the calls it
    makes itself (a nested call's own arguments belong to that call's operands), both in
    evaluation order and both also in the statement's own lists; `ref` is set when the
    argument is a bare reference (`x`, `self.q`), `const` when it is a literal (its repr).
    """

    keyword: str | None  # None: positional; "*" / "**" for unpacking
    reads: tuple[Segs, ...] = ()
    calls: tuple[Segs, ...] = ()
    ref: Segs | None = None
    const: str | None = None


@dataclass(slots=True)
class CallSite:
    target: Segs
    line: int
    col: int
    args: tuple[str, ...] = ()  # short text of each positional argument
    kwargs: tuple[tuple[str, str], ...] = ()  # (keyword, short text); "**" for **kw
    deferred: bool = False  # inside a lambda: runs later, not here
    operands: tuple[Operand, ...] = ()  # positional first, then keywords, as written
    # Arguments that are literal constants: (position as "0", "1", ... or keyword, value).
    literals: tuple[tuple[str, Any], ...] = ()
    # A method of a computed value (`f(x).sum()`, `(a % n).tolist()`): the receiver's value
    # tree (`summary.conditions`), so value facts read what made it; () otherwise.
    receiver: tuple[Any, ...] = ()
    # Inside a comprehension: each variable in scope with the value tree of what it iterates.
    bound: tuple[tuple[str, Any], ...] = ()
    # Inside one side of a conditional expression or a later operand of `and`/`or`: the
    # (condition tree, side) pairs that must hold for the call to run at all.
    under: tuple[tuple[Any, bool], ...] = ()

    def operand(self, keyword: str) -> Operand | None:
        return next((o for o in self.operands if o.keyword == keyword), None)

    @property
    def text(self) -> str:
        return segs_text(self.target)

    def kwarg(self, name: str) -> str | None:
        for key, value in self.kwargs:
            if key == name:
                return value
        return None


@dataclass(slots=True)
class Stmt:
    """One statement. `calls` are those the statement itself evaluates (for a compound
    statement, its header); `blocks` are its bodies:

    - if: (body, orelse)            - loop: (body, orelse)       - with: (body,)
    - try: (body, orelse, finalbody, *handlers)                  - match: one per case
    """

    kind: str  # expr assign return raise break continue if loop try with match pass
    line: int
    calls: tuple[CallSite, ...] = ()
    blocks: tuple[tuple[Stmt, ...], ...] = ()
    text: str = ""  # condition or with-items, shortened
    targets: tuple[Segs, ...] = ()  # assigned names / attributes (assign, for, with-as)
    reads: tuple[Segs, ...] = ()  # references read by the value or test
    # ("call", segs) | ("ref", segs) | ("const", text) | ("other",)
    # | ("literal", (segs, ...), type): a dict/list/set/tuple/str display, the references it holds
    # Loops keep what they iterate here.
    value: tuple[Any, ...] = ()
    infinite: bool = False  # `while True`
    # References the value or test only compares with None (`x is None`, `x is not None`):
    # whether they exist, not what they hold.
    existence: tuple[Segs, ...] = ()
    # References whose truth a test takes (`if q`, `not q`, `a and q`) or a `for` iterates:
    # how many items they hold decides, not what the items are.
    truths: tuple[Segs, ...] = ()
    # The test of an if / while / assert as a tree (`summary.conditions`); () when none.
    # An `assert` is an "expr" statement whose `cond` is set.
    cond: tuple[Any, ...] = ()
    items: tuple[tuple[Any, ...], ...] = ()  # with: each item's expression, as a tree
    # with: the `__exit__` calls made when the body is left, innermost item first, at the end
    # of the statement (for each item that makes its context manager with a call).
    exits: tuple[CallSite, ...] = ()
    # assign / return: the value as a tree (`summary.conditions`); for: what it iterates.
    tree: tuple[Any, ...] = ()
    # The statement suspends its generator (`yield x`, `y = yield`): where a context manager's
    # `with` body runs, between what it does on entry and what it does on exit.
    yields: bool = False


@dataclass(slots=True)
class Param:
    name: str
    annotation: Segs | None = None
    default: str | None = None
    items: Segs | None = None  # element class of a `List[T]`-like annotation
    literal: tuple[Any, ...] = ()  # (value,) when the default is a literal constant


@dataclass(slots=True)
class FunctionInfo:
    qualname: str  # within the module: `Cls.meth`, `f.inner`
    name: str
    line: int
    end_line: int
    cls: str | None  # qualname of the class it is defined in, when a method
    params: tuple[Param, ...]
    returns: Segs | None
    decorators: tuple[Segs, ...]
    body: tuple[Stmt, ...]
    value_refs: tuple[tuple[Segs, int], ...] = ()  # callables passed or stored as values
    is_async: bool = False
    global_names: tuple[str, ...] = ()  # names it declares `global` (and may rebind)
    # Per decorator: written as a call (`@factory(arg)`, the decorator is what it returns).
    decorator_called: tuple[bool, ...] = ()
    is_generator: bool = False  # has `yield`: calling it runs nothing until it is advanced
    yields: tuple[Segs, ...] = ()  # plain references it yields (`yield handler`)
    # Every name its own body binds or unbinds, in any form: assignment targets (augmented and
    # annotated too), for / with / except targets, walrus, del, import, def / class, match
    # captures; not a comprehension's own targets. A parameter named here may not hold what
    # the caller passed where it is read.
    bound: tuple[str, ...] = ()

    def decorated(self, name: str) -> bool:
        """Whether a decorator's last segment is `name` (`@staticmethod`, `@functools.cache`)."""
        return any(d and d[-1] == name for d in self.decorators)

    @property
    def takes_self(self) -> bool:
        """A method whose first parameter is the instance or its class (not a staticmethod)."""
        return bool(self.cls) and not self.decorated("staticmethod")


NOT_LITERAL = ("<not a literal>",)  # a field default no literal gives (no literal is a tuple)


@dataclass(slots=True)
class ClassInfo:
    qualname: str
    name: str
    line: int
    bases: tuple[Segs, ...]
    decorators: tuple[Segs, ...]
    attributes: tuple[tuple[str, Segs], ...] = ()  # class-level `name: T` / `name = T(...)`
    # Class-level tables of the class's own methods: `_MAP = {Kind: _handle_kind, ...}`.
    tables: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Class-level annotated names with their literal defaults (`req: Optional[Req] = None`), or
    # NOT_LITERAL: a record's field where its constructor leaves it out.
    defaults: tuple[tuple[str, Any], ...] = ()
    metaclass: Segs = ()  # `metaclass=M`, () when none is named


@dataclass(slots=True)
class ImportInfo:
    """`bound` is the local name; `module` the module text; `level` its dots; `attr` the name
    imported from it (None for `import a.b`)."""

    scope: str  # "" for module level, else the function qualname
    bound: str
    module: str
    level: int
    attr: str | None
    line: int


@dataclass(slots=True)
class FileSummary:
    functions: list[FunctionInfo] = field(default_factory=list)
    classes: list[ClassInfo] = field(default_factory=list)
    imports: list[ImportInfo] = field(default_factory=list)
    all_names: tuple[str, ...] | None = None  # __all__, when literal
    suppressions: dict[int, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)  # per-analysis extras, by extractor
    lines: int = 0


def walk_calls(body: tuple[Stmt, ...]) -> Iterator[CallSite]:
    """Every call in a statement list, in program order: headers, bodies, then the exits of
    a `with`."""
    for stmt in body:
        yield from stmt.calls
        for block in stmt.blocks:
            yield from walk_calls(block)
        yield from stmt.exits


def walk_statements(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of a body, nested blocks included, in program order."""
    for stmt in body:
        yield stmt
        for block in stmt.blocks:
            yield from walk_statements(block)
