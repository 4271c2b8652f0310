"""Round discovery: which functions are rounds when the configuration names none.

A round function runs a loop whose every iteration meets the other ranks at a collective. So a
candidate is any function whose round loop (`rounds.round_loop`: `while True`, else a `while`
such as `while not self.stopped`, else a `for step in ...`; sync or async) reaches a collective
through calls. Candidates are ranked by evidence: the number of collectives one iteration
reaches, a loop that runs until stopped rather than over a collection, and a conventional name
(`event_loop*`, `train`, `*_loop`, `serve*`). Loops inside loops are told apart: a bounded loop
another candidate's round runs (a per-micro-batch loop inside a training step, a per-layer loop
inside a forward) is nested, and a loop running until stopped that another candidate runs (an
event loop a supervisor restarts) is the round while the outer one is its supervisor; nested
loops and supervisors are listed, never used. The strong outermost candidates (a conventional
name or a loop that runs until stopped) are used when there are any, else every outermost one,
so a project never gets a silent zero.

The same module checks configured patterns, so a pattern that matches nothing is an error
that lists the closest qualified names rather than a run with one round fewer. Configured round
functions need no loop (`reach.round_scope`: without a `while` loop the whole body is the
round); discovered ones are loops by definition.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite
from rankguard.analysis.reach import FOLLOWED, loop_calls, reach_from, round_loop, whole_body
from rankguard.core.errors import InputError
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import Stmt

CONVENTIONAL_NAMES = ("event_loop*", "train", "*_loop", "serve*")
HINT = "set [tool.rankguard] rounds to choose"
_STRONG = 2  # the score of one strong piece of evidence


@dataclass(frozen=True)
class Candidate:
    """A function whose round loop reaches collectives, and why it looks like a round."""

    qualname: str
    path: str
    line: int
    loop_line: int
    loop: str  # "while True", "while <test>", "for ... in <iter>"
    until_stopped: bool  # `while True`, or a `while` whose test reads state (`self.stopped`)
    collectives: int  # distinct collective sites one iteration reaches
    conventional: bool
    nested_in: str | None = None  # a candidate whose round runs this bounded loop
    supervises: tuple[str, ...] = ()  # candidates running until stopped that this loop runs

    @property
    def score(self) -> int:
        strong = _STRONG * self.conventional + _STRONG * self.until_stopped
        return strong + min(self.collectives, 9)

    @property
    def strong(self) -> bool:
        return self.conventional or self.until_stopped

    @property
    def outermost(self) -> bool:
        return self.nested_in is None and not self.supervises

    def evidence(self) -> list[str]:
        out = [f"{self.loop} loop reaches {self.collectives} collective(s)"]
        if self.until_stopped:
            out.append("loop runs until stopped")
        if self.conventional:
            out.append("conventional round name")
        if self.nested_in:
            out.append(f"nested: reached from the round of {self.nested_in}")
        if self.supervises:
            out.append(f"supervisor: its loop runs the round of {', '.join(self.supervises)}")
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.qualname,
            "path": self.path,
            "line": self.line,
            "loop_line": self.loop_line,
            "score": self.score,
            "evidence": self.evidence(),
        }


@dataclass
class Discovery:
    """Every candidate, best first, and the ones used as rounds."""

    candidates: list[Candidate] = field(default_factory=list)
    used: list[Candidate] = field(default_factory=list)

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(c.qualname for c in self.used)

    def announcement(self, limit: int = 6) -> str:
        names = [c.qualname for c in self.used]
        shown = ", ".join(names[:limit]) + (
            f" and {len(names) - limit} more" if names[limit:] else ""
        )
        return f"rankguard: rounds discovered: {shown} ({HINT})"


def _shape(loop: Stmt) -> tuple[str, bool]:
    """How the loop reads, and whether it runs until stopped (rather than over a collection
    or a local work list): `while True`, or a `while` test that reads an attribute."""
    if loop.infinite:
        return "while True", True
    if not loop.targets:
        return f"while {loop.text}", any(len(ref) > 1 for ref in loop.reads)
    return f"for ... in {loop.text}", False


def _conventional(record: FunctionRecord) -> bool:
    return any(fnmatch.fnmatchcase(record.info.name, pat) for pat in CONVENTIONAL_NAMES)


def discover_rounds(program: Program, reach: CollectiveReach) -> Discovery:
    """Rank every function whose round loop reaches a collective; choose the rounds."""
    found: list[Candidate] = []
    sites_of: dict[str, set[CollectiveSite]] = {}
    for record in program.iter_functions():
        loop = None if record.is_module_body else round_loop(record)
        if loop is None:
            continue
        sites = {event.site for event in reach.events_of_calls(record, loop_calls(loop))}
        if not sites:
            continue
        text, until_stopped = _shape(loop)
        sites_of[record.qualname] = sites
        found.append(
            Candidate(
                record.qualname, record.path, record.info.line, loop.line, text, until_stopped,
                len(sites_of[record.qualname]), _conventional(record),
            )
        )  # fmt: skip
    found = _relate(program, found, sites_of)
    found.sort(key=lambda c: (not c.outermost, -c.score, c.qualname))
    outer = [c for c in found if c.outermost] or found
    strong = [c for c in outer if c.strong]
    return Discovery(found, strong or outer)


def _reached(program: Program, cand: Candidate, names: set[str]) -> set[str]:
    """The other candidates one iteration of `cand`'s loop reaches through calls."""
    record = program.functions[cand.qualname]
    loop = round_loop(record)
    assert loop is not None
    callees = sorted(
        {
            t.name
            for call in loop_calls(loop)
            for t in program.targets_of(record.qualname, call)
            if t.kind in FOLLOWED and t.name in program.functions
        }
    )
    return {name for name in reach_from(program, callees) if name in names} - {cand.qualname}


def _relate(
    program: Program, found: list[Candidate], sites_of: dict[str, set[CollectiveSite]]
) -> list[Candidate]:
    """Loops inside loops. An outer loop that reaches no collective except through the loops
    running until stopped that it runs (an event loop a supervisor restarts, or one of several
    it dispatches to) supervises them: they are the rounds. Otherwise a candidate another's
    round reaches is nested in it (a per-layer or per-micro-batch loop, a work list). Two
    candidates reaching each other are one round seen twice: neither is demoted."""
    by_name = {c.qualname: c for c in found}
    reaches = {c.qualname: _reached(program, c, set(by_name)) for c in found}
    nested_in: dict[str, str] = {}
    supervises: dict[str, tuple[str, ...]] = {}
    for outer in sorted(reaches):
        inner = sorted(n for n in reaches[outer] if outer not in reaches[n])
        running = [n for n in inner if by_name[n].until_stopped]
        # The outermost of them: a loop the event loop runs inside is not what is restarted.
        running = [n for n in running if not any(n in reaches[m] for m in running if m != n)]
        covered = set().union(*(sites_of[n] for n in running)) if running else set()
        if running and sites_of[outer] <= covered:
            supervises[outer] = tuple(running)
            continue
        for name in inner:
            nested_in.setdefault(name, outer)
    return [
        replace(
            c,
            nested_in=None if c.qualname in supervises else nested_in.get(c.qualname),
            supervises=supervises.get(c.qualname, ()),
        )
        for c in found
    ]


def closest_names(program: Program, pattern: str, count: int = 5) -> list[str]:
    """The qualified names of functions with a loop that look most like `pattern`: those
    whose whole name or last part is close (difflib), else the three nearest at all."""
    names = [
        r.qualname
        for r in program.iter_functions()
        if not r.is_module_body and round_loop(r) is not None
    ]
    whole = pattern.replace("*", "").strip(".")
    tail = whole.rsplit(".", 1)[-1]

    def likeness(name: str) -> float:
        near = difflib.SequenceMatcher(None, whole, name[-len(whole) :] if whole else name)
        last = difflib.SequenceMatcher(None, tail, name.rsplit(".", 1)[-1])
        return max(near.ratio(), last.ratio())

    ranked = sorted(names, key=lambda n: (-likeness(n), n))
    close = [n for n in ranked if likeness(n) >= 0.75]
    return (close or ranked[:3])[:count]


def check_patterns(
    program: Program,
    patterns: Sequence[str],
    origin: str,
    reach: Callable[[], CollectiveReach],
) -> None:
    """Every configured round pattern must match a function. One without a `while` loop is a
    round by its whole body (`reach.round_scope`), but a pattern whose every match has no loop
    at all and reaches no collective is an error, as it was before body rounds ("has no loop"):
    a gate on it must not start passing (DESIGN 4). Other matches reaching no collective are
    named by `rounds.round_warnings` once the rounds are found."""
    for pattern in patterns:
        matched = [
            r
            for r in program.iter_functions()
            if not r.is_module_body and fnmatch.fnmatchcase(r.qualname, pattern)
        ]
        if not matched:
            close = closest_names(program, pattern)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise InputError(f"{origin}: round pattern '{pattern}' matches no function{hint}")
        if any(round_loop(r) is not None for r in matched):
            continue
        if any(reach().events_of_calls(r, loop_calls(whole_body(r))) for r in matched):
            continue
        names = ", ".join(r.qualname for r in matched[:5])
        raise InputError(
            f"{origin}: round pattern '{pattern}' matches {names}, which has no loop and "
            "reaches no collective; a round function runs the loop whose iterations are "
            "rounds, or is called once per round and reaches the round's collectives"
        )


def none_found_message(root: str) -> str:
    return (
        f"{root}: no round found: no function runs a loop that reaches a collective. "
        'Set [tool.rankguard] rounds = ["pkg.mod.Class.loop_method"] (fnmatch patterns over '
        "qualified names) and, for project wrappers, collectives = [...]; "
        "`rankguard rounds --discover` lists what was considered"
    )


def require_rounds(
    program: Program,
    patterns: Sequence[str],
    discover: Callable[[], Discovery],
    origin: str,
    reach: Callable[[], CollectiveReach],
) -> Discovery | None:
    """Configured patterns must each match a loop; with none configured, discovery must find
    a round. Returns the discovery used (to announce it), or None when patterns were given."""
    if patterns:
        check_patterns(program, patterns, origin, reach)
        return None
    found = discover()
    if not found.used:
        raise InputError(none_found_message(origin))
    return found
