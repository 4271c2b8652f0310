"""ruff on a revision's files: JSON parsing, config honoured, a rejected config retried."""

from __future__ import annotations

from rankguard.adapters.ruff import SYNTAX_ERROR, config_paths, run_ruff


def test_counts_syntax_errors_and_configs():
    run = run_ruff(
        {"pkg/a.py": b"import os\n", "pkg/b.py": b"def (:\n"},
        {"pyproject.toml": b'[tool.ruff.lint]\nselect = ["F401"]\n'},
    )
    assert run.error is None and run.notes == []
    assert [(d.path, d.line, d.code) for d in run.diagnostics if d.path == "pkg/a.py"] == [
        ("pkg/a.py", 1, "F401")
    ]
    # ruff names syntax errors `invalid-syntax` (older versions gave no code: SYNTAX_ERROR).
    broken = {d.code for d in run.diagnostics if d.path == "pkg/b.py"}
    assert broken and broken <= {"invalid-syntax", SYNTAX_ERROR}


def test_rejected_config_is_retried_isolated_with_a_note():
    run = run_ruff({"a.py": b"import os\n"}, {"ruff.toml": b"no-such-setting = 1\n"})
    assert run.error is None
    assert [d.code for d in run.diagnostics] == ["F401"]
    assert run.notes and "--isolated" in run.notes[0]


def test_config_paths_cover_every_ancestor():
    paths = config_paths(["a/b/c.py"])
    assert "pyproject.toml" in paths and "a/ruff.toml" in paths and "a/b/.ruff.toml" in paths
