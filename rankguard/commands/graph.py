"""`rankguard graph`: the call graph itself, for debugging resolution."""

from __future__ import annotations

import argparse
from pathlib import Path

from rankguard.commands._shared import emit_json, load_from_path, print_errors
from rankguard.core.errors import InputError
from rankguard.model import Program

NAME = "graph"
HELP = "print the call graph (edges call, callback, fallback), whole or around one function"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", type=Path, metavar="PATH")
    focus = parser.add_mutually_exclusive_group()
    focus.add_argument("--callers", metavar="QUALNAME", help="only edges into QUALNAME")
    focus.add_argument("--callees", metavar="QUALNAME", help="only edges out of QUALNAME")
    parser.add_argument("--format", choices=("text", "json", "dot"), default="text")


def edges(program: Program, callers: str | None, callees: str | None) -> list[dict]:
    rows = []
    for caller, callee, data in program.graph.edges(data=True):
        if callers is not None and callee != callers:
            continue
        if callees is not None and caller != callees:
            continue
        row = {
            "caller": caller,
            "callee": callee,
            "kind": data["kind"],
            "path": data["path"],
            "line": data["line"],
        }
        if data.get("via"):
            row["via"] = data["via"]
        rows.append(row)
    unique = {tuple(sorted(r.items())): r for r in rows}
    return sorted(unique.values(), key=lambda r: (r["caller"], r["line"], r["callee"], r["kind"]))


def _dot(rows: list[dict]) -> str:
    style = {"call": "solid", "callback": "dashed", "fallback": "dotted"}
    out = ["digraph rankguard {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    for row in rows:
        label = f"{row['path']}:{row['line']}".replace('"', '\\"')
        out.append(
            f'  "{row["caller"]}" -> "{row["callee"]}" '
            f'[style={style[row["kind"]]}, label="{label}"];'
        )
    out.append("}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    _, program = load_from_path(args, args.path)
    focus = args.callers or args.callees
    if focus and focus not in program.graph:
        raise InputError(f"{focus}: no such function or callee in the graph")
    rows = edges(program, args.callers, args.callees)
    if args.format == "json":
        unresolved = [
            {"caller": c, "text": t, "path": p, "line": n}
            for c, t, p, n in sorted(program.unresolved)
            if focus is None or c == focus
        ]
        emit_json(
            {
                "edges": rows,
                "unresolved": unresolved,
                "errors": [e.to_json() for e in program.errors],
            }
        )
    elif args.format == "dot":
        print(_dot(rows))
    else:
        for row in rows:
            via = f" via {row['via']}" if "via" in row else ""
            print(
                f"{row['caller']} -> {row['callee']}  [{row['kind']}{via}]  "
                f"{row['path']}:{row['line']}"
            )
    print_errors(program.errors)
    return 2 if program.errors else 0
