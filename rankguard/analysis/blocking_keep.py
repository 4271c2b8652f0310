"""Blocking summaries kept across runs, keyed without line numbers.

A function's summary under an entry context (`analysis.blocking`) is a function of what the
walk reads: the function's own record, what the model answers about it (each call's followed
targets, the properties its reads run, what its `with` items evaluate to, its class's
invariants and copied settings), the summaries of what it calls, the program-wide tables the
classifier reads (attribute placements, attributes some method reassigns, property names), and
the configuration and code (the `salt` the pipeline gives). `function_keys` turns all but the
context into one key per function, line-free; the entry context (known facts, tensor
placements) completes it.

Lines in a kept summary are stored relative to the first line of the function that holds them
(every line a summary names belongs to the function its hop, call or collective site names),
and re-attached on the way out: an edit that shifts the code below it re-uses every summary
of a function whose content did not change.

Texts name places too: a doubt, a skipped validation, a memo's write or a sync that drained
the queue is said as `(path:line)` (in entry facts, and so in the key, and in the notes of the
calls a summary holds). Each such line is made relative to the function holding it, in keys
and in stored summaries, and re-attached on the way out (`_Places`): a summary entered below a
doubted branch is kept when the branch moves, and a kept note names where the branch is now.

A summary that enters a cycle of calls is kept too: the walk cuts recursion where the cycle was
entered, and walks the cycle afresh each time it is entered from outside it
(`BlockingAnalysis.summary`), so that answer is the same whatever ran before. Only a summary
cut at a function the call graph does not put on a cycle (a call the graph does not know) is
recomputed every run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.adapters.store import COUNTS
from rankguard.analysis.blocking_calls import CallClassifier
from rankguard.analysis.blocking_types import BlockingCall, Pair, Summary, copied
from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.context import RoundContext
from rankguard.analysis.function_keys import FunctionKeys
from rankguard.analysis.passed import PassedCallables
from rankguard.analysis.reach import followed
from rankguard.analysis.receivers import Receivers
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond
from rankguard.model.program import Program
from rankguard.summary.ir import walk_calls, walk_statements
from rankguard.summary.lineless import digest, lineless


class KeptSummaries:
    def __init__(
        self,
        program: Program,
        classify: CallClassifier,
        context: RoundContext,
        receivers: Receivers,
        passed: PassedCallables,
        store: KeyedStore,
        salt: str,
    ) -> None:
        self.program = program
        self.classify = classify
        self.context = context
        self.receivers = receivers
        self.passed = passed
        self.store = store
        # The class table: exact receivers (`analysis.receivers`) narrow calls by the MRO and
        # methods of classes a caller passes in as an entry fact, not by the callee's record.
        classes = [
            (name, program.mro(name), sorted(record.methods.items()))
            for name, record in sorted(program.classes.items())
        ]
        tables = (
            sorted(classify.placement.table().items()),
            sorted(classify.returns.table().items()),
            context.stability.table(),
            sorted(classify.property_names()),
            classes,
        )
        self.keys = FunctionKeys(digest("blocking", salt, repr(tables)), self._local)
        self.places = _Places(program)

    def _local(self, name: str) -> tuple[str, list[str]]:
        """What the walk reads of `name` itself, and the functions it may enter."""
        program = self.program
        record = program.functions[name]
        info = record.info
        callees: set[str] = set()
        calls = []
        for call in walk_calls(info.body):
            targets = followed(program, name, call)
            receiver = self.receivers.of_call(record, call, {})
            entered = [t.name for t in targets if t.name in program.functions]
            # What the call hands each callee's called parameters (`analysis.passed`): the
            # model's answer about this call, bound into the callee's entry facts.
            passes = [sorted(self.passed.binding(record, call, t, {}).items()) for t in entered]
            calls.append((targets, sorted(receiver) if receiver else None, _canonical(passes)))
            callees.update(entered)
        reads = []
        for stmt in walk_statements(info.body):
            for ref in stmt.reads:
                found = self.classify.property_targets(record, ref)
                if found:
                    reads.append((ref, found))
                    callees.update(found)
            for item in stmt.items if stmt.kind == "with" else ():
                if item[0] == "ref":
                    values = program.resolver.evaluate(record, item[1])
                    reads.append((item[1], sorted((v.kind, v.name) for v in values)))
        text = repr(
            (
                name,
                record.module,
                record.path,
                lineless(info, info.line),
                calls,
                reads,
                sorted(self.context.invariants(record).items(), key=repr),
                sorted(self.context.aliases_of(record).items()),
                sorted(self.context.computed_of(record).items()),
            )
        )
        return text, sorted(callees)

    def cycle(self, name: str) -> str | None:
        return self.keys.cycle(name)

    def _key(self, name: str, known: Mapping[Cond, Any], env: Mapping[str, str]) -> str:
        facts = sorted((repr(c), _canonical(v)) for c, v in known.items())
        context = self.places.relative_digest(repr((facts, sorted(env.items()))))
        return digest(self.keys.key(name), context)

    def load(self, name: str, known: Mapping[Cond, Any], env: Mapping[str, str]) -> Summary | None:
        if not self.store.keeps:
            return None
        kept = self.store.get(self._key(name, known, env))
        if not isinstance(kept, Summary):
            return None
        try:
            found = _Shift(self._start, 1, self.places.absolute).summary(kept)
        except KeyError:  # a function it names is gone: the key should have said so
            return None
        COUNTS["blocking summaries reused"] += 1
        return found

    def save(
        self, name: str, known: Mapping[Cond, Any], env: Mapping[str, str], summary: Summary
    ) -> None:
        if not self.store.keeps:
            return
        shift = _Shift(self._start, -1, self.places.relative)
        self.store.put(self._key(name, known, env), shift.summary(summary))

    def _start(self, function: str) -> int:
        return self.program.functions[function].info.line


def _canonical(value: Any) -> str:
    """A value as text that is the same in every process (a set's own repr follows string
    hashing, which changes from run to run)."""
    if isinstance(value, (frozenset, set)):
        return repr(sorted(map(_canonical, value)))
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(map(_canonical, value)) + ")"
    return repr(value)


_PLACE = re.compile(r"\(([^()\n]+):(\d+)\)")
_RELATIVE = re.compile(r"\(\0([^\0]+)\0(-?\d+)\)")


class _Places:
    """`(path:line)` in a text, with the line made relative to the innermost function of the
    program that holds it (`(\\0function\\0offset)`), and back. A place no function holds
    stays as it is (then it is part of the key as it is)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._spans: dict[str, list[tuple[int, int, str]]] | None = None
        self._texts: dict[str, str] = {}
        self._digests: dict[str, str] = {}

    def _holder(self, path: str, line: int) -> str | None:
        if self._spans is None:
            self._spans = {}
            for name, record in self.program.functions.items():
                info = record.info
                self._spans.setdefault(record.path, []).append((info.line, info.end_line, name))
        held = [s for s in self._spans.get(path, ()) if s[0] <= line <= s[1]]
        return max(held)[2] if held else None  # the innermost starts last

    def _to_relative(self, match: re.Match[str]) -> str:
        line = int(match[2])
        holder = self._holder(match[1], line)
        if holder is None:
            return match[0]
        return f"(\0{holder}\0{line - self.program.functions[holder].info.line})"

    def relative(self, text: str) -> str:
        if "(" not in text:
            return text
        out = self._texts.get(text)
        if out is None:
            out = self._texts[text] = _PLACE.sub(self._to_relative, text)
        return out

    def relative_digest(self, text: str) -> str:
        """The digest of `text` with its places made relative, remembered by the digest of
        `text` itself: entry contexts (a summary key's facts) are long, 1.8 KB on average on
        sglang, and tens of thousands of them kept as text beside their relative form (as
        `relative` keeps notes) held 190 MiB to the end of a cold check (session 18)."""
        own = digest(text)
        out = self._digests.get(own)
        if out is None:
            moved = _PLACE.sub(self._to_relative, text) if "(" in text else text
            out = self._digests[own] = digest(moved)
        return out

    def _to_absolute(self, match: re.Match[str]) -> str:
        record = self.program.functions[match[1]]  # KeyError: the function is gone
        return f"({record.path}:{record.info.line + int(match[2])})"

    def absolute(self, text: str) -> str:
        return _RELATIVE.sub(self._to_absolute, text) if "\0" in text else text


class _Shift:
    """Moves every line of a summary by its function's first line (`sign` -1: to relative
    lines, +1: back), and the places its calls' texts name (`texts`: `_Places`), sharing
    what the summary shares."""

    def __init__(self, start: Callable[[str], int], sign: int, texts: Callable[[str], str]) -> None:
        self.start = start
        self.sign = sign
        self.texts = texts
        self._hops: dict[Hop, Hop] = {}
        self._sites: dict[CollectiveSite, CollectiveSite] = {}
        self._calls: dict[int, BlockingCall] = {}

    def line(self, function: str, line: int) -> int:
        return line + self.sign * self.start(function)

    def hop(self, hop: Hop) -> Hop:
        moved = self._hops.get(hop)
        if moved is None:
            moved = self._hops[hop] = hop._replace(line=self.line(hop.function, hop.line))
        return moved

    def chain(self, chain: tuple[Hop, ...]) -> tuple[Hop, ...]:
        return tuple(self.hop(h) for h in chain)

    def site(self, site: CollectiveSite) -> CollectiveSite:
        moved = self._sites.get(site)
        if moved is None:
            line = self.line(site.function, site.line)
            moved = self._sites[site] = copied(site, line=line)
        return moved

    def call(self, call: BlockingCall) -> BlockingCall:
        moved = self._calls.get(id(call))
        if moved is None:
            line = self.line(call.function, call.line)
            texts = self.texts
            moved = copied(
                call,
                line=line,
                chain=self.chain(call.chain),
                reason=texts(call.reason),
                note=texts(call.note),
                doubt=texts(call.doubt),
                skipped=texts(call.skipped),
                drained_by=texts(call.drained_by),
                cadenced=call.cadenced and texts(call.cadenced),
            )
            self._calls[id(call)] = moved
        return moved

    def pair(self, pair: Pair) -> Pair:
        return Pair(
            self.call(pair.blocking), self.site(pair.site), self.chain(pair.chain), pair.tail
        )

    def summary(self, summary: Summary) -> Summary:
        first = {self.site(s): self.chain(c) for s, c in summary.first.items()}
        pairs = [self.pair(p) for p in summary.pairs.values()]
        tail = [self.call(c) for c in summary.tail.values()]
        sure = frozenset(self.site(s) for s in summary.sure)
        if self.sign < 0:
            # Relative lines do not tell apart calls at the same place in two functions of
            # one file: stored under their absolute keys, re-keyed when lines come back.
            kept_pairs = dict(zip(summary.pairs, pairs, strict=True))
            return Summary(first, kept_pairs, dict(zip(summary.tail, tail, strict=True)),
                           summary.passes, summary.writers, sure)  # fmt: skip
        rekeyed = {p.key: p for p in pairs}
        rekeyed_tail = {c.key: c for c in tail}
        return Summary(first, rekeyed, rekeyed_tail, summary.passes, summary.writers, sure)
