"""Call-graph precision and recall on PyCG's micro-benchmark.

    python3 benchmarks/callgraph_accuracy.py [BENCHMARK_DIR]

BENCHMARK_DIR (default ~/.cache/rankguard-corpus/pycg-micro-benchmark) holds PyCG's
`micro-benchmark/snippets` tree (github.com/vitsalis/PyCG): `<category>/<case>/` with `main.py`,
sometimes other modules, and `callgraph.json`, the expected graph `{"caller": ["callee", ...]}`.
The files are third-party: keep them outside this repository.

Each case runs `rankguard graph CASE --format json --no-cache` in-process. Our names are brought
to PyCG's convention: `.<locals>` dropped; an external instance's method `ext.Cls().fun` read as
`ext.Cls.fun` and a call of an external instance `ext.Cls()` as `ext.Cls.__call__`; a method of a
builtin value `<builtin>.str().join` as `<**PyStr**>.join`; a constructor
edge to one of the case's own classes that defines no `__init__` (our callee is the class itself)
dropped, since PyCG records nothing for it (it records an external class as `ext.Cls`). Module
names already match (relative to the case folder: `main`, `ext`). PyCG's expected graph records
a callable where it is invoked, never where it is passed or stored, so `callback` edges (ours:
a callable passed or stored as a value) are not calls; they are scored only in the third,
informative variant. Scores are micro-averaged over edges (caller, callee); a case is perfect when
it has neither a miss nor an extra.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rankguard.cli import main as rankguard_main

DEFAULT_DIR = Path.home() / ".cache" / "rankguard-corpus" / "pycg-micro-benchmark"
VARIANTS: dict[str, frozenset[str]] = {
    "call": frozenset({"call"}),
    "call+fallback": frozenset({"call", "fallback"}),
    "call+fallback+callback": frozenset({"call", "fallback", "callback"}),
}
PRIMARY = "call+fallback"
Edge = tuple[str, str]


@dataclass
class Case:
    name: str  # category/case
    expected: set[Edge]
    rows: list[dict]  # our edges, names normalised
    unresolved: dict[str, list[str]]  # caller -> texts of its unresolved calls
    params: dict[str, set[str]]  # function -> parameter names (PyCG naming)
    decorators: set[str]  # functions applied as decorators, by name
    errors: list[dict] = field(default_factory=list)

    def found(self, kinds: frozenset[str]) -> set[Edge]:
        return {(r["caller"], r["callee"]) for r in self.rows if r["kind"] in kinds}


def normalise(name: str) -> str:
    name = name.replace(".<locals>", "")
    name = re.sub(r"\(\)$", ".__call__", name)
    name = name.replace("().", ".")
    # A method of a builtin value: ours `<builtin>.str().join`, PyCG's `<**PyStr**>.join`.
    return _BUILTIN_TYPE.sub(lambda m: f"<**Py{m.group(1).capitalize()}**>.", name)


_BUILTIN_TYPE = re.compile(r"^<builtin>\.(str|dict|list|set|tuple)\.")


def scan(case_dir: Path) -> tuple[set[str], dict[str, set[str]], set[str], set[str]]:
    """Modules, parameters per function, decorators (by name), classes with `__init__`."""
    modules: set[str] = set()
    params: dict[str, set[str]] = {}
    decorators: set[str] = set()
    with_init: set[str] = set()

    def walk(node: ast.AST, prefix: str) -> None:
        module = prefix.split(".")[0]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qual = f"{prefix}.{child.name}"
                a = child.args
                params[qual] = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
                params[qual] |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
                names = [d.id for d in child.decorator_list if isinstance(d, ast.Name)]
                decorators.update(f"{module}.{d}" for d in names)
                if child.name == "__init__":
                    with_init.add(prefix)
                walk(child, qual)
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}.{child.name}")
            else:
                walk(child, prefix)

    for path in sorted(case_dir.rglob("*.py")):
        parts = path.relative_to(case_dir).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules.add(module)
        walk(ast.parse(path.read_text("utf-8")), module)
    return modules, params, decorators, with_init


def run_case(case_dir: Path, name: str) -> Case:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rankguard_main(["graph", str(case_dir), "--format", "json", "--no-cache"])
    gc.enable()  # rankguard's main pauses the collector for its own short run
    graph = json.loads(out.getvalue())
    modules, params, decorators, with_init = scan(case_dir)
    rows = []
    for row in graph["edges"]:
        callee = normalise(row["callee"])
        own_class = callee.split(".")[0] in modules and not callee.endswith(".__init__")
        if row.get("via") == "constructor" and own_class and callee not in with_init:
            continue
        rows.append({"caller": normalise(row["caller"]), "callee": callee, "kind": row["kind"]})
    unresolved: dict[str, list[str]] = defaultdict(list)
    for item in graph["unresolved"]:
        unresolved[normalise(item["caller"])].append(item["text"])
    raw = json.loads((case_dir / "callgraph.json").read_text("utf-8"))
    expected = {(caller, callee) for caller, callees in raw.items() for callee in callees}
    return Case(name, expected, rows, unresolved, params, decorators, graph["errors"])


def shape(text: str, case: Case, caller: str) -> str:
    if text.startswith("<"):
        return "method of a literal `<type>.m()`"
    if text.endswith("]"):
        return "subscript `x[k]()`"
    if text.endswith(")"):
        return "result of a call `f()()`"
    if "." in text:
        return "attribute `x.attr()`"
    if text in case.params.get(caller, set()):
        return "parameter `p()`"
    scopes = [caller.rsplit(".", n)[0] for n in range(1, caller.count("."))]
    if any(text in case.params.get(scope, set()) for scope in scopes):
        return "closure variable `f()` (enclosing function's parameter)"
    return "local or global variable `v()`"


def miss_pattern(case: Case, edge: Edge) -> str:
    caller, callee = edge
    if "<lambda" in caller or "<lambda" in callee:
        return "lambda not modelled as a function"
    if callee.startswith("<**Py"):
        return "method of a builtin-typed value"
    if callee.rsplit(".", 1)[-1].startswith("__"):
        return f"implicit call of {callee.rsplit('.', 1)[-1]}"
    if any(c == caller for c, _ in case.found(VARIANTS[PRIMARY]) - case.expected):
        return "wrong target chosen (an extra edge from the same caller)"
    texts = case.unresolved.get(caller, [])
    if texts:
        shapes = sorted({shape(t, case, caller) for t in texts})
        return "unresolved call through " + " or ".join(shapes)
    if any(callee == d or callee.startswith(d + ".") for d in case.decorators):
        return "decorator applied or its wrapper called (no call site)"
    return "no call site recorded"


def extra_pattern(case: Case, edge: Edge, kind: str) -> str:
    caller, callee = edge
    last = callee.rsplit(".", 1)[-1]
    if any(c == caller and e.rsplit(".", 1)[-1] == last for c, e in case.expected):
        return f"{kind}: wrong owner of a same-named method (MRO)"
    if any(
        c == caller and e.startswith(tuple(d + "." for d in case.decorators))
        for c, e in case.expected
    ):
        return f"{kind}: decorated function called directly (wrapper skipped)"
    if any(c == caller for c, _ in case.expected - case.found(VARIANTS[PRIMARY])):
        return f"{kind}: wrong target (the right one, from the same caller, is missed)"
    if any(t == callee for _, t in case.expected):
        return f"{kind}: callee right, caller wrong"
    return f"{kind}: callee PyCG never reaches from here"


def ratio(num: int, den: int) -> str:
    return f"{num / den:.3f}" if den else "  n/a"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else DEFAULT_DIR
    case_dirs = sorted(p.parent for p in root.glob("*/*/callgraph.json"))
    if not case_dirs:
        print(f"no <category>/<case>/callgraph.json under {root}", file=sys.stderr)
        return 2
    cases = [run_case(d, f"{d.parent.name}/{d.name}") for d in case_dirs]
    categories = sorted({c.name.split("/")[0] for c in cases})
    print(f"PyCG micro-benchmark: {len(cases)} cases in {len(categories)} categories, {root}")
    for case in cases:
        for error in case.errors:
            print(f"  rankguard error in {case.name}: {error}")
    header = f"{'category':<14}{'cases':>6}{'perfect':>8}{'expected':>9}{'found':>6}{'tp':>5}"
    for variant, kinds in VARIANTS.items():
        print(f"\nedges: {variant}\n{header}{'precision':>10}{'recall':>8}")
        for category in [*categories, "overall"]:
            group = [c for c in cases if category in ("overall", c.name.split("/")[0])]
            n = Counter(cases=len(group))
            for case in group:
                found = case.found(kinds)
                n["expected"] += len(case.expected)
                n["found"] += len(found)
                n["tp"] += len(found & case.expected)
                n["perfect"] += found == case.expected
            p, r = ratio(n["tp"], n["found"]), ratio(n["tp"], n["expected"])
            print(
                f"{category:<14}{n['cases']:>6}{n['perfect']:>8}{n['expected']:>9}"
                f"{n['found']:>6}{n['tp']:>5}{p:>10}{r:>8}"
            )
    patterns: dict[str, list[str]] = defaultdict(list)
    print(f"\nimperfect cases ({PRIMARY}): - missed, + extra")
    for case in cases:
        found = case.found(VARIANTS[PRIMARY])
        kinds = {
            (r["caller"], r["callee"]): r["kind"]
            for r in sorted(case.rows, key=lambda r: r["kind"], reverse=True)
            if r["kind"] in VARIANTS[PRIMARY]
        }
        diff = [("-", e) for e in sorted(case.expected - found)]
        diff += [("+", e) for e in sorted(found - case.expected)]
        if diff:
            print(f"  {case.name}: " + ", ".join(f"{s}{a} -> {b}" for s, (a, b) in diff))
        for sign, edge in diff:
            label = (
                "miss: " + miss_pattern(case, edge)
                if sign == "-"
                else "extra: " + extra_pattern(case, edge, kinds[edge])
            )
            patterns[label].append(f"{case.name} {edge[0]} -> {edge[1]}")
    print(f"\ntop miss/extra patterns ({PRIMARY})")
    ranked = sorted(patterns.items(), key=lambda item: (-len(item[1]), item[0]))
    for label, examples in ranked[:10]:
        print(f"{len(examples):>4}  {label}")
        for example in examples[:3]:
            print(f"        {example}")
    if ranked[10:]:
        print("   and " + "; ".join(f"{len(ex)} {label}" for label, ex in ranked[10:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
