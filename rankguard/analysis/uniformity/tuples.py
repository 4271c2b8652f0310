"""A tuple's items, each with its own value.

Taken whole, `a, b = pair` gives `a` what every item of `pair` holds. A state saved as a tuple
and later restored into the same fields (`saved = (fb.count, fb.local)` ... `(fb.count,
fb.local) = saved`) then gives every field what the most rank-local one held. So a tuple is
followed item by item where its items are known:

- a tuple display (`(fb.count, fb.local)`, `(n, f(x))`): a reference, a constant or a call
  item holds its own value, any other item what the whole display holds; a conditional whose
  sides are displays of one length (`(0, 1) if g is None else (g.rank, g.size)`): each item
  what it holds on either side, and what the test reads (nothing when it tests existence);
- `a + b` of two values whose items are known (only `+` joins two tuples or lists): the
  items of `a`, then those of `b`;
- a local bound to one (its items are kept in the environment beside its whole value, under
  `name#i`, and forgotten when it is bound again or a branch that joins did not bind it to a
  tuple of that length or to `None`, which holds no items);
- a call of a helper each of whose returns gives such a tuple of one length (its items are
  nodes `("ret", helper, "#i")`, plus what the call passed to the parameters an item returns,
  plus what decides which return runs);
- a parameter the function unpacks: its items are nodes `("param", fn, name, "#i")` that each
  caller feeds item by item when it passes a tuple whose items it knows, and whole into
  `("param", fn, name, "#*")` (read with every item) when it does not;
- an attribute: every store puts a tuple's known items at `("attr", cls, name, "#i")` and any
  other value whole into `("attr", cls, name, "#*")`; a local read from it whole (`saved =
  self.saved`), then unpacked or handed to a parameter that is, reads each place with `#*`.

Unpacking into as many targets as the value has items goes item by item (a starred target of
a value of that length holds one item); anything else takes the whole value, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.analysis.uniformity.lattice import (
    MAX_STEPS,
    Env,
    Labels,
    Node,
    Step,
    merge,
    through,
    union,
)
from rankguard.model.binding import bind
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Stmt

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

ANY = "#*"  # a parameter's node fed whole by callers that pass no known items
Items = list[Labels] | None  # a value's items, when they are known apart


def arity_key(name: str) -> str:
    """`env[name + "#"]`: how many items the local `name` holds (one label, `("items", n)`)."""
    return name + "#"


def alias_key(name: str) -> str:
    """`env[name + "#attr"]`: what the local `name` was read from, `obj.attr` whole: a marker
    `("alias", attr)` and the labels of the read."""
    return name + "#attr"


def attr_items(read: Labels, arity: int) -> list[Labels]:
    """The items of `obj.attr` read whole (`read`, `alias_key`), unpacked into `arity` targets:
    of each attribute node of `attr`, what stores put at that place, what stores of unknown
    items put anywhere (`#*`) and what was put into it in place; everything else the read
    holds (its owner's own value), in every item."""
    attr = next(label[1] for label in read if isinstance(label, tuple) and label[0] == "alias")
    items: list[Labels] = [{} for _ in range(arity)]
    for label, steps in read.items():
        if not isinstance(label, tuple) or label[0] != "attr" or label[2:] != (attr,):
            if label[:1] != ("alias",):
                for item in items:
                    item[label] = steps
            continue
        for index, item in enumerate(items):
            item.update({(*label, f"#{index}"): steps, (*label, ANY): steps})
            item[("items", *label[1:])] = steps
    return items


def forget(name: str, env: Env) -> None:
    """`name` is bound again: the items it held, and what decided whether it exists
    (`x?`: `existence.deciding`), are gone."""
    env.pop(alias_key(name), None)
    env.pop(f"{name}?", None)
    marker = env.pop(arity_key(name), None)
    for label in marker or ():
        for index in range(label[1]):
            env.pop(f"{name}#{index}", None)


def stored(name: str, env: Env) -> list[Labels] | None:
    """The items the local `name` holds, when it holds a tuple whose items are known."""
    marker = env.get(arity_key(name))
    if not marker or len(marker) != 1:
        return None
    count = next(iter(marker))[1]
    if not count:  # `None`
        return None
    items = [env.get(f"{name}#{index}") for index in range(count)]
    return None if any(item is None for item in items) else items  # type: ignore[misc]


class TupleItems:
    """The items of values one walk sees (`Walker`), and the item flows between functions."""

    def __init__(self, walker: Walker) -> None:
        self.w = walker
        # A call of one helper that can answer a tuple: the helper, what each parameter got.
        self._calls: dict[int, tuple[str, dict[str, Labels]]] = {}

    # -- reading ---------------------------------------------------------------------------
    def of_value(
        self, stmt: Stmt, env: Env, whole: Labels, arity: int | None = None
    ) -> list[Labels] | None:
        """The items of a statement's value (`whole`: what all of it holds), or None when they
        are not known apart. `arity`: how many targets it is unpacked into (a parameter's
        items are known by it)."""
        tree = stmt.tree
        if not tree:
            return None
        if tree[0] == "ref" and len(tree[1]) == 1 and arity is not None:
            name = tree[1][0]
            found = stored(name, env)
            if found is not None:
                return found
            if alias_key(name) in env:
                return attr_items(env[alias_key(name)], arity)
            own = ("param", self.w.fn, name)
            if set(env.get(name, ())) != {own}:
                return None  # not the parameter as it came in
            self.w.out.unpacked[name] = max(arity, self.w.out.unpacked.get(name, 0))
            return [{(*own, f"#{index}"): (), (*own, ANY): ()} for index in range(arity)]
        return self._items(tree, stmt, env, whole)

    def _items(self, tree: Cond, stmt: Stmt, env: Env, whole: Labels) -> list[Labels] | None:
        """The items of one expression of the statement, when they are known apart."""
        kind = tree[0]
        if kind in ("tuple", "if"):
            return self._displayed(tree, stmt, env, whole)
        if kind == "ref" and len(tree[1]) == 1:
            return stored(tree[1][0], env)
        if kind == "call":
            call = next((c for c in reversed(stmt.calls) if c.target == tree[1]), None)
            return self._result(call) if call is not None else None
        if kind == "arith" and len(tree[1]) == 2:
            # Of two tuples (or lists) only `+` is defined: their items, one after the other.
            left, right = (self._items(side, stmt, env, whole) for side in tree[1])
            return None if left is None or right is None else left + right
        return None

    def _displayed(self, tree: Cond, stmt: Stmt, env: Env, whole: Labels) -> list[Labels] | None:
        """A tuple display's items, or a conditional's whose sides are displays of one length
        (each item holds what that item holds on either side, and what the test reads, unless
        it only tests whether something exists)."""
        if tree[0] == "if":
            sides = [self._displayed(side, stmt, env, whole) for side in tree[2:4]]
            if sides[0] is None or sides[1] is None or len(sides[0]) != len(sides[1]):
                return None
            test = self._test(tree[1], stmt, env, whole)
            return [union((a, b, test)) for a, b in zip(sides[0], sides[1], strict=True)]
        if tree[0] != "tuple":
            return None
        items: list[Labels] = []
        for item in tree[1]:
            if item[0] == "ref":
                items.append(self.w.ref(item[1], env, stmt.line))
            elif item[0] == "const":
                items.append({})
            elif item[0] == "call":
                call = next((c for c in stmt.calls if c.target == item[1]), None)
                found = self.w.results.get(id(call)) if call is not None else None
                items.append(whole if found is None else found)
            else:
                items.append(whole)
        return items

    def _test(self, test: Cond, stmt: Stmt, env: Env, whole: Labels) -> Labels:
        """What a conditional's test reads: a reference compared with `None` only tells
        whether it exists; anything but references and constants, all the value holds."""
        existence = test[:1] == ("cmp",) and tuple(test[1]) in (("is",), ("is not",))
        if existence and ("const", None) in test[2]:
            return {} if all(o[0] in ("ref", "const") for o in test[2]) else whole
        if test[0] == "ref":
            return self.w.ref(test[1], env, stmt.line)
        return {} if test[0] == "const" else whole

    def _result(self, call: CallSite) -> list[Labels] | None:
        known = self._calls.get(id(call))
        if known is None:
            return None
        target, passed = known
        params = self.w.f.returned_items(target)
        if params is None:
            return None
        step = self.w.step(call.line, f"{call.text}(…)")
        items: list[Labels] = []
        for index, returned in enumerate(params):
            item: Labels = {("ret", target, f"#{index}"): (), ("decided", target): ()}
            for param in returned:
                merge(item, through(passed.get(param, {}), step))
            items.append(item)
        return items

    # -- binding ---------------------------------------------------------------------------
    def unpack(self, stmt: Stmt, env: Env, whole: Labels) -> list[Labels] | None:
        """One value per target, when the targets unpack a value whose items are known."""
        if len(stmt.targets) < 2:
            return None
        items = self.of_value(stmt, env, whole, len(stmt.targets))
        return items if items is not None and len(items) == len(stmt.targets) else None

    def keep(self, stmt: Stmt, items: list[Labels] | None, env: Env, read: Labels) -> None:
        """After `name = value` (bound already): the items `value` held, if known (`None`
        holds none); or, for `name = obj.attr` that read nothing but the attribute's nodes
        (`read`), those nodes, whose items stores keep apart (`Walker.bind`)."""
        if len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
            return
        if stmt.tree == ("const", None):
            items = []
        name = stmt.targets[0][0]
        if items is None:
            tree = stmt.tree
            if tree and tree[0] == "ref" and len(tree[1]) >= 2 and tree[1][0] != name:
                path = tree[1]
                if ".".join(path) not in env and SUBSCRIPT not in path and CALL not in path:
                    env[alias_key(name)] = {("alias", path[-1]): (), **read}
            return
        env[arity_key(name)] = {("items", len(items)): ()}
        for index, item in enumerate(items):
            env[f"{name}#{index}"] = item

    def store(self, node: Node, labels: Labels, items: Items) -> None:
        """A store into the attribute `node`: the whole value, and its items at their places
        when they are known, else the whole value at every place (`#*`, `attr_items`)."""
        out = self.w.out
        out.flow(node, labels)
        if items is None:
            out.flow((*node, ANY), labels)
        for index, item in enumerate(items or ()):
            out.flow((*node, f"#{index}"), item)

    # -- between functions -----------------------------------------------------------------
    def called(self, call: CallSite, target: str, passed: dict[str, Labels], env: Env) -> None:
        """A call of the program's `target`: item flows into the parameters it unpacks
        (into all of them when it was not walked yet: recursion), and what its items are."""
        self._calls[id(call)] = (target, passed)
        unpacks = self.w.f.unpacks(target)
        if unpacks is not None and not unpacks & passed.keys():
            return
        callee = self.w.f.program.functions[target]
        step = self.w.step(call.line, call.text + "(…)")
        for param, operand in bind(callee, call).passed.items():
            if param not in passed or (unpacks is not None and param not in unpacks):
                continue
            ref = operand.ref
            name = ref[0] if ref and len(ref) == 1 and ref[0] != SUBSCRIPT else None
            items = stored(name, env) if name else None
            if items is None and name and alias_key(name) in env and unpacks:
                items = attr_items(env[alias_key(name)], unpacks[param])
            if items is None:
                self.w.out.flow(("param", target, param, ANY), through(passed[param], step))
                continue
            for index, item in enumerate(items):
                self.w.out.flow(("param", target, param, f"#{index}"), through(item, step))

    def returned(self, stmt: Stmt, env: Env, whole: Labels) -> None:
        """A `return`: the function answers a tuple of known items only if every return does,
        each of one length; own parameters an item holds apply per call site."""
        out = self.w.out
        if out.ret_arity < 0:
            return
        items = self.of_value(stmt, env, whole)
        if items is None or (out.ret_arity and len(items) != out.ret_arity):
            out.ret_arity = -1
            return
        if not out.ret_arity:
            out.ret_arity = len(items)
            out.ret_items = [{} for _ in items]
        step: Step = self.w.step(stmt.line, "return")
        for index, item in enumerate(items):
            intrinsic: Labels = {}
            for label, steps in item.items():
                carried = (step, *steps)[:MAX_STEPS]
                if isinstance(label, tuple) and label[0] == "param" and label[1] == self.w.fn:
                    known = out.ret_items[index].get(label[2])
                    if known is None or len(carried) < len(known):
                        out.ret_items[index][label[2]] = carried
                else:
                    intrinsic[label] = carried
            out.flow(("ret", self.w.fn, f"#{index}"), intrinsic)
