"""The round of a round function (its loop, or its whole body), and which functions a round
reaches by calls (callbacks run elsewhere, later, and are not followed)."""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Callable, Sequence

from rankguard.core.chains import Hop
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CallSite, Stmt, walk_calls, walk_statements

FOLLOWED = ("call", "fallback")


def edge_of(target: Target) -> str | None:
    """How a chain hop reached `target`, where weaker than a plain call (`core.chains.Hop`)."""
    return "fallback" if target.kind == "fallback" else target.via


def followed(program: Program, function: str, call: CallSite) -> tuple[Target, ...]:
    """What a call in `function` may run right there (callbacks run elsewhere, later)."""
    return tuple(t for t in program.targets_of(function, call) if t.kind in FOLLOWED)


# Calls that end the process (`exit()`, `sys.exit(1)`, `os._exit(0)`): nothing after one runs.
PROCESS_EXITS = frozenset(("<builtin>.exit", "<builtin>.quit", "sys.exit", "os._exit", "os.abort"))


def ends_process(program: Program, function: str, stmt: Stmt) -> bool:
    """`stmt` is a call that ends the process, made unconditionally: the path ends there, as
    past a `raise` (its peers are left waiting, but not on a slow call; a `finally:` it would
    run is not walked, as for a `raise`)."""
    return stmt.kind == "expr" and any(
        not (call.deferred or call.under or call.bound)
        and (targets := followed(program, function, call))
        and all(t.name in PROCESS_EXITS for t in targets)
        for call in stmt.calls
    )


def enclosing(body: Sequence[Stmt], call: CallSite) -> list[tuple[Stmt, int]] | None:
    """The statements enclosing `call` in `body`, outermost first, each with the index of the
    block that holds it (None when `call` is not in `body`): the path the analyses read guards
    and alternatives from."""
    for stmt in body:
        if any(c is call for c in stmt.calls):
            return []
        for index, block in enumerate(stmt.blocks):
            inner = enclosing(block, call)
            if inner is not None:
                return [(stmt, index), *inner]
    return None


def round_loop(record: FunctionRecord) -> Stmt | None:
    """The loop whose iterations are rounds: `while True` first, else a `while`, else a `for`."""
    loops = [s for s in walk_statements(record.info.body) if s.kind == "loop"]
    for wanted in (lambda s: s.infinite, lambda s: not s.targets, lambda s: True):
        for loop in loops:
            if wanted(loop):
                return loop
    return None


def has_while(record: FunctionRecord) -> bool:
    return any(s.kind == "loop" and not s.targets for s in walk_statements(record.info.body))


def whole_body(record: FunctionRecord) -> Stmt:
    """The function's body as one iteration of a loop with no header, at the def line: the
    round of a function its caller runs once per round."""
    return Stmt("loop", record.info.line, blocks=(tuple(record.info.body), ()), text="<body>")


def round_scope(
    record: FunctionRecord,
    configured: bool,
    reaches: Callable[[Stmt], bool] | None = None,
) -> tuple[Stmt, bool] | None:
    """The round of `record` and whether it is the whole body. A function with a `while` loop
    runs its rounds itself: that loop (`round_loop`). A configured one without (a training
    step, a pipeline schedule) is called once per round by a caller, maybe outside the tree:
    its whole body, not its first `for` loop (the warm-up micro-batches). A `while True` stays
    the round. With `reaches` (does one iteration of a loop reach a collective), a configured
    function's other `while` loops that reach none (a poll, `while not ready(): pass`) are not
    taken while another `while` or the body does: the first `while` that reaches one, else
    the body. Discovered rounds are loops by definition (`analysis.discovery`)."""
    if configured and not has_while(record):
        return whole_body(record), True
    loop = round_loop(record)
    if configured and reaches is not None and loop is not None and not loop.infinite:
        whiles = [
            s for s in walk_statements(record.info.body) if s.kind == "loop" and not s.targets
        ]
        taken = next((w for w in whiles if reaches(w)), None)
        if taken is not None:
            return taken, False
        body = whole_body(record)
        if reaches(body):
            return body, True
    return (loop, False) if loop is not None else None


def loop_calls(loop: Stmt) -> list[CallSite]:
    """Calls one iteration evaluates: a `while` test, then the body."""
    header = list(loop.calls) if not loop.targets else []
    return header + list(walk_calls(loop.blocks[0]))


def enclosing_match(record: FunctionRecord, names: set[str]) -> str | None:
    """The innermost function in `names` that `record` is defined in (`outer.<locals>.f`)."""
    name = record.qualname
    while ".<locals>." in name:
        name = name.rsplit(".<locals>.", 1)[0]
        if name in names:
            return name
    return None


def matched_functions(program: Program, patterns: Sequence[str]) -> list[FunctionRecord]:
    return [
        record
        for record in program.iter_functions()
        if not record.is_module_body
        and any(fnmatch.fnmatchcase(record.qualname, pat) for pat in patterns)
    ]


def match_rounds(
    program: Program, patterns: Sequence[str], configured: bool = False
) -> list[FunctionRecord]:
    """Functions whose qualified name matches a pattern and that have a round: any function
    when the patterns are configured (`round_scope`), else one with a loop. A configured
    match without a `while` loop that is defined inside another match (`*` spans dots, so
    `*.step_*` matches `step_a.<locals>.helper`) is no round of its own: it is analysed
    only where that round calls it (`rounds.round_warnings` names it)."""
    matched = matched_functions(program, patterns)
    names = {r.qualname for r in matched}
    return [
        record
        for record in matched
        if round_scope(record, configured) is not None
        and not (configured and not has_while(record) and enclosing_match(record, names))
    ]


def reach_from(
    program: Program,
    roots: Sequence[str],
    kinds: Sequence[str] = FOLLOWED,
    avoid: frozenset[str] = frozenset(),
) -> dict[str, list[Hop]]:
    """Every function reachable from `roots` by edges of `kinds`, with a shortest chain (roots
    map to []); the functions in `avoid` are reached but not followed."""
    chains: dict[str, list[Hop]] = {root: [] for root in roots if root in program.functions}
    queue = deque(sorted(chains))
    while queue:
        caller = queue.popleft()
        if caller in avoid:
            continue
        # The resolved calls, not the networkx view of them: no graph is built for this.
        edges = sorted(
            {
                (resolved.call.line, target.name)
                for resolved in program.calls.get(caller, ())
                for target in resolved.targets
                if target.kind in kinds and target.name in program.functions
            }
        )
        for line, callee in edges:
            if callee not in chains:
                path = program.functions[caller].path
                chains[callee] = [*chains[caller], Hop(caller, path, line)]
                queue.append(callee)
    return chains
