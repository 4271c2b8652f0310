"""Facts that hold inside a round, or on entry to a function at one call site.

- The round's facts: the branch of each caller that selects the round function (`if
  s.enable_overlap: s.event_loop_overlap() else: s.event_loop_normal()` makes
  `self.enable_overlap` falsy in the normal loop), kept only where every caller agrees.
- Class invariants: `assert`s on `self` attributes in a constructor.
- Construction constants of the round's object: `super().__init__()` then `self.flag = False`
  in its class's constructor (`Stability.constants`).
- Call-site bindings: constant arguments, and the literal defaults of omitted parameters.

Only attributes nothing but the object's construction assigns are trusted (`stable`,
`analysis.stability`): a fact about an attribute some method reassigns could stop holding in the
middle of a round.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

from rankguard.analysis.call_sites import (
    BoundAt,
    Passed,
    bound_at,
    literal_truth,
    passed_arguments,
)
from rankguard.analysis.doubts import SKIPPABLE, passed_on, shaky_facts, shaky_of
from rankguard.analysis.hardware import StoredProbes, platform_facts
from rankguard.analysis.invariants import Invariants
from rankguard.analysis.narrowing import class_test
from rankguard.analysis.precision import made_by
from rankguard.analysis.predicates import Predicates
from rankguard.analysis.rank_bounds import lone_ranks
from rankguard.analysis.reach import enclosing
from rankguard.analysis.settings import NOT_GETTERS, Settings
from rankguard.analysis.stability import CONSTRUCTORS, SELF, Stability, class_of
from rankguard.catalogs.platforms import Platforms
from rankguard.catalogs.rank_sources import rank_source_catalog
from rankguard.model.facts import (
    UNKNOWN,
    Cond,
    assume,
    complemented,
    evaluate,
    member,
    refs,
    rename,
    rooted,
)
from rankguard.model.invokers import FORWARDING, called_as
from rankguard.model.placement import Attrs, of_segs
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import (
    CALL,
    SUBSCRIPT,
    CallSite,
    Segs,
    Stmt,
    dotted,
    walk_statements,
)

_ARGUMENT = "<argument>"  # a root no Python name can be, while a fact is moved to a parameter


class RoundContext:
    """Per program: which attributes are stable, each class's invariants, each round's facts."""

    def __init__(self, program: Program, platforms: Platforms) -> None:
        self.program = program
        self._rounds: dict[str, dict[Cond, Any]] = {}
        self._aliases: dict[str, dict[tuple[str, ...], tuple[str, ...]]] = {}
        self._computed: dict[str, dict[Segs, Cond]] = {}
        self._stable: dict[tuple[Cond, str | None], bool] = {}
        self._restated: dict[tuple[str | None, Cond], tuple[Cond, ...]] = {}
        self._sites: dict[tuple[int, int], tuple[FunctionRecord, CallSite, Passed, BoundAt]] = {}
        self._invoked: dict[tuple[int, str], tuple[CallSite, CallSite]] = {}
        self._settled: dict[Cond, bool] = {}
        self._constructing: tuple[frozenset[str], frozenset[str]] | None = None
        self.settings = Settings(program)
        self.stability = Stability(program)
        self.probes = StoredProbes(program, self.stability, platforms)
        self.ranks = rank_source_catalog()
        self.predicates = Predicates(program, lambda call: bool(platform_facts(call, platforms)))
        self.asserted = Invariants(program, self.stability, self.predicates, self.self_facts)

    # -- stability -----------------------------------------------------------------------------
    def stable(self, cond: Cond, cls: str | None) -> bool:
        """Every `self.a.b` the fact reads names attributes nothing reassigns on an object of
        `cls` (`a`) or on any object (`b`, whose class is not tracked here). Judged once per
        fact and class: asked at every call the blocking walk enters."""
        key = (cond, cls)
        found = self._stable.get(key)
        if found is None:
            found = self._stable[key] = self._judge_stable(cond, cls)
        return found

    def _judge_stable(self, cond: Cond, cls: str | None) -> bool:
        for segs in refs(cond):
            if segs[0] != SELF:
                continue
            if CALL in segs:
                return False
            attrs = [s for s in segs[1:] if s != SUBSCRIPT]
            if attrs and not self.stability.settled(cls, attrs[0]):
                return False
            if not all(map(self.asserted.field_settled, attrs[1:])):
                return False
        return True

    def self_facts(self, facts: Mapping[Cond, Any], cls: str | None) -> dict[Cond, Any]:
        return {c: v for c, v in facts.items() if rooted(c, SELF) and self.stable(c, cls)}

    def class_tests(self, facts: Mapping[Cond, Any], cls: str | None) -> dict[Cond, Any]:
        """`isinstance` tests on attributes of `self` nothing reassigns after construction
        (`analysis.narrowing`): they hold in a method called on `self`."""
        out = {}
        for cond, value in facts.items():
            test = class_test(cond)
            if test and test[0][0] == SELF and self.stable(("ref", test[0]), cls):
                out[cond] = value
        return out

    def global_facts(self, facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
        """Facts on process-wide settings read through a getter (`get_config().pp_size`)."""
        return {c: v for c, v in facts.items() if _global(c)}

    def aliased(self, record: FunctionRecord, facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
        """Global facts restated for `self` where a constructor of the method's class copies
        the setting (`self.pp_size = get_config().pp_size`) and nothing reassigns the copy."""
        out: dict[Cond, Any] = {}
        settings = self.global_facts(facts)
        if not settings:
            return out
        for target, tree in self.computed_of(record).items():
            value = evaluate(tree, settings)
            if value is not UNKNOWN and self.stable(("ref", target), class_of(record)):
                out[("ref", target)] = value
        for cond, value in settings.items():
            out.update(dict.fromkeys(self._restated_of(record, cond), value))
        return out

    def _restated_of(self, record: FunctionRecord, cond: Cond) -> tuple[Cond, ...]:
        """`cond` on a setting said of each stable copy a constructor of the method's class
        makes of it (`aliases_of`), once per class and fact."""
        cls = class_of(record)
        key = (cls, cond)
        found = self._restated.get(key)
        if found is None:
            made = []
            for source, target in self.aliases_of(record).items():
                if any(segs == source for segs in refs(cond)):
                    renamed = rename(cond, source, target)
                    if rooted(renamed, SELF) and self.stable(renamed, cls):
                        made.append(renamed)
            found = self._restated[key] = tuple(made)
        return found

    def restated_skippable(
        self, record: FunctionRecord, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        """The skippable validation's facts as `record` reads them through its object's copies
        (`aliased`)."""
        skippable = known.get(SKIPPABLE)
        return self.aliased(record, dict(skippable.facts)) if skippable else {}

    def aliases_of(self, record: FunctionRecord) -> dict[tuple[str, ...], tuple[str, ...]]:
        """Settings a constructor of the method's class copies to `self` (getter -> attribute)."""
        cls = class_of(record)
        if cls is None or cls not in self.program.classes:
            return {}
        cached = self._aliases.get(cls)
        if cached is None:
            cached = {}
            for owner in self.program.mro(cls):
                for name in CONSTRUCTORS:
                    method = self.program.classes[owner].methods.get(name)
                    for stmt in self.program.functions[method].info.body if method else ():
                        tree, targets = stmt.tree, stmt.targets
                        if stmt.kind != "assign" or len(targets) != 1 or len(targets[0]) != 2:
                            continue
                        if targets[0][0] == SELF and tree and tree[0] == "ref" and _getter(tree[1]):
                            cached.setdefault(tree[1], targets[0])
            self._aliases[cls] = cached
        return cached

    def computed_of(self, record: FunctionRecord) -> dict[Segs, Cond]:
        """`self.x = <expression>` set once, unconditionally, by the constructors of the
        method's class (`self.enable_overlap = not get_config().disable_overlap`): what the
        settings decide of the expression, they decide of the attribute."""
        cls = class_of(record)
        if cls is None or cls not in self.program.classes:
            return {}
        cached = self._computed.get(cls)
        if cached is None:
            seen: dict[Segs, Cond | None] = {}
            for owner in sorted(self.stability.related(cls)):
                for name in CONSTRUCTORS:
                    method = self.program.classes[owner].methods.get(name)
                    body = self.program.functions[method].info.body if method else ()
                    for stmt in walk_statements(body):
                        for target in stmt.targets:
                            if len(target) == 2 and target[0] == SELF:
                                once = stmt.kind == "assign" and len(stmt.targets) == 1
                                once = once and any(
                                    stmt is top for top in body
                                )  # not under a branch
                                seen[target] = stmt.tree if once and target not in seen else None
            cached = {t: tree for t, tree in seen.items() if tree and any(map(_getter, refs(tree)))}
            self._computed[cls] = cached
        return cached

    # -- class invariants ----------------------------------------------------------------------
    def invariants(self, record: FunctionRecord) -> dict[Cond, Any]:
        """What a constructor of the method's class (or a base) asserts about `self`, where it
        stays true, and the platform probes construction stores on it (`analysis.hardware`)."""
        cls = class_of(record)
        if cls is None or cls not in self.program.classes:
            return {}
        cached = self.asserted.of_class(cls)
        probes = self.probes.facts(record)
        return {**cached, **probes} if probes else cached

    # -- the round -----------------------------------------------------------------------------
    def round_facts(self, record: FunctionRecord) -> dict[Cond, Any]:
        """Facts every caller's selecting branch gives the round function's `self`; those on
        attributes reassigned after construction ride along as shaky (`analysis.doubts`).
        Found once per round (each asks the whole program for the round's callers)."""
        if record.qualname not in self._rounds:
            self._rounds[record.qualname] = self._round_facts(record)
        return dict(self._rounds[record.qualname])

    def _round_facts(self, record: FunctionRecord) -> dict[Cond, Any]:
        found: dict[Cond, Any] | None = None
        for caller, call in self._call_sites(record.qualname):
            facts: dict[Cond, Any] = {}
            receiver = call.target[:-1]
            aliases = _aliases(caller.info.body)
            for cond, positive in _guards_of(caller.info.body, call) or ():
                for name, segs in aliases.items():
                    cond = rename(cond, (name,), segs)
                if len(receiver) == 1 and receiver[0] != SELF:
                    cond = rename(cond, receiver, (SELF,))
                elif receiver != (SELF,):
                    continue
                assumed = complemented(assume(cond, positive))
                facts.update({c: v for c, v in assumed.items() if rooted(c, SELF)})
                facts.update(self.global_facts(assumed))
            if found is not None:
                facts = {c: v for c, v in found.items() if c in facts and facts[c] == v}
            found = facts
        selected = dict(found or {})
        trusted = self.self_facts(selected, class_of(record))
        facts = {c: v for c, v in selected.items() if c in trusted or not rooted(c, SELF)}
        facts.update(shaky_facts({c: v for c, v in selected.items() if c not in facts}))
        facts.update(self.settings.derive(self.global_facts(facts)))
        skippable = self.settings.skippable(self.global_facts(facts))
        if skippable is not None:
            facts[SKIPPABLE] = skippable
        ranks = lone_ranks(complemented(facts), self.ranks)
        facts.update((c, v) for c, v in ranks.items() if self.stable(c, class_of(record)))
        facts.update(self.aliased(record, facts))
        facts.update(self.constants(record))
        facts.update(self.invariants(record))
        return facts

    def constants(self, record: FunctionRecord) -> dict[Cond, Any]:
        """The literal constants construction leaves in attributes of the round's object, which
        nothing reassigns later (`Stability.constants`): `super().__init__()` then `self.flag =
        False` decides the base's `if self.flag:` in this class's round, and, the attribute
        being stable, in the base's methods the round calls on `self`. Only for the round's
        own object: an object still being constructed (one the round makes) may not hold it
        yet."""
        cls = class_of(record)
        if cls is None or self._run_in_construction(record):
            return {}
        constants = self.stability.constants(cls)
        return {("ref", (SELF, a)): evaluate(tree, {}) for a, tree in constants.items()}

    def _run_in_construction(self, record: FunctionRecord) -> bool:
        """Construction may run the round before it ends (`self.train_batch()`, or a thread
        started on `self.loop`, from a constructor or what it calls): the object may not hold
        its constants yet. Judged over all that construction may call, once per program."""
        if self._constructing is None:
            program = self.program
            seen = set(self.stability.construction())
            work = list(seen)
            while work:
                for resolved in program.calls.get(work.pop(), ()):
                    for target in resolved.targets:
                        if target.name not in seen and target.name in program.functions:
                            seen.add(target.name)
                            work.append(target.name)
            named = {r[-1] for f in seen for r, _ in program.functions[f].info.value_refs if r}
            self._constructing = (frozenset(seen), frozenset(named))
        called, named = self._constructing
        return record.qualname in called or record.info.name in named

    def round_writers(self, record: FunctionRecord) -> frozenset[str] | None:
        """The functions that may reassign what a fact the round is chosen under but cannot
        trust (a shaky fact) reads: `self.mode` on the round's object, and, past it, any
        attribute of that name anywhere (`self.args.mode`: whatever `args` holds). None where
        one may be a property, whose value follows state this does not follow. If the round
        runs none of them but on a path that needs the fact broken already, nothing breaks it
        (`BlockingAnalysis.inductive`)."""
        cls = class_of(record)
        found: set[str] = set()
        for cond in shaky_of(self.round_facts(record)):
            for segs in refs(cond):
                if len(segs) < 2 or segs[0] != SELF or member(segs):
                    continue
                owners = [cls, *[None] * (len(segs) - 2)]
                for owner, attr in zip(owners, segs[1:], strict=True):
                    if self.stability.computed(owner, attr):
                        return None
                    found |= self.stability.writers(owner, attr)
        return frozenset(found)

    def entry_facts(
        self, record: FunctionRecord, call: CallSite | None, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        """What holds on entry to `record` from this call: facts on `self` when the receiver
        is the caller's own `self`, the callee class's invariants, constant parameters."""
        on_self = call is not None and call.target[:1] in ((SELF,), ("super()",))
        facts: dict[Cond, Any] = passed_on(known, on_self)
        if on_self:
            facts.update(self.self_facts(known, class_of(record)))
            facts.update(self.class_tests(known, class_of(record)))
        facts.update(self.global_facts(known))
        facts.update(self.aliased(record, known))
        facts.update(self.invariants(record))
        if call is not None:
            fixed, plain, negated = self.call_site(record, call)[1]
            facts.update(fixed)
            # `f(wait=not overlap)` where the caller knows `overlap` (not a comprehension's own)
            for name, segs in () if call.bound else negated:
                truth = known.get(("ref", segs), UNKNOWN)
                if literal_truth(truth) and self._settled_reads(("ref", segs)):
                    facts[("ref", (name,))] = not truth
            shaky = shaky_of(known) if plain else {}  # asked on every entry: scan only if needed
            for name, segs in plain:  # a fact on an attribute only where nothing reassigns it
                restated = _restated(known, segs, name)
                facts.update((c, v) for c, v in restated.items() if self._settled_reads(c))
                facts.update(shaky_facts(_restated(shaky, segs, name)))
        return facts

    def call_site(self, record: FunctionRecord, call: CallSite) -> tuple[Passed, BoundAt]:
        """`passed_arguments` and `bound_at`, once per callee and call site (asked at every
        entry through it). Keyed by identity: the entry keeps both objects alive, so no other
        object can take their ids while it is held."""
        key = (id(record), id(call))
        found = self._sites.get(key)
        if found is None:
            passed = passed_arguments(record, call)
            found = self._sites[key] = (record, call, passed, bound_at(record, call, passed))
        return found[2], found[3]

    def as_called(self, call: CallSite, targets: Sequence[Target], target: Target) -> CallSite:
        """`invokers.called_as`, made once per site and target and kept with `call`
        (`call_site` keys both by identity)."""
        if target.via not in FORWARDING:
            return call  # every other entry, on the walk's hot path: nothing to keep
        key = (id(call), target.name)
        if key not in self._invoked:
            self._invoked[key] = (call, called_as(call, targets, target.name))
        return self._invoked[key][1]

    def _settled_reads(self, cond: Cond) -> bool:
        """Every attribute `cond` reads past its root is one nothing reassigns after
        construction (an enum member is a constant): judged once per fact."""
        found = self._settled.get(cond)
        if found is None:
            settled = partial(self.stability.settled, None)
            found = all(member(segs) or all(map(settled, segs[1:])) for segs in refs(cond))
            self._settled[cond] = found
        return found

    def _call_sites(self, name: str) -> Iterator[tuple[FunctionRecord, CallSite]]:
        for caller in sorted(self.program.calls):
            for resolved in self.program.calls[caller]:
                if any(t.name == name and t.kind == "call" for t in resolved.targets):
                    yield self.program.functions[caller], resolved.call


def _restated(known: Mapping[Cond, Any], segs: Segs, param: str) -> dict[Cond, Any]:
    """What the caller knows of the argument `segs` (`_endpoint is None` is false past an
    early return; `work.kind == Kind.IDLE`), said of the parameter it fills."""
    out: dict[Cond, Any] = {}
    for cond, value in known.items():
        said = _said_of(cond, segs, param)
        if said is not None:
            out[said] = value
    return out


@lru_cache(maxsize=1 << 16)
def _said_of(cond: Cond, segs: Segs, param: str) -> Cond | None:
    """`cond` about `segs` restated about `param`, if it reads nothing else but constants."""
    marked = rename(cond, segs, (_ARGUMENT,))
    return rename(marked, (_ARGUMENT,), (param,)) if rooted(marked, _ARGUMENT) else None


def enclosed(
    caller: FunctionRecord, callee: FunctionRecord, env: Mapping[str, str]
) -> dict[str, str]:
    """What a function nested in `caller` knows of the placements of `caller`'s locals where
    `caller` calls it (handing it to `asyncio.to_thread` too): a closure reads them as they
    are then, save the names it binds itself or takes as parameters."""
    if not callee.qualname.startswith(caller.qualname + ".<locals>."):
        return {}
    own = {p.name for p in callee.info.params} | set(callee.info.bound)
    return {name: fact for name, fact in env.items() if name.split(".", 1)[0] not in own}


def placements(
    passed: Passed,
    call: CallSite,
    stmt_calls: Sequence[CallSite],
    env: Mapping[str, str],
    attrs: Attrs,
) -> dict[str, str]:
    """Where the tensors a call passes (`passed`: `passed_arguments`) live, per parameter of the
    callee: a local's fact or an attribute's placement (`f(ids_cpu, batch.seq_lens_cpu)`), or
    what the call that makes the argument gives (`f(torch.arange(n, device="cpu"))`). What the
    caller knows of a passed reference's attributes (`assert result.ids.is_cpu`, then
    `f(result)`) holds for the parameter's (`result.ids` in `f`): the same object, reached
    before anything else runs."""
    out: dict[str, str] = {}
    positional = [o for o in call.operands if o.keyword is None]
    for name, (key, text) in passed.items():
        parts = dotted(text)
        if parts is not None:
            prefix = text + "."
            for known, fact in env.items():
                if known.startswith(prefix):
                    out[name + known[len(text) :]] = fact
            place = of_segs(parts, env, attrs)
        else:
            operand = positional[int(key)] if key.isdigit() else call.operand(key)
            place = made_by(operand, call, stmt_calls, env, attrs) if operand else None
        if place is not None:
            out[name] = place
    return out


def _getter(segs: tuple[str, ...]) -> bool:
    """`get_config().pp_size`: a setting read from what a bare function returns."""
    return (
        len(segs) >= 3
        and segs[1] == CALL
        and segs[0] not in NOT_GETTERS
        and CALL not in segs[2:]
        and SUBSCRIPT not in segs
    )


@lru_cache(maxsize=1 << 16)  # asked ~2M times per sglang check, of far fewer conditions
def _global(cond: Cond) -> bool:
    found = list(refs(cond))
    return bool(found) and all(_getter(segs) for segs in found)


def _aliases(body: Sequence[Stmt]) -> dict[str, tuple[str, ...]]:
    """Locals assigned exactly once, from a plain reference (`mode = s.mode`)."""
    seen: dict[str, tuple[str, ...] | None] = {}
    for stmt in walk_statements(body):
        for target in stmt.targets:
            if len(target) != 1:
                continue
            name = target[0]
            value = stmt.value
            if value and value[0] == "annotated" and len(value) > 2:
                value = value[2]  # `mode: Mode = s.mode`
            ref = value[1] if stmt.kind == "assign" and value and value[0] == "ref" else None
            seen[name] = None if name in seen else ref
    return {k: v for k, v in seen.items() if v}


def _guards_of(body: Sequence[Stmt], call: CallSite) -> list[tuple[Cond, bool]] | None:
    """The (condition, side) pairs of the `if`s enclosing `call` in `body`, outermost first."""
    path = enclosing(body, call)
    if path is None:
        return None
    return [(stmt.cond, index == 0) for stmt, index in path if stmt.kind == "if"]
