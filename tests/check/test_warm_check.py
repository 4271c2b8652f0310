"""A warm `check` of an unchanged tree loads what it needs and nothing more: the cached
results (findings and file errors) answer it without loading one summary or the resolution."""

from __future__ import annotations

import shutil
from pathlib import Path

from rankguard.adapters import store
from rankguard.cli import main
from tests.conftest import EXAMPLE


def test_warm_check_reads_only_its_results(capsys, tmp_path: Path):
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    (root / "toysched" / "broken.py").write_text("def (:\n")  # an error must survive too
    argv = ["check", str(root), "--format", "json", "--cache-dir", str(tmp_path / "cache")]
    cold = main(argv), capsys.readouterr()
    assert cold[0] == 2 and "broken.py" in cold[1].out
    store.COUNTS.clear()
    warm = main(argv), capsys.readouterr()
    assert warm == cold
    assert dict(store.COUNTS) == {"hit": 1}  # the results entry, nothing else
