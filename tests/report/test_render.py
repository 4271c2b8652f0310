"""The report's renderings: Markdown for a PR comment, self-contained HTML, SARIF 2.1.0.

Strings from analysed code are hostile: a log literal or call text holding `<script>`, a
backtick, a pipe or `</code>` must come out as text in every format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema

from rankguard.reports.render import md_code, md_message, md_text, mermaid, render_markdown
from tests.report.conftest import render

SCHEMA = Path(__file__).resolve().parent.parent / "data" / "sarif-schema-2.1.0.json"


def without_code_spans(markdown: str) -> str:
    """Markdown with code spans and fenced blocks removed: what GitHub would parse as HTML."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text)


def test_markdown_escapes_hostile_strings(tmp_path: Path, hostile, capsys):
    repo, base, head = hostile
    out = tmp_path / "r.md"
    assert render(repo, base, head, "md", out) == 1
    text = out.read_text()
    capsys.readouterr()
    assert "hostile_step" in text
    outside = without_code_spans(text)
    assert "<script" not in outside and "<img" not in outside
    assert "&lt;script&gt;" in text or "`<script>" in text
    # Table rows keep their column count: the literal's `|` is escaped inside the cell.
    (row,) = [line for line in text.splitlines() if line.startswith("| added |")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 5
    # One Mermaid graph for the new blocking chain, inside a collapsible block.
    assert text.count("```mermaid") == 1 and "<details>" in text
    assert 'n0["event_loop"]' in text or "n0[" in text


def test_markdown_helpers():
    assert md_code("a`b") == "``a`b``"
    assert md_code("a|b", table=True) == "`a\\|b`"
    assert md_code("two\nlines") == "`two lines`"
    assert md_text("<b>&*x*|") == "&lt;b&gt;&amp;\\*x\\*\\|"
    assert md_message("`a<b>` then <i>") == "`a<b>` then &lt;i&gt;"


def test_mermaid_labels_are_entity_encoded():
    graph = mermaid(
        {
            "chain": [{"function": 'pkg.m.Cls.f"]; click n0 "x', "path": "m.py", "line": 3}],
            "blocking": {"callee": "<script>"},
            "collective": {"callee": "dist.barrier"},
        }
    )
    assert "<script>" not in graph and "#lt;script#gt;" in graph
    assert '"]; click' not in graph


def test_markdown_fits_a_comment():
    finding = {
        "rule": "blocking-before-collective",
        "path": "pkg/loop.py",
        "line": 1,
        "message": "`time.sleep(1)` " + "x" * 400,
        "fingerprint": "0" * 20,
        "round": "pkg.loop.event_loop",
        "chain": [{"function": f"pkg.m.f{i}", "path": "pkg/m.py", "line": i} for i in range(30)],
        "blocking": {"callee": "time.sleep", "path": "pkg/m.py", "line": 3},
        "collective": {"callee": "dist.barrier", "path": "pkg/m.py", "line": 9},
    }
    site = {"literal": "y" * 300, "path": "p.py", "line": 1, "function": "f", "kind": "print",
            "callee": "print"}  # fmt: skip
    data = {
        "repo": "r", "subdir": "", "base": {"rev": "a", "commit": "a" * 40},
        "head": {"rev": "b", "commit": "b" * 40},
        "summary": {"status": "new-findings", "text": "FAIL: many"},
        "changed_files": ["p.py"] * 3000,
        "findings": {"new": [finding] * 2000, "resolved": [finding] * 2000, "moved": [],
                     "unchanged": 0},
        "staleness": {"available": False},
        "emitted_literals": {"added": [site] * 3000, "removed": [], "changed": [], "moved": []},
        "inventory": None,
        "ruff": {"files": [], "base_total": 0, "head_total": 0, "on_changed_lines": 0,
                 "notes": []},
        "errors": [],
    }  # fmt: skip
    text = render_markdown(data)
    assert len(text) <= 65_000
    assert "more new finding(s)" in text


def test_html_is_self_contained_and_escaped(tmp_path: Path, hostile, capsys):
    repo, base, head = hostile
    out = tmp_path / "r.html"
    assert render(repo, base, head, "html", out) == 1
    capsys.readouterr()
    page = out.read_text()
    assert "<script" not in page.lower().replace("&lt;script", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # No network: nothing is loaded from anywhere (no src/href attributes, no @import or url()).
    assert not re.search(r"\b(src|href)\s*=", page.replace("&lt;img src=x", ""))
    assert "@import" not in page and "url(" not in page
    assert "<details" in page and "<style>" in page


def test_sarif_holds_only_new_findings_and_validates(tmp_path: Path, hostile, capsys):
    repo, base, head = hostile
    out = tmp_path / "r.sarif"
    assert render(repo, base, head, "sarif", out) == 1
    capsys.readouterr()
    sarif = json.loads(out.read_text())
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["blocking-before-collective"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "pkg/loop.py"
    )
