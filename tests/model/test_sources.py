"""Where sources come from: module names from package structure, skipped folders, git revisions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rankguard.adapters.sources import module_names, read_directory, read_revision
from rankguard.core.errors import InputError
from tests.conftest import write_tree


def test_module_names_from_packages_namespaces_and_src_layouts():
    names, clashes = module_names(
        [
            "src/pkg/__init__.py",
            "src/pkg/m.py",
            "src/pkg/ns/deep.py",  # namespace folder inside a package
            "scripts/tool.py",
        ]
    )
    assert names == {
        "src/pkg/__init__.py": "pkg",
        "src/pkg/m.py": "pkg.m",
        "src/pkg/ns/deep.py": "pkg.ns.deep",
        "scripts/tool.py": "scripts.tool",
    }
    assert clashes == []


def test_pointing_inside_a_package_keeps_the_full_name(tmp_path: Path):
    # As with sglang/srt: `srt` has no __init__.py, its parent `sglang` does.
    write_tree(tmp_path, {"sglang/__init__.py": "", "sglang/srt/managers/scheduler.py": ""})
    tree = read_directory(tmp_path / "sglang" / "srt")
    assert [(f.path, f.module) for f in tree.files] == [
        ("managers/scheduler.py", "sglang.srt.managers.scheduler")
    ]


def test_vcs_virtualenv_build_and_excluded_folders_are_skipped(tmp_path: Path):
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            ".git/hooks/x.py": "",
            "venv2/pyvenv.cfg": "",
            "venv2/lib/y.py": "",
            "build/z.py": "",
            "pkg/generated/g.py": "",
        },
    )
    tree = read_directory(tmp_path, exclude=("pkg/generated",))
    assert [f.path for f in tree.files] == ["pkg/__init__.py"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_git_revision_is_read_without_checkout(tmp_path: Path):
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "def old():\n    pass\n"})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    first = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "pkg" / "m.py").write_text("def new():\n    pass\n")  # dirty work tree
    tree = read_revision(tmp_path, first)
    files = {f.path: f for f in tree.files}
    assert files["pkg/m.py"].data == b"def old():\n    pass\n"
    assert files["pkg/m.py"].module == "pkg.m"
    assert tree.revision == first


@pytest.mark.parametrize("ref", ["-rf", "", "no-such-branch"])
def test_bad_refs_are_input_errors(tmp_path: Path, ref: str):
    write_tree(tmp_path, {"a.py": ""})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    with pytest.raises(InputError, match="ref"):
        read_revision(tmp_path, ref)


def test_a_folder_that_is_not_a_repository(tmp_path: Path):
    with pytest.raises(InputError, match="not a git repository"):
        read_revision(tmp_path, "HEAD")


def test_namespace_top_package_in_an_unpacked_wheel(tmp_path: Path):
    # megatron-core's wheel: `megatron/` has no __init__.py, `megatron/core/` has one.
    write_tree(
        tmp_path,
        {
            "megatron_core-0.14.0.dist-info/METADATA": "",
            "megatron/core/__init__.py": "",
            "megatron/core/schedules.py": "",
        },
    )
    whole = read_directory(tmp_path)
    inner = read_directory(tmp_path / "megatron" / "core")
    assert sorted(f.module for f in whole.files) == ["megatron.core", "megatron.core.schedules"]
    assert sorted(f.module for f in inner.files) == ["megatron.core", "megatron.core.schedules"]
