"""Bad input never crashes a run and never loses anything quietly: each case gets a clear
message naming the file, the rest of the tree is still analysed, and unusable input exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.cli import main
from tests.conftest import write_tree

GOOD = "def event_loop(self):\n    while True:\n        pass\n"


def _rounds_json(capsys, root: Path, *extra: str) -> tuple[int, dict]:
    code = main(["rounds", str(root), "--no-cache", "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_symlink_loop_and_link_out_of_tree_are_reported(tmp_path: Path):
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    root = write_tree(tmp_path / "tree", {"pkg/__init__.py": "", "pkg/ok.py": GOOD})
    (root / "pkg" / "escape.py").symlink_to(outside)
    (root / "pkg" / "loop.py").symlink_to(root / "pkg" / "loop.py")
    (root / "pkg" / "again").symlink_to(root / "pkg", target_is_directory=True)
    tree = read_directory(root)
    assert sorted(f.path for f in tree.files) == ["pkg/__init__.py", "pkg/ok.py"]
    messages = {e.path: e.message for e in tree.errors}
    assert messages["pkg/escape.py"].startswith("symbolic link out of the tree")
    assert "link" in messages["pkg/loop.py"]
    assert messages["pkg/again"] == "symbolic link to a folder: not followed"


def test_unreadable_file_is_named_and_the_rest_is_read(tmp_path: Path, monkeypatch):
    root = write_tree(tmp_path, {"a.py": GOOD, "secret.py": GOOD})
    real = Path.read_bytes

    def guarded(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", guarded)
    tree = read_directory(root)
    assert [f.path for f in tree.files] == ["a.py"]
    assert [(e.path, e.message) for e in tree.errors] == [
        ("secret.py", "cannot read: Permission denied")
    ]


def test_empty_tree_says_so(capsys, tmp_path: Path):
    code = main(["rounds", str(tmp_path), "--no-cache"])
    assert code == 2
    assert ": no round found: no function runs a loop" in capsys.readouterr().err


def test_binary_and_huge_files(capsys, tmp_path: Path):
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02binary")
    big = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(25_000))
    (tmp_path / "big.py").write_text(big + "\n")  # 50,000 lines
    (tmp_path / "loop.py").write_text(
        "import torch.distributed as dist\n\n\ndef event_loop():\n    while True:\n"
        "        dist.barrier()\n"
    )
    code, out = _rounds_json(capsys, tmp_path)
    assert code == 2
    assert out["errors"] == [
        {"path": "blob.py", "message": "contains NUL bytes: not a Python source file"}
    ]


def test_two_runs_share_one_cache_at_the_same_time(tmp_path: Path):
    example = Path(__file__).resolve().parents[2] / "examples" / "toysched"
    cache = tmp_path / "cache"
    argv = [sys.executable, "-m", "rankguard", "rounds", str(example), "--format", "json"]
    env = {**os.environ, "RANKGUARD_CACHE_DIR": str(cache)}
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    assert not list(cache.rglob(".tmp-*"))  # no half-written entry left behind


def test_a_truncated_resolution_cache_is_rebuilt(capsys, tmp_path: Path):
    root = write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/m.py": GOOD})
    cache = tmp_path / "cache"
    first = main(["rounds", str(root), "--cache-dir", str(cache), "--format", "json"])
    expected = capsys.readouterr().out
    for entry in (cache / "programs").glob("*.pickle"):
        entry.write_bytes(b"\x80\x05trunc")
    assert main(["rounds", str(root), "--cache-dir", str(cache), "--format", "json"]) == first
    assert capsys.readouterr().out == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rounds", "{root}", "--config", "{root}/missing.toml"], "config file not found"),
        (["graph", "{root}", "--callees", "no.such.fn"], "no such function"),
    ],
)
def test_unusable_input_exits_2_with_one_line(capsys, tmp_path: Path, argv, message):
    write_tree(tmp_path, {"a.py": GOOD})
    code = main([a.format(root=tmp_path) for a in argv] + ["--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1 and err.startswith("rankguard: error: ")
