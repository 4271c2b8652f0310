"""rankguard reads code and never runs it: a package that would leave a mark if imported or
executed, however it is reached, is analysed by every command and leaves none."""

from __future__ import annotations

from pathlib import Path

from rankguard.cli import main
from tests.conftest import write_tree


def test_analysing_hostile_code_executes_none_of_it(capsys, tmp_path: Path):
    mark = tmp_path / "EXECUTED"
    trap = f"open({str(mark)!r}, 'w').write('ran')\n"
    root = write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": trap + "raise SystemExit('imported')\n",
            "pkg/sched.py": f"import os\nos.system('touch {mark}')\n"
            + "class S:\n    def event_loop(self):\n        while True:\n"
            + "            os.system('x')\n",
            "sitecustomize.py": trap,
            "conftest.py": trap,
            "setup.py": trap,
            "pkg/__main__.py": trap,
        },
    )
    for argv in (["rounds", str(root)], ["graph", str(root), "--format", "json"]):
        main([*argv, "--no-cache"])
    capsys.readouterr()
    assert not mark.exists()
