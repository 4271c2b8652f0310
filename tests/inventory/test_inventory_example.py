"""The example's inventory (examples/toysched/INVENTORY.md) relocates as EXPECTED.md §7 says."""

from __future__ import annotations

import json
import shutil

from rankguard.cli import main
from tests.conftest import EXAMPLE
from tests.inventory.conftest import commit, git


def test_example_inventory_relocates_as_expected(tmp_path, capsys):
    repo = tmp_path / "toysched"
    shutil.copytree(EXAMPLE, repo)
    git(repo, "init", "-q")
    commit(repo, "toysched")
    args = ["inventory", "relocate", str(repo / "INVENTORY.md"), "--repo", str(repo)]
    code = main([*args, "--pin", "HEAD", "--no-cache", "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    rows = {row["id"]: (row["status"], row["reachable"]) for row in payload["rows"]}
    assert rows == {
        "E1": ("held", False),
        "E2": ("held", True),
        "E3": ("held", True),
        "E4": ("held", True),
        "E5": ("held", False),
        "E6": ("held", False),
        "E7": ("prose-only", None),
    }
    prose = {(p["path"], p["kind"]) for p in payload["rows"][6]["prose"]}
    assert prose == {
        ("toysched/managers/memory_mixin.py", "docstring"),
        ("toysched/managers/memory_mixin.py", "comment"),
    }
    assert payload["errors"] == []
    assert [w["kind"] for w in payload["warnings"]] == ["no-inventory-pin"]
    assert code == 1
