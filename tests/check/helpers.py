"""Run rules over small programs written to a temporary tree."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from rankguard.adapters.sources import read_directory
from rankguard.core.config import Config, _validate
from rankguard.model import load_program
from rankguard.rules.base import Example, Finding, Rule
from rankguard.rules.engine import CheckResult, run_rules

HEAD = """\
import gc, queue, subprocess, threading, time
import functools
from concurrent.futures import Future
import torch
import torch.distributed as dist
import zmq
"""


def config_of(settings: dict[str, Any]) -> Config:
    return Config(**_validate(dict(settings), "test config"))


def check_files(
    root: Path,
    files: dict[str, str],
    rules: list[type[Rule]],
    settings: dict[str, Any] | None = None,
    **options: Any,
) -> CheckResult:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    config = config_of(settings or {})
    program = load_program(read_directory(root, config.exclude))
    assert not program.errors, program.errors
    reader = options.pop("read_source", lambda rel: (root / rel).read_text("utf-8"))
    return run_rules(program, config, rules, options, read_source=reader)


def check_example(root: Path, rule: type[Rule], example: Example, **options: Any) -> list[Finding]:
    result = check_files(root, {"example.py": example.code}, [rule], example.config, **options)
    return result.findings


def marked_lines(code: str) -> list[int]:
    return Example(textwrap.dedent(code).lstrip("\n")).expected_lines()
