"""Rule `stale-widening-term`: a cached driver term whose stale value widens a budget.

The rows come from the staleness audit (DESIGN.md §2.5): one finding per cached row whose verdict
is unsafe, at the consumer's line. A kept composite (`cache - trapped` cached as one value) is
judged as the composite, so caching it "because trapped is subtracted" is still reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rankguard.core.chains import chain_json, chain_key
from rankguard.core.findings import Finding, fingerprint
from rankguard.rules.base import Example, Invalid, Rule, RuleContext, Valid

_TRAPPED = """\
import functools, time
import torch

class Budget:
    def trapped(self):
        now = time.monotonic()
        if now - self._at >= 30:
            self._trapped = sum(
                b["size"] for s in torch.cuda.memory_snapshot() for b in s["blocks"]
            )
            self._at = now
        return self._trapped

    {decorator}
    def takeable(self):
        cache = torch.cuda.memory_reserved()
        trapped = self.trapped()
        return cache - trapped

    def spendable(self):
        return torch.cuda.mem_get_info()[0] + self.takeable() - self.granted{mark}
"""


class StaleWideningTerm(Rule):
    name = "stale-widening-term"
    code = "RG104"
    description = "A cached driver term whose stale value widens the budget it feeds."
    help = (
        "A cached (decorator cache, functools.cache(fn), time-cadence attribute, memo, value "
        "set at start-up or in a module global, cadence helper) driver value goes stale. Free "
        "memory errs large (it shrinks as the rank works), bytes allocated err small (they "
        "grow): where the way a term errs widens the budget it reaches (added or on the "
        "admitting side of a comparison when it errs large, subtracted when it errs small) "
        "this rank grants more than it has. See `rankguard staleness` for the composed sign at "
        "every consumer; read the term fresh, cache only terms whose staleness narrows every "
        "budget, or declare the consumer `smaller-is-risky` when a smaller value is the "
        "dangerous side."
    )

    what = (
        "Composes the sign of every cached driver or allocator term (decorator caches, "
        "functools.cache(fn), time-cadence attributes, memos, start-up values, cadence "
        "helpers) through arithmetic, returns, arguments and attribute stores to every budget "
        "it feeds, and reports the cached terms whose stale value widens that budget: free "
        "memory errs large, so added it widens; bytes allocated err small, so subtracted they "
        "widen."
    )
    why = (
        "A cached reading is cheap and stale. Where its staleness widens a budget, this rank "
        "grants memory or capacity it no longer has, and the failure shows up far from the "
        "cache, as an out-of-memory or an overcommitted pool."
    )
    instead = (
        "class Budget:\n    def spendable_bytes(self):\n"
        "        free, _ = torch.cuda.mem_get_info()  # read fresh where it is added\n"
        "        return free + self.takeable()\n"
    )
    options = ("driver-terms", "cadence-helpers", "smaller-is-risky")
    fix = ""

    VALID: ClassVar[list[Example]] = [
        # Only `trapped` is cached: it is subtracted up to the budget, so staleness narrows it.
        Valid(_TRAPPED.format(decorator="", mark="")),
        # A cached term that is subtracted (`want`: how much to ask the pool to release).
        Valid(
            "import functools\nimport torch\n\n@functools.lru_cache\n"
            "def reserved():\n    return torch.cuda.memory_reserved()\n\n"
            "def want(target):\n    return target - reserved()\n"
        ),
        # Uncached terms are rows of `rankguard staleness`, never findings.
        Valid("import torch\n\ndef room(b):\n    return b + torch.cuda.mem_get_info()[0]\n"),
    ]
    INVALID: ClassVar[list[Example]] = [
        # The incident's fix: the whole takeable value cached, then added at spendable.
        Invalid(_TRAPPED.format(decorator="@functools.lru_cache", mark="  # expect")),
        Invalid(
            "import functools\nimport torch\n\n@functools.cache\n"
            "def reserved():\n    return torch.cuda.memory_reserved()\n\n"
            "def room(free):\n    return free + reserved()  # expect\n"
        ),
        # A stale `memory_allocated` errs small: subtracting it widens the room left.
        Invalid(
            "import functools\nimport torch\n\n@functools.cache\n"
            "def used():\n    return torch.cuda.memory_allocated()\n\n"
            "def room(cap):\n    return cap - used()  # expect\n"
        ),
        # A consumer declared smaller-is-risky flips the verdict of a subtracted cached term.
        Invalid(
            "import functools\nimport torch\n\n@functools.cache\n"
            "def reserved():\n    return torch.cuda.memory_reserved()\n\n"
            "def keep_free(target):\n    return target - reserved()  # expect\n",
            smaller_is_risky=["*.keep_free"],
        ),
    ]

    def check(self, context: RuleContext) -> Iterable[Finding]:
        report = context.staleness
        for row in report.unsafe_cached:
            cache = row.cache
            assert cache is not None
            effect = "narrows a smaller-is-risky consumer" if row.smaller_is_risky else "widens it"
            errs = {
                "large": "a stale reading errs large, which",
                "small": "a stale reading errs small, which",
            }.get(row.stale_error, "a stale reading errs either way; one way")
            message = (
                f"cached {row.term} ({cache.kind} at {cache.where}) is {row.operation} in "
                f"{row.function}: {errs} {effect}"
            )
            yield Finding(
                path=row.path,
                line=row.line,
                rule=self.name,
                message=message,
                fingerprint=fingerprint(
                    self.name, row.term, row.function, cache.kind, cache.where, chain_key(row.chain)
                ),
                extra={
                    "term": row.term,
                    "consumer": {"function": row.function, "path": row.path, "line": row.line},
                    "operation": row.operation,
                    "stale_larger": row.stale_larger,
                    "cache": row.to_json()["cache"],
                    "chain": chain_json(row.chain),
                },
            )
