"""What several sub-commands do the same way: load config and program, write output."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rankguard.adapters.sources import read_directory
from rankguard.analysis.discovery import Discovery
from rankguard.core.config import Config, load
from rankguard.core.errors import ErrorRecord, InputError
from rankguard.model import Program, load_program
from rankguard.model.load import make_cache

_CHUNKS_PER_WRITE = 1 << 16  # encoder chunks joined into one write of the JSON document


def load_config(args: argparse.Namespace, start: Path) -> Config:
    return load(args.config, start)


def load_from_path(args: argparse.Namespace, path: Path) -> tuple[Config, Program]:
    config = load_config(args, path)
    cache = make_cache(args.cache_dir, enabled=not args.no_cache)
    tree = read_directory(path, config.exclude)
    print_warnings(tree.warnings)
    return config, load_program(tree, cache)


def print_warnings(warnings: list[ErrorRecord]) -> None:
    """Things the run works around (two files Python imports under one name), on stderr."""
    for warning in warnings:
        print(f"rankguard: warning: {warning.path}: {warning.message}", file=sys.stderr)


def emit_json(payload: dict[str, Any], out=None) -> None:
    """The document in large writes: `json.dump` hands the stream each small chunk the encoder
    makes (8 M writes for sglang's 99 MB check document: 26 of a warm run's 30 s); one string
    of it all would hold a second copy of the document."""
    stream = out or sys.stdout
    chunks: list[str] = []
    for chunk in json.JSONEncoder(indent=2, sort_keys=True).iterencode(payload):
        chunks.append(chunk)
        if len(chunks) == _CHUNKS_PER_WRITE:
            stream.write("".join(chunks))
            chunks.clear()
    chunks.append("\n")
    stream.write("".join(chunks))


def announce(found: Discovery) -> None:
    """Discovered rounds, one line on stderr: a user must know what was judged."""
    print(found.announcement(), file=sys.stderr)


def print_errors(errors: list[ErrorRecord]) -> None:
    for error in errors:
        print(f"rankguard: {error.path}: {error.message}", file=sys.stderr)


def write_output(text: str, destination: Path | None) -> None:
    """To stdout, or to `destination` (an unwritable destination is an input error)."""
    if destination is None:
        sys.stdout.write(text)
        return
    try:
        destination.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{destination}: cannot write: {exc.strerror or exc}") from exc
