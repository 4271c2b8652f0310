"""Catalogs as data: what is a collective (and, for other analyses, what blocks)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import cache

from rankguard.catalogs.loader import check_entry, load_catalog


@dataclass(frozen=True)
class CollectiveCatalog:
    primitives: frozenset[str]
    point_to_point: frozenset[str]
    patterns: tuple[str, ...] = ()
    # Answers by name: asked about every resolved call site (over a million on a large tree),
    # each pattern an fnmatch; far fewer distinct names.
    _kinds: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def kind(self, qualname: str) -> str | None:
        """ "collective", "p2p" or None for a resolved callee's qualified name."""
        if qualname in self._kinds:
            return self._kinds[qualname]
        found: str | None = None
        if qualname in self.point_to_point:
            found = "p2p"
        elif qualname in self.primitives or any(
            fnmatch.fnmatchcase(qualname, pat) for pat in self.patterns
        ):
            found = "collective"
        self._kinds[qualname] = found
        return found


@cache
def _shipped() -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    """Names: each group's modules x its names (the top level is the first group); patterns:
    methods of library objects (`*DTensor*.redistribute`), matched like config patterns."""
    data = load_catalog("collectives")
    coll: set[str] = set()
    p2p: set[str] = set()
    for group in [data, *data.get("group", [])]:
        mods = group["modules"]
        coll.update(f"{m}.{n}" for m in mods for n in group.get("collective", ()))
        p2p.update(f"{m}.{n}" for m in mods for n in group.get("point-to-point", ()))
    return frozenset(coll), frozenset(p2p), tuple(data.get("patterns", ()))


def collective_catalog(extra_patterns: tuple[str, ...] = ()) -> CollectiveCatalog:
    coll, p2p, patterns = _shipped()
    return CollectiveCatalog(coll, p2p, (*patterns, *extra_patterns))


# -- what blocks --------------------------------------------------------------------------------


def normalise(callee: str) -> str:
    """`queue.Queue().get` -> `queue.Queue.get`: catalog patterns name types, not call results."""
    return callee.replace("()", "").replace("[]", "")


@dataclass(frozen=True)
class BlockingEntry:
    """One catalog entry (see the comments at the top of `blocking.toml`)."""

    name: str
    kind: str
    reason: str
    match: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    guard: str | None = None
    block_arg: int | None = None
    timeout_arg: int | None = None
    ready: tuple[str, ...] = ()  # receiver methods whose truth means the wait returns at once
    origin: str = "catalog"  # catalog | config


def _entry(data: dict, origin: str, where: str) -> BlockingEntry:
    check_entry("blocking", data, where)
    name = data["name"]
    guard = data.get("guard")
    return BlockingEntry(
        name=name,
        kind=str(data.get("kind", "configured")),
        reason=str(data.get("reason", "listed as blocking in config `blocking`")),
        match=tuple(data.get("match", (name,))),
        methods=tuple(data.get("methods", ())),
        context=tuple(data.get("context", ())),
        guard=guard,
        block_arg=data.get("block-arg"),
        timeout_arg=data.get("timeout-arg"),
        ready=tuple(data.get("ready", ())),
        origin=origin,
    )


@cache
def _shipped_blocking() -> tuple[BlockingEntry, ...]:
    data = load_catalog("blocking")  # validated as a whole against the same schema
    return tuple(_entry(item, "catalog", "blocking.toml") for item in data["entry"])


class BlockingCatalog:
    """Answers "does this resolved callee block, and why"; memoised per callee name."""

    def __init__(self, entries: tuple[BlockingEntry, ...], waived: tuple[str, ...] = ()) -> None:
        self.entries = entries
        self.waived = waived
        self._memo: dict[str, BlockingEntry | None] = {}
        self._methods: dict[str, BlockingEntry] = {}
        for entry in entries:
            for method in entry.methods:
                self._methods.setdefault(method, entry)

    def _waived(self, entry: BlockingEntry, callee: str) -> bool:
        return any(
            fnmatch.fnmatchcase(entry.name, pat) or fnmatch.fnmatchcase(callee, pat)
            for pat in self.waived
        )

    def match(self, callee: str, config_only: bool = False) -> BlockingEntry | None:
        """The entry a resolved callee (as the model names it) falls under, if any.

        `config_only`: the callee is a function of the analysed program, whose body the walk
        reads; only the user's own entries may declare it blocking as a whole.
        """
        if config_only:
            plain = normalise(callee)
            for entry in self.entries:
                if entry.origin == "config" and any(
                    fnmatch.fnmatchcase(plain, pat) for pat in entry.match
                ):
                    return None if self._waived(entry, plain) else entry
            return None
        if callee in self._memo:
            return self._memo[callee]
        plain = normalise(callee)
        found: BlockingEntry | None = None
        # Config entries come first, so a user can re-classify a shipped one.
        for entry in self.entries:
            if any(fnmatch.fnmatchcase(plain, pat) for pat in entry.match):
                found = entry
                break
        if found is not None and self._waived(found, plain):
            found = None
        self._memo[callee] = found
        return found

    def by_method(self, method: str) -> BlockingEntry | None:
        """For receivers the model cannot type: a distinctive method name alone."""
        entry = self._methods.get(method)
        if entry is None or self._waived(entry, entry.name):
            return None
        return entry

    def context(self, value: str) -> BlockingEntry | None:
        """`with X:` where X is (an instance of) this normalised name acquires a lock."""
        plain = normalise(value)
        for entry in self.entries:
            if entry.context and any(fnmatch.fnmatchcase(plain, p) for p in entry.context):
                return None if self._waived(entry, plain) else entry
        return None


def blocking_catalog(
    extra: tuple[object, ...] = (), waived: tuple[str, ...] = ()
) -> BlockingCatalog:
    """The shipped catalog extended by config `blocking` and thinned by `non-blocking`."""
    configured: list[BlockingEntry] = []
    for item in extra:
        if isinstance(item, str):
            configured.append(_entry({"name": item, "match": [item]}, "config", "config"))
        else:
            configured.append(_entry(dict(item), "config", "config `blocking`"))  # type: ignore[call-overload]
    return BlockingCatalog((*configured, *_shipped_blocking()), tuple(waived))
