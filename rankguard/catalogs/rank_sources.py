"""The rank-source catalog (`rank_sources.toml`): what varies between the ranks of a group.

Loaded and validated once; a malformed row is an `InputError` naming the table and the row.
The uniformity analysis asks it four things: which kind of varying value a callee returns,
whether a name is a rank's own id (and of which group dimension), whether a name is uniform
by construction (a group size or handle), and whether a rank id of one dimension is the same on
every rank of a group of another dimension (the grids).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from rankguard.catalogs.driver_terms import term_catalog
from rankguard.catalogs.loader import load_catalog
from rankguard.core.errors import InputError

_FILE = "rank_sources.toml"


@dataclass(frozen=True)
class SourceKind:
    kind: str
    why: str
    match: tuple[str, ...]


@dataclass(frozen=True)
class Generator:
    """A random generator the program can seed: `seeds` set its state, `draws` read it
    (fnmatch patterns over resolved callee names)."""

    name: str
    seeds: tuple[str, ...]
    draws: tuple[str, ...]


@dataclass(frozen=True)
class RankSourceCatalog:
    kinds: tuple[SourceKind, ...]
    rank_calls: tuple[re.Pattern[str], ...]
    rank_names: tuple[re.Pattern[str], ...]
    peers: frozenset[str]
    rank_environment: frozenset[str]
    environment_reads: frozenset[str]
    uniform_calls: tuple[re.Pattern[str], ...]
    placement_keywords: frozenset[str]
    placement_methods: frozenset[str]
    placement_calls: frozenset[str]
    feeders: frozenset[str]
    size_methods: frozenset[str]
    measures: frozenset[str]
    placement_attributes: frozenset[str]
    address_methods: frozenset[str]  # `x.data_ptr()`: where `x` lives, not what it holds
    displays: tuple[str, ...]  # progress displays: they yield their first argument's items
    aliases: dict[str, str]  # spelling -> dimension
    grids: tuple[tuple[str, tuple[str, ...]], ...]  # (of, axes)
    # Composite dimensions: every axis they may span, and the axes they span in every mode.
    spans: dict[str, tuple[str, ...]]
    always: dict[str, tuple[str, ...]]
    generators: tuple[Generator, ...]
    device_identity: frozenset[str]  # the device model's identity: uniform, never a `driver`
    group_suffix: re.Pattern[str]
    world_groups: frozenset[str]  # handles of the default group, by resolved dotted name
    _memo: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)
    _compiled: list[tuple[str, re.Pattern[str]]] = field(
        default_factory=list, compare=False, repr=False
    )
    # Answers by name: the uniformity walk asks about ~1M names on a large tree, few distinct.
    _uniform: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    _displays: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    _stripped: dict[str, tuple[str | None, str]] = field(
        default_factory=dict, compare=False, repr=False
    )

    # -- what kind of varying value a callee returns ------------------------------------
    def with_driver_terms(self, patterns: Iterable[str]) -> RankSourceCatalog:
        """The same catalog with more `driver` patterns (shared driver terms, config)."""
        kinds = tuple(
            SourceKind(k.kind, k.why, tuple(dict.fromkeys((*k.match, *patterns))))
            if k.kind == "driver"
            else k
            for k in self.kinds
        )
        return RankSourceCatalog(
            kinds,
            *(getattr(self, f) for f in _COPIED),  # type: ignore[arg-type]
        )

    def why(self, kind: str) -> str:
        if kind == "rank-id":
            return "this rank's own id"
        return next((k.why for k in self.kinds if k.kind == kind), kind)

    def is_display(self, names: Sequence[str]) -> bool:
        """Whether a callee (its resolved names) is a progress display around an iterable."""
        key = "\0".join(names)
        if key not in self._displays:
            self._displays[key] = bool(names) and all(
                any(fnmatch.fnmatchcase(n, p) for p in self.displays) for n in names
            )
        return self._displays[key]

    def kind_of_call(self, names: Sequence[str]) -> str | None:
        for name in names:
            if name not in self._memo:
                self._memo[name] = self._classify(name)
            if self._memo[name] is not None:
                return self._memo[name]
        return None

    def _classify(self, name: str) -> str | None:
        if self.is_rank_call(name):
            return "rank-id"
        if any(fnmatch.fnmatchcase(name, p) for p in self.device_identity):
            return None
        if not self._compiled:
            # One expression per kind: asked for ~240k call sites on a large tree.
            self._compiled.extend(
                (k.kind, re.compile("|".join(fnmatch.translate(p) for p in k.match)))
                for k in self.kinds
                if k.match
            )
        return next((kind for kind, rx in self._compiled if rx.match(name)), None)

    # -- random generators ----------------------------------------------------------------
    def generator_drawn(self, names: Sequence[str]) -> str:
        """The generator a random draw reads (`torch.multinomial` -> "torch"), "" for none."""
        return self._generator(names, lambda g: g.draws)

    def generator_seeded(self, names: Sequence[str]) -> str:
        """The generator a call seeds (`torch.manual_seed` -> "torch"), "" for none."""
        return self._generator(names, lambda g: g.seeds)

    def _generator(self, names: Sequence[str], patterns: Any) -> str:
        for generator in self.generators:
            if any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns(generator)):
                return generator.name
        return ""

    # -- names ------------------------------------------------------------------------------
    def is_rank_call(self, name: str) -> bool:
        last = name.rsplit(".", 1)[-1]
        return any(rx.match(last) for rx in self.rank_calls) and not self.is_uniform_name(last)

    def is_rank_variable(self, text: str | None) -> bool:
        """A quoted environment variable name the launcher sets per rank (`"LOCAL_RANK"`)."""
        return text is not None and text.strip("'\"") in self.rank_environment

    def is_rank_name(self, name: str) -> bool:
        """`tp_rank`, `pp_rank`, `rank`, `rank_in_group`: a rank's own id, by its name."""
        if name in self.peers:
            return False
        stripped = self._strip_dimension(name.lstrip("_"))[1]
        return any(rx.match(stripped) for rx in self.rank_names)

    def is_uniform_name(self, name: str) -> bool:
        """`world_size`, `tp_size`, `get_tp_group`: the same on every rank of the group."""
        found = self._uniform.get(name)
        if found is None:
            last = name.rsplit(".", 1)[-1].lstrip("_")
            found = any(rx.match(last) for rx in self.uniform_calls) or self.is_group_size(last)
            self._uniform[name] = found
        return found

    def is_group_size(self, name: str) -> bool:
        """`world_size`, `tp_size`, `get_tensor_model_parallel_world_size`: how many ranks a
        group has."""
        last = name.rsplit(".", 1)[-1].lstrip("_").removeprefix("get_")
        dimension, rest = self._strip_dimension(last)
        return rest.endswith("world_size") or (dimension is not None and rest == "size")

    def rank_beside(self, size: str) -> str | None:
        """The rank id named like a group size: `world_size` -> `rank`, `pp_size` ->
        `pp_rank`, `get_tp_world_size` -> `get_tp_rank` (None: not a size)."""
        if not self.is_group_size(size):
            return None
        if size.endswith("world_size"):
            return size.removesuffix("world_size") + "rank"
        return size.removesuffix("size") + "rank"

    def _strip_dimension(self, name: str) -> tuple[str | None, str]:
        """`attn_tp_rank` -> ("attn_tp", "rank"); the longest alias prefix wins."""
        stripped = self._stripped.get(name)
        if stripped is None:
            found = [alias for alias in self.aliases if name.startswith(alias + "_")]
            alias = max(found, key=len) if found else None
            stripped = (
                (None, name) if alias is None else (self.aliases[alias], name[len(alias) + 1 :])
            )
            self._stripped[name] = stripped
        return stripped

    # -- dimensions ---------------------------------------------------------------------
    def dimension_of_rank(self, segments: Sequence[str]) -> str | None:
        """The dimension a rank id is of: `tp_rank`, `get_tp_rank`, `tp_group.rank_in_group`,
        `get_tp_group().rank_in_group`; None when it does not say (varies with every group)."""
        last = segments[-1].lstrip("_").rsplit("_to_", 1)[-1]  # a conversion's result
        if last.startswith("get_"):
            last = last[4:]
        dimension, _rest = self._strip_dimension(last)
        if dimension is not None:
            return dimension
        for owner in reversed(segments[:-1]):
            found = self.dimension_of_group(owner)
            if found is not None:
                return found
        return None

    def dimension_of_group(self, segment: str) -> str | None:
        """`tp_group`, `get_tp_group`, `attn_tp_cpu_group`, `tp_device_group` -> the dimension."""
        name = segment.lstrip("_")
        if name.startswith("get_"):
            name = name[4:]
        match = self.group_suffix.search(name)
        if match is None:
            return None
        stem = name[: match.start()]
        # `dp_tp`: the tp group inside one dp replica; the innermost dimension names it.
        while stem not in self.aliases and "_" in stem:
            stem = stem.split("_", 1)[1]
        return self.aliases.get(stem)

    def within(self, group: str, dimensions: str | Sequence[str]) -> bool:
        """Whether every group of dimension `group` lies inside one group that a value agreed
        over `dimensions` in turn is the same on (the same dimension, the world, or groups whose
        axes, in every mode, cover each axis `group` may span: a value agreed over the attention
        CP group and then over the attention TP group is the same over both)."""
        over = (dimensions,) if isinstance(dimensions, str) else tuple(dimensions)
        if group in over or "world" in over:
            return True
        covering = [axis for d in over for axis in self.always.get(d, (d,))]
        return all(
            any(c in self._ancestry(axis) for c in covering)
            for axis in self.spans.get(group, (group,))
        )

    def rank_uniform_over(self, rank_dimension: str | None, group: str | None) -> bool:
        """Whether a rank id of `rank_dimension` is the same on every rank of `group`: each
        axis the rank may index is another axis of a grid than each axis the group may span."""
        if rank_dimension is None or group is None or rank_dimension == group:
            return False
        return all(
            self._axis_uniform_over(mine, theirs)
            for mine in self.spans.get(rank_dimension, (rank_dimension,))
            for theirs in self.spans.get(group, (group,))
        )

    def _axis_uniform_over(self, rank_dimension: str, group: str) -> bool:
        if rank_dimension == group:
            return False
        mine, theirs = self._ancestry(rank_dimension), self._ancestry(group)
        return any(
            a in axes and b in axes and a != b
            for _of, axes in self.grids
            for a in mine
            for b in theirs
        )

    def _ancestry(self, dimension: str) -> list[str]:
        out = [dimension]
        while True:
            parent = next((of for of, axes in self.grids if out[-1] in axes), None)
            if parent is None or parent in out:
                return out
            out.append(parent)


_COPIED = (
    "rank_calls",
    "rank_names",
    "peers",
    "rank_environment",
    "environment_reads",
    "uniform_calls",
    "placement_keywords",
    "placement_methods",
    "placement_calls",
    "feeders",
    "size_methods",
    "measures",
    "placement_attributes",
    "address_methods",
    "displays",
    "aliases",
    "grids",
    "spans",
    "always",
    "generators",
    "device_identity",
    "group_suffix",
    "world_groups",
)


def _regexes(values: Iterable[str], where: str) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(v) for v in values)
    except re.error as exc:
        raise InputError(f"{where}: bad regular expression: {exc}") from exc


def parse_rank_sources(data: dict) -> RankSourceCatalog:
    """Build the catalog from its tables (their shape is checked by the schema; what a schema
    cannot say, a bad regular expression or an unknown grid dimension, is checked here)."""
    rank, uniform = data.get("rank", {}), data.get("uniform", {})
    placement, containers = data.get("placement", {}), data.get("containers", {})
    aliases = {a: row["name"] for row in data.get("dimension", []) for a in row["aliases"]}
    names = {row["name"] for row in data.get("dimension", [])}
    grids = []
    for index, row in enumerate(data.get("grid", [])):
        unknown = [a for a in (*row["axes"], row["of"]) if a not in names]
        if unknown:
            raise InputError(f"{_FILE}: [[grid]] #{index + 1}: unknown dimension(s) {unknown}")
        grids.append((row["of"], tuple(row["axes"])))
    spans: dict[str, tuple[str, ...]] = {}
    always: dict[str, tuple[str, ...]] = {}
    composite = {row["name"] for row in data.get("dimension", []) if "axes" in row}
    for row in data.get("dimension", []):
        if "axes" not in row:
            continue
        where = f"{_FILE}: [[dimension]] {row['name']!r}"
        axes, sometimes = tuple(row["axes"]), tuple(row.get("sometimes", ()))
        unknown = [a for a in axes if a not in names or a in composite]
        if unknown or not set(sometimes) <= set(axes):
            raise InputError(f"{where}: axes must be plain dimensions, sometimes among them")
        spans[row["name"]] = axes
        always[row["name"]] = tuple(a for a in axes if a not in sometimes)

    def words(table: dict, key: str) -> frozenset[str]:
        return frozenset(table.get(key, ()))

    return RankSourceCatalog(
        kinds=tuple(
            SourceKind(row["kind"], row["why"], tuple(row["match"]))
            for row in data.get("source", [])
        ),
        rank_calls=_regexes(rank.get("calls", ()), f"{_FILE}: [rank] calls"),
        rank_names=_regexes(rank.get("names", ()), f"{_FILE}: [rank] names"),
        peers=words(rank, "peers"),
        rank_environment=words(rank, "environment"),
        environment_reads=words(rank, "environment_reads"),
        uniform_calls=_regexes(uniform.get("calls", ()), f"{_FILE}: [uniform] calls"),
        placement_keywords=words(placement, "keywords"),
        placement_methods=words(placement, "methods"),
        placement_calls=words(placement, "calls"),
        feeders=words(containers, "feeders"),
        size_methods=words(containers, "sizes"),
        measures=words(containers, "measures"),
        placement_attributes=words(placement, "attributes"),
        address_methods=words(placement, "addresses"),
        displays=tuple(data.get("wrappers", {}).get("displays", ())),
        aliases=aliases,
        grids=tuple(grids),
        spans=spans,
        always=always,
        group_suffix=_regexes((data["group"]["suffix"],), f"{_FILE}: [group] suffix")[0],
        world_groups=words(data["group"], "world"),
        generators=tuple(
            Generator(row["name"], tuple(row["seeds"]), tuple(row["draws"]))
            for row in data.get("generator", [])
        ),
        device_identity=words(data.get("device", {}), "identity"),
    )


@cache
def _shipped() -> RankSourceCatalog:
    return parse_rank_sources(load_catalog("rank_sources")).with_driver_terms(
        term_catalog().patterns()
    )


def rank_source_catalog(driver_terms: tuple[Any, ...] = ()) -> RankSourceCatalog:
    """The shipped catalog plus every driver term, shipped and configured (one parser for
    `driver-terms`, validated: `catalogs.driver_terms`)."""
    if not driver_terms:
        return _shipped()
    return _shipped().with_driver_terms(term_catalog(tuple(driver_terms)).patterns())
