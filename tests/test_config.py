"""`[tool.rankguard]`: discovery, validation, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.core.config import discover, load
from rankguard.core.errors import InputError


def test_nearest_pyproject_above_path_is_used(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.loop"]\n')
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    assert discover(tmp_path / "pkg" / "sub") == tmp_path / "pyproject.toml"
    assert load(None, tmp_path / "pkg" / "sub").rounds == ("*.loop",)


def test_defaults_without_config(tmp_path: Path):
    assert load(None, tmp_path).rounds == ()  # discovered


def test_standalone_file_same_schema(tmp_path: Path):
    cfg = tmp_path / "rankguard.toml"
    cfg.write_text('[tool.rankguard]\nwatchdog-hooks = ["on_blocked_recv"]\n')
    assert load(cfg, tmp_path).watchdog_hooks == ("on_blocked_recv",)


def test_unknown_key_names_the_key(tmp_path: Path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.rankguard]\nround = ["*.loop"]\n')
    with pytest.raises(InputError, match="unknown key 'round'"):
        load(None, tmp_path)


def test_toml_syntax_error_names_the_file(tmp_path: Path):
    cfg = tmp_path / "x.toml"
    cfg.write_text("[tool.rankguard\n")
    with pytest.raises(InputError, match=r"x\.toml: TOML syntax error"):
        load(cfg, tmp_path)


def test_wrong_type_is_refused(tmp_path: Path):
    cfg = tmp_path / "x.toml"
    cfg.write_text('[tool.rankguard]\nrounds = "*.loop"\n')
    with pytest.raises(InputError, match="'rounds' must be a list"):
        load(cfg, tmp_path)
