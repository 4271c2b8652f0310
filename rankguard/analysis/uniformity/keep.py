"""Uniformity walks kept across runs: a function's flow (`transfer.Walker`) is walked again only
when something it read changed.

A walk reads its function's record, the configuration and a few program-wide tables (the class
table, the size flags: the `salt`), what the model says about its calls' targets, and answers
to questions it asks while it walks: values of references (`resolver.evaluate`), the
collectives and groups of its calls (`CollectiveCalls`), which names are module globals, which
functions the rounds reach, and the flows of other functions walked before it (callees first,
so a flow is there or not by the order of the walk). The walk runs against `_Traced`, which
answers those questions and writes each down; the flow is kept with that trace, under a key
of everything else (`KeptWalks._record`, `_targets`: line-free). A later run finds the entry by
that key and asks the trace's questions again: if every answer is the same, the walk would be
too, and the kept flow answers. An answer about another function's flow is that function's own
key, made of its record and its trace's answers, so an edit reaches every flow that read an
edited one. A walk that asked about another function's record or a call not its own is not
kept, and its key is new in every run (no later run can take its flow as known).

Lines: a flow holds steps and sources of its own function and of the functions whose summaries
it took in (`ret_calls`, `ret_items`), and `over` nodes name a line. Each entry keeps the first
line of every function it names, and lines move by how far that function moved (an edit above
it shifts nothing else). Conditions are keyed by statement identity in a run, by position in
the function's statements in the store.
"""

from __future__ import annotations

import hashlib
import pickle
import uuid
from collections.abc import Iterable
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.adapters.store import COUNTS
from rankguard.analysis.uniformity.collectives import CollectiveCalls
from rankguard.analysis.uniformity.entries import Entry, Question, Trace
from rankguard.analysis.uniformity.facts import ProgramFacts
from rankguard.analysis.uniformity.groups import GroupNames, Groups
from rankguard.analysis.uniformity.lattice import FunctionFlow, Step
from rankguard.analysis.uniformity.transfer import Walker
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Segs, walk_calls
from rankguard.summary.lineless import digest, lineless

_NONE = object()


class _Untraceable(Exception):
    """The walk asked about another function's record or call: not kept."""


class KeptWalks:
    """Flows of one program's walks, from the store when their trace still holds."""

    def __init__(self, facts: ProgramFacts, store: KeyedStore, salt: str) -> None:
        self.facts = facts
        self.store = store
        program = facts.program
        classes = [
            (name, program.mro(name), sorted(record.methods.items()))
            for name, record in sorted(program.classes.items())
        ]
        subclasses = sorted((k, sorted(v)) for k, v in program.subclasses.items())
        tables = (classes, subclasses, sorted(facts.flags.items()))
        self.salt = digest("uniformity", salt, repr(tables))
        self.keys: dict[str, str] = {}  # function -> its key with its trace's answers
        self._local: dict[str, str] = {}

    def flow(self, record: FunctionRecord) -> FunctionFlow:
        name = record.qualname
        key = digest(self.salt, self._record(name), *self._targets(record))
        kept = self.store.get(key)
        resolved = self.facts.program.resolution_identity(name)
        if isinstance(kept, Entry):
            same = resolved is not None and kept.resolved == resolved
            answers = self._answers(record, kept.trace, same)
            if answers is not None:
                try:
                    flow = kept.flow_for(record, self._start)
                except KeyError:  # a function it names is gone: its key should have said so
                    flow = None
                if flow is not None:
                    self.keys[name] = digest(key, repr(answers))
                    COUNTS["uniformity walks reused"] += 1
                    if not same and resolved is not None:
                        kept.resolved = resolved  # its answers hold under this resolution too
                        self.store.put(key, kept)
                    return flow
        COUNTS[f"uniformity walk: {name}"] += 1
        traced = _Traced(self, record)
        flow = Walker(traced, record).run()
        trace = list(traced.answers.items())
        entry = Entry.of(record, trace, flow, self._start, resolved) if traced.keepable else None
        if entry is None:  # its trace is not whole: no later run may take its flow as known
            self.keys[name] = uuid.uuid4().hex
            return flow
        self.keys[name] = digest(key, repr([answer for _q, answer in trace]))
        self.store.put(key, entry)
        return flow

    # -- keys -----------------------------------------------------------------------------
    def _record(self, name: str) -> str:
        """A function's record, line-free (what `bind` reads of a callee, too). Making a
        record line-free costs more than the rest of its key, so that is kept as well, under
        the record's exact bytes: a function whose text and place did not change is not made
        line-free again."""
        found = self._local.get(name)
        if found is None:
            record = self.facts.program.functions[name]
            info = record.info
            place = (name, record.module, record.path)
            try:
                data = pickle.dumps((place, info), protocol=pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                data = None
            exact = f"exact {hashlib.blake2b(data, digest_size=20).hexdigest()}" if data else ""
            kept = self.store.get(exact) if exact else None
            if isinstance(kept, str):
                found = kept
            else:
                found = digest(repr((*place, lineless(info, info.line))))
                if exact:
                    self.store.put(exact, found)
            self._local[name] = found
        return found

    def _targets(self, record: FunctionRecord) -> Iterable[str]:
        """What the model says each call may run, and the records of the program's targets."""
        program = self.facts.program
        for call in walk_calls(record.info.body):
            targets = program.targets_of(record.qualname, call)
            yield repr(targets)
            for target in targets:
                if target.name in program.functions:
                    yield self._record(target.name)

    def _start(self, function: str) -> int:
        return self.facts.program.functions[function].info.line

    # -- answers --------------------------------------------------------------------------
    def _answers(self, record: FunctionRecord, trace: Trace, resolved: bool) -> list[Any] | None:
        """The trace's questions asked again; None when an answer changed. With `resolved`,
        the function resolves as it did when they were last answered (`Program.
        resolution_identity`), and the values of its references are not asked again: on
        sglang, asking them again after a one-line edit was most of the divergence rule's
        time, the resolver answering afresh for every function of the program."""
        ask = _Asker(self, record)
        answers = []
        for question, answer in trace:
            if resolved and question[0] == "evaluate":
                answers.append(answer)
                continue
            COUNTS[f"uniformity asked again: {question[0]}"] += 1
            try:
                now = ask.answer(question)
            except (_Untraceable, IndexError, KeyError):
                return None
            if now != answer:
                return None
            answers.append(now)
        return answers

    def flow_key(self, name: str) -> str | None:
        """What a walk learns of another function's flow: whether it was walked before it (in
        this run's order), and then its key (which decides the flow)."""
        return self.keys.get(name) if name in self.facts.flows else None


class _Asker:
    """Answers a walk's questions about one function, line-free."""

    def __init__(self, kept: KeptWalks, record: FunctionRecord) -> None:
        self.kept = kept
        self.facts = kept.facts
        self.record = record
        self._calls: list[CallSite] | None = None
        self._index: dict[int, int] = {}

    def calls(self) -> list[CallSite]:
        if self._calls is None:
            self._calls = list(walk_calls(self.record.info.body))
            self._index = {id(call): index for index, call in enumerate(self._calls)}
        return self._calls

    def index(self, call: CallSite) -> int:
        """A call's position among its function's calls (its identity in the store)."""
        self.calls()
        found = self._index.get(id(call))
        if found is None:
            raise _Untraceable
        return found

    def answer(self, question: Question) -> Any:
        kind = question[0]
        facts = self.facts
        calls = facts.calls
        record = self.record
        if kind == "evaluate":
            return self.values(facts.resolver.evaluate(record, question[1]))
        if kind == "flow":
            return self.kept.flow_key(question[1])
        if kind == "global":
            return facts.is_global(question[1], question[2])
        if kind == "reached":
            return question[1] in facts.reached
        if kind == "rounds":
            return bool(facts.reached)
        names = calls.names
        if kind == "ref_groups":
            return sorted(names.ref_groups(record, question[1]))
        if kind == "rank_dimension":
            return names.rank_dimension(record, question[1])
        call = self.calls()[question[1]]
        if kind == "entered":
            return bool(calls.entered(record, call))
        if kind == "passes_group":
            return names.passes_group(record, call)
        if kind == "named_groups":
            return sorted(names.named_groups(record, call))
        if kind == "groups":
            return names.groups(record, call)
        if kind == "broadcast":
            return calls.broadcast(record, call, list(question[2]))
        raise _Untraceable

    def values(self, values: Iterable[Any]) -> list[tuple[Any, ...]]:
        """Values with what the walk reads of their names (a program function? a class?)."""
        program = self.facts.program
        return [(*v, v.name in program.functions, v.name in program.classes) for v in values]


class _Traced:
    """The program-wide analysis as one walk sees it (`ProgramFacts`), writing down every
    answer it gives that is not in the key."""

    def __init__(self, kept: KeptWalks, record: FunctionRecord) -> None:
        facts = kept.facts
        self.kept = kept
        self.record = record
        self.program = facts.program
        self.reach = facts.reach
        self.sources_catalog = facts.sources_catalog
        self.stores = facts.stores  # of the calls' targets: their records are in the key
        self.flags = facts.flags
        self.answers: dict[Question, Any] = {}  # in the order asked
        self.keepable = True
        self._ask = _Asker(kept, record)
        self.resolver = _Resolver(self)
        self.calls = _Calls(self, facts.calls)
        self.reached = _Reached(self)
        self.flows = _Flows(self, facts.flows)
        self._facts = facts

    def ask(self, question: Question) -> Any:
        answer = self.answers.get(question, _NONE)
        if answer is _NONE:
            answer = self.answers[question] = self._ask.answer(question)
        return answer

    def note(self, question: Question, answer: Any) -> None:
        self.answers.setdefault(question, answer)

    def line_free(self, values: Iterable[Any]) -> list[tuple[Any, ...]]:
        return self._ask.values(values)

    def same(self, record: FunctionRecord) -> None:
        if record is not self.record:
            self.keepable = False

    def note_call(
        self, question: tuple[Any, ...], record: FunctionRecord, call: CallSite, answer: Any
    ) -> None:
        """An answer about one of its calls, known by its position among them."""
        self.same(record)
        try:
            index = self._ask.index(call)
        except _Untraceable:
            self.keepable = False
            return
        self.note((question[0], index, *question[1:]), answer)

    def dependency(self, name: str) -> None:
        self.ask(("flow", name))

    def ret_params(self, function: str) -> dict[str, tuple[Step, ...]]:
        self.dependency(function)
        return self._facts.ret_params(function)

    def ret_calls(self, function: str) -> dict[str, tuple[Step, ...]]:
        self.dependency(function)
        return self._facts.ret_calls(function)

    def returned_items(self, function: str) -> list[dict[str, tuple[Step, ...]]] | None:
        self.dependency(function)
        return self._facts.returned_items(function)

    def unpacks(self, function: str) -> dict[str, int] | None:
        self.dependency(function)
        return self._facts.unpacks(function)

    def none_only(self, function: str) -> bool:
        self.dependency(function)
        return self._facts.none_only(function)

    def is_global(self, module: str, name: str) -> bool:
        return bool(self.ask(("global", module, name)))


class _Resolver:
    def __init__(self, traced: _Traced) -> None:
        self.traced = traced
        self._resolver = traced.kept.facts.resolver

    def evaluate(self, fn: FunctionRecord, segs: Segs) -> Any:
        self.traced.same(fn)
        values = self._resolver.evaluate(fn, segs)
        self.traced.note(("evaluate", segs), self.traced.line_free(values))
        return values


class _Calls:
    """`CollectiveCalls` as a walk asks it (only about its own calls)."""

    def __init__(self, traced: _Traced, calls: CollectiveCalls) -> None:
        self.traced = traced
        self._calls = calls
        self.names = _Names(traced, calls.names)

    def entered(self, record: FunctionRecord, call: CallSite) -> Any:
        found = self._calls.entered(record, call)
        self.traced.note_call(("entered",), record, call, bool(found))
        return found

    def broadcast(self, record: FunctionRecord, call: CallSite, targets: list[str]) -> bool:
        found = self._calls.broadcast(record, call, targets)
        self.traced.note_call(("broadcast", tuple(targets)), record, call, found)
        return found


class _Names:
    """`GroupNames` as a walk asks it (only about its own calls and references)."""

    def __init__(self, traced: _Traced, names: GroupNames) -> None:
        self.traced = traced
        self._names = names

    def groups(self, record: FunctionRecord, call: CallSite) -> Groups:
        found = self._names.groups(record, call)
        self.traced.note_call(("groups",), record, call, found)
        return found

    def named_groups(self, holder: FunctionRecord, call: CallSite) -> set[str]:
        found = self._names.named_groups(holder, call)
        self.traced.note_call(("named_groups",), holder, call, sorted(found))
        return found

    def passes_group(self, record: FunctionRecord, call: CallSite) -> bool:
        found = self._names.passes_group(record, call)
        self.traced.note_call(("passes_group",), record, call, found)
        return found

    def ref_groups(self, holder: FunctionRecord, ref: Segs) -> set[str]:
        self.traced.same(holder)
        found = self._names.ref_groups(holder, ref)
        self.traced.note(("ref_groups", ref), sorted(found))
        return found

    def rank_dimension(self, holder: FunctionRecord, segments: Segs) -> str:
        self.traced.same(holder)
        found = self._names.rank_dimension(holder, segments)
        self.traced.note(("rank_dimension", segments), found)
        return found


class _Reached:
    """The functions the rounds reach, as a walk tests them."""

    def __init__(self, traced: _Traced) -> None:
        self.traced = traced

    def __bool__(self) -> bool:
        return bool(self.traced.ask(("rounds",)))

    def __contains__(self, name: object) -> bool:
        return bool(self.traced.ask(("reached", name)))


class _Flows:
    """The flows walked so far, as a walk reads them (each read is a dependency)."""

    def __init__(self, traced: _Traced, flows: dict[str, FunctionFlow]) -> None:
        self.traced = traced
        self._flows = flows

    def get(self, name: str) -> FunctionFlow | None:
        self.traced.dependency(name)
        return self._flows.get(name)

    def __contains__(self, name: object) -> bool:
        assert isinstance(name, str)
        self.traced.dependency(name)
        return name in self._flows

    def __getitem__(self, name: str) -> FunctionFlow:
        self.traced.dependency(name)
        return self._flows[name]
