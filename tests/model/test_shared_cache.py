"""A cache built in one checkout folder serves a clone of the same code in another folder:
keys come from content and relative paths, never from where the checkout lies (CI restores a
cache built elsewhere)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rankguard.adapters import store
from rankguard.cli import main
from tests.conftest import EXAMPLE


@pytest.mark.parametrize("command", ["check", "rounds"])
def test_cache_from_one_checkout_serves_a_clone_elsewhere(capsys, tmp_path: Path, command: str):
    first = shutil.copytree(EXAMPLE, tmp_path / "ci" / "build-1" / "toysched")
    clone = shutil.copytree(EXAMPLE, tmp_path / "elsewhere" / "clone")
    cache = str(tmp_path / "cache")

    def run(root: Path) -> tuple[int, str]:
        code = main([command, str(root), "--format", "json", "--cache-dir", cache])
        return code, capsys.readouterr().out

    built = run(first)
    store.COUNTS.clear()
    served = run(clone)
    assert served == built
    # Everything came from the cache: no entry was missing, none was (re)written.
    assert store.COUNTS["hit"] > 0
    assert store.COUNTS["miss"] == 0 and store.COUNTS["write"] == 0, dict(store.COUNTS)
