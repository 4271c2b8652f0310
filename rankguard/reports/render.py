"""Render the per-PR report (its JSON form) as Markdown or HTML through jinja2 templates.

Every string that comes from analysed code (literals, call texts, function names, messages)
is hostile until escaped: HTML autoescapes everything and adds a Content-Security-Policy that
forbids scripts and network requests, so even a missed escape could not run or fetch anything.
Markdown escapes HTML outside code spans (a pull-request comment must show `<script>` as text)
and keeps `|` from splitting table cells. Mermaid labels are entity-encoded.

Markdown must fit a GitHub comment (65,536 characters): long lists are cut with a count of
what was left out, and the whole is rendered again with tighter limits if still too long.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

TEMPLATES = Path(__file__).resolve().parent / "templates"
COMMENT_LIMIT = 65_000  # GitHub rejects comments above 65,536 characters
# (new findings shown in full, Mermaid graphs, rows per table), loosest first.
BUDGETS = ((40, 10, 60), (15, 5, 25), (5, 2, 10), (0, 0, 3))
_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#|!~])")


def one_line(text: Any) -> str:
    return " ".join(str(text).split()) if "\n" in str(text) else str(text)


def md_code(text: Any, table: bool = False) -> str:
    """`text` as a Markdown code span that no backtick or newline in it can break."""
    body = one_line(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`") or not body.strip():
        body = f" {body} "
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def md_text(text: Any, table: bool = False) -> str:
    """Plain text that renders as itself: HTML as entities, Markdown syntax backslashed
    (which also keeps `|` from splitting a table cell, so `table` needs nothing more)."""
    body = one_line(text)
    body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", body)


def md_message(text: Any, table: bool = False) -> str:
    """A finding message: its `backticked` parts as code spans, the rest as escaped text."""
    pieces = one_line(text).split("`")
    if len(pieces) % 2 == 0:  # unbalanced backticks: all of it is text
        return md_text(text, table)
    return "".join(
        md_code(piece, table) if i % 2 else md_text(piece, table)
        for i, piece in enumerate(pieces)
        if piece or i % 2 == 0
    )


def mermaid_label(text: Any) -> str:
    """A Mermaid node label inside double quotes: quotes and angle brackets as entity codes."""
    body = one_line(text)
    for raw, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        body = body.replace(raw, code)
    return body.replace("`", "#96;")


def html_message(text: Any) -> Markup:
    """A finding message for HTML: escaped, with its `backticked` parts in <code>."""
    pieces = str(text).split("`")
    if len(pieces) % 2 == 0:
        return Markup(escape(text))
    return Markup("").join(
        Markup("<code>{}</code>").format(piece) if i % 2 else escape(piece)
        for i, piece in enumerate(pieces)
    )


def short(qualname: Any) -> str:
    """`pkg.mod.Cls.meth` -> `Cls.meth`, the name a stack dump would show."""
    parts = str(qualname).split(".")
    for i, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[i:])
    return ".".join(parts[-2:])


def counts(by_code: Mapping[str, int], limit: int = 4) -> str:
    """`{"E501": 2, "F401": 1}` -> `E501 (2), F401`; the largest first, then by code."""
    items = sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{code} ({n})" if n > 1 else code for code, n in items[:limit])
    if len(items) > limit:
        text += f", +{len(items) - limit} more"
    return text or "-"


def mermaid(finding: Mapping[str, Any]) -> str:
    """A left-to-right graph of a blocking chain: round, hops, the blocking call, and the
    collective that waits for it."""
    chain = list(finding.get("chain") or [])
    lines = ["graph LR"]
    names = [short(hop["function"]) for hop in chain]
    for i, name in enumerate(names):
        lines.append(f'  n{i}["{mermaid_label(name)}"]')
    blocking = finding.get("blocking") or {}
    end = len(names)
    lines.append(f'  n{end}["{mermaid_label(blocking.get("callee", "?"))}"]:::blocking')
    for i in range(end):
        lines.append(f"  n{i} -->|{int(chain[i]['line'])}| n{i + 1}")
    collective = finding.get("collective") or {}
    if collective:
        lines.append(f'  c["{mermaid_label(collective.get("callee", "?"))}"]:::collective')
        lines.append(f"  n{end} -. stalls .-> c")
    lines.append("  classDef blocking stroke:#c00,stroke-width:2px")
    lines.append("  classDef collective stroke:#06c,stroke-width:2px")
    return "\n".join(lines)


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        code=md_code,
        text=md_text,
        message=md_message,
        mermaid=mermaid,
        short=short,
        counts=counts,
        html_message=html_message,
    )
    return env


@cache
def environment(autoescape: bool) -> jinja2.Environment:
    return _environment(autoescape)


def render_markdown(data: Mapping[str, Any], limit: int = COMMENT_LIMIT) -> str:
    """The report as a pull-request comment, within `limit` characters."""
    template = environment(False).get_template("report.md.j2")
    text = ""
    for detail, graphs, rows in BUDGETS:
        text = template.render(r=data, detail=detail, graphs=graphs, rows=rows)
        if len(text) <= limit:
            return text
    cut = text[: max(limit - 200, 0)].rsplit("\n", 1)[0]
    return cut + "\n\n… report cut to fit a comment; see the HTML or JSON report.\n"


def render_html(data: Mapping[str, Any]) -> str:
    """The report as one self-contained page: inline styles, no scripts, no network."""
    template = environment(True).get_template("report.html.j2")
    return template.render(r=data)
