"""One name per module: namespace layouts name modules by path, real clashes keep both files.

A tree holding a namespace folder (no `__init__.py`) with packages inside, as a repository
holding only a project's `sglang/srt`-like subtree does, used to name each package from its own
topmost `__init__.py`: two `utils/common.py` under different folders got one name, one file was
dropped and every run exited 2.
"""

from __future__ import annotations

from pathlib import Path

from rankguard.adapters.sources import module_names, read_directory, read_revision
from rankguard.model import load_program
from tests.conftest import write_tree
from tests.inventory.conftest import commit, git

NAMESPACE_TREE = {
    "proj/core/loose.py": "",  # a module straight in the namespace folder
    "proj/core/utils/__init__.py": "",
    "proj/core/utils/common.py": "def a():\n    pass\n",
    "proj/core/layers/utils/__init__.py": "",  # `layers` is a namespace folder too
    "proj/core/layers/utils/common.py": "def b():\n    pass\n",
}


def test_namespace_layout_names_come_from_paths():
    names, clashes = module_names(list(NAMESPACE_TREE))
    assert names == {
        "proj/core/loose.py": "proj.core.loose",
        "proj/core/utils/__init__.py": "proj.core.utils",
        "proj/core/utils/common.py": "proj.core.utils.common",
        "proj/core/layers/utils/__init__.py": "proj.core.layers.utils",
        "proj/core/layers/utils/common.py": "proj.core.layers.utils.common",
    }
    assert clashes == []


def test_nested_package_roots_name_through_the_outer_one():
    # No loose module says `top` is a namespace: `top` is the import root, `inner` a namespace.
    names, _ = module_names(
        [
            "top/utils/__init__.py",
            "top/utils/common.py",
            "top/inner/utils/__init__.py",
            "top/inner/utils/common.py",
        ]
    )
    assert names["top/utils/common.py"] == "utils.common"
    assert names["top/inner/utils/common.py"] == "inner.utils.common"


def test_a_real_clash_keeps_both_and_names_both_files():
    names, clashes = module_names(["pkg/__init__.py", "pkg/m.py", "pkg/m/__init__.py"])
    assert len(set(names.values())) == 3
    assert names["pkg/m/__init__.py"] == "pkg.m"  # the package wins, as in Python
    assert names["pkg/m.py"] != "pkg.m"
    assert len(clashes) == 1
    assert clashes[0].path == "pkg/m.py"
    assert "pkg/m/__init__.py" in clashes[0].message


def test_program_keeps_both_common_modules_without_errors(tmp_path: Path):
    write_tree(tmp_path, NAMESPACE_TREE)
    git(tmp_path, "init", "-q")
    rev = commit(tmp_path, "one")
    for tree in (read_directory(tmp_path), read_revision(tmp_path, rev)):
        modules = sorted(f.module for f in tree.files)
        assert len(modules) == len(set(modules)) == 5
        program = load_program(tree)
        assert program.errors == []
        assert {"proj.core.utils.common.a", "proj.core.layers.utils.common.b"} <= set(
            program.functions
        )


def test_check_warns_of_a_clash_and_still_runs(tmp_path: Path, capsys):
    from rankguard.cli import main

    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "", "pkg/m/__init__.py": ""})
    (tmp_path / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.nothing"]\n')
    for command in (["check", str(tmp_path)], ["graph", str(tmp_path)]):
        main([*command, "--no-cache"])
        err = capsys.readouterr().err
        assert "warning: pkg/m.py: module pkg.m is pkg/m/__init__.py" in err, command
        assert "already read" not in err
