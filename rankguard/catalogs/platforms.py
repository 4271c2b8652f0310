"""The platforms catalog (`platforms.toml`): which hardware a predicate or a module is for.

A run analyses one deployment: findings on paths only an NPU or an Apple-silicon worker takes
are noise to a CUDA user, and a chain that enters an MLX worker and then a CUDA attention
backend runs nowhere. The config key `platforms` says which hardware the deployment runs on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from rankguard.catalogs.loader import load_catalog
from rankguard.core.errors import InputError

DEFAULT = ("cuda",)
EVERY = "*"
_TOKENS = re.compile(r"[._]")


@dataclass(frozen=True)
class Platforms:
    true: frozenset[str] = frozenset()  # predicates a selected platform makes true
    false: frozenset[str] = frozenset()  # predicates naming only platforms not selected
    foreign_words: frozenset[str] = frozenset()  # module-name tokens of other platforms
    _modules: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def predicate(self, name: str) -> bool | None:
        """What the selected platforms make of a predicate (`is_npu`, `_is_hip`), if anything."""
        name = name.lstrip("_")
        if name in self.true:
            return True
        return False if name in self.false else None

    def foreign(self, module: str) -> bool:
        """The module is for another platform (`hardware_backend.npu.allocator`)."""
        found = self._modules.get(module)
        if found is None:
            found = not self.foreign_words.isdisjoint(_TOKENS.split(module))
            self._modules[module] = found
        return found


@cache
def platform_catalog(selected: tuple[str, ...] = ()) -> Platforms:
    """The catalog seen from the platforms config selects (none given: CUDA; `*`: every one)."""
    entries = load_catalog("platforms")["platform"]  # validated against its schema
    names = sorted(e["name"] for e in entries)
    chosen = set(selected or DEFAULT)
    if EVERY in chosen:
        return Platforms()
    unknown = sorted(chosen - set(names))
    if unknown:
        raise InputError(
            f"[tool.rankguard] 'platforms' names {', '.join(map(repr, unknown))}, not a known "
            f"platform (known: {', '.join(names)}, or '*' for every one)"
        )
    # Several platforms: a predicate is true only if every one makes it true, false only if
    # none does (`is_hip` on ["cuda", "rocm"] decides nothing).
    selected = [set(e["predicates"]) for e in entries if e["name"] in chosen]
    true = set.intersection(*selected)
    words = {w for e in entries if e["name"] in chosen for w in e["words"]}
    return Platforms(
        frozenset(true),
        frozenset(p for e in entries for p in e["predicates"]) - set.union(*selected),
        frozenset(w for e in entries for w in e["words"]) - words,
    )
