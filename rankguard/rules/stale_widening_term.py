"""Rule `stale-widening-term`: a cached driver term whose stale, too-large value widens a budget.

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
    description = "A cached driver term whose stale, too-large value widens the budget it feeds."
    help = (
        "A cached (lru_cache, cached_property, time-cadence attribute, memo, cadence helper) "
        "driver value goes stale; where it is added to a budget a stale, too-large value lets "
        "this rank grant more than it has. Cache only terms that are subtracted all the way to "
        "the budget (see `rankguard staleness` for the composed sign at every consumer), read "
        "the term fresh, or declare the consumer `smaller-is-risky` when a smaller value is "
        "the dangerous side."
    )

    what = (
        "Composes the sign of every cached driver or allocator term (lru_cache, "
        "cached_property, time-cadence attributes, memos, cadence helpers) through arithmetic, "
        "returns, arguments and attribute stores to every budget it feeds, and reports the "
        "cached terms whose stale, too-large value widens that budget."
    )
    why = (
        "A cached reading is cheap and stale. Where it is added to a budget, a stale value "
        "larger than the truth lets this rank grant memory or capacity it no longer has, and "
        "the failure shows up far from the cache, as an out-of-memory or an overcommitted pool."
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
            message = (
                f"cached {row.term} ({cache.kind} at {cache.where}) is {row.operation} in "
                f"{row.function}: a stale, too-large value "
                f"{'narrows a smaller-is-risky consumer' if row.smaller_is_risky else 'widens it'}"
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
