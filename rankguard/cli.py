"""The `rankguard` command line: one sub-command per module in `rankguard.commands`.

Exit codes: 0 nothing found, 1 findings, 2 usage or input error (an error outranks findings).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

from rankguard import __version__, commands
from rankguard.core import progress
from rankguard.core.errors import InputError, internal_error

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _common() -> argparse.ArgumentParser:
    """Options every sub-command takes, so they may follow the sub-command's name."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options")
    group.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="read [tool.rankguard] from FILE (default: nearest pyproject.toml above PATH)",
    )
    group.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="parse cache folder (default: $RANKGUARD_CACHE_DIR or ~/.cache/rankguard)",
    )
    group.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rankguard",
        description=(
            "Static audits for distributed Python serving code: calls that stall a rank before "
            "a collective, rank-divergent collectives, staleness direction, inventories."
        ),
        epilog=(
            "Exit codes: 0 clean, 1 findings, 2 usage, input or internal error "
            "(RANKGUARD_DEBUG=1 shows an internal error's traceback)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rankguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _common()
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"rankguard.commands.{info.name}")
        command = sub.add_parser(
            module.NAME, help=module.HELP, description=module.HELP, parents=[common]
        )
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with progress.reporting(sys.stderr):
            return int(args.run(args))
    except InputError as exc:
        print(f"rankguard: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `rankguard ... | head`
        return EXIT_CLEAN
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: exit 2 (exit 1 would pass for findings)
        if os.environ.get("RANKGUARD_DEBUG"):
            raise
        record = internal_error(f"'rankguard {args.command}'", exc)
        print(f"rankguard: {record.path}: {record.message}", file=sys.stderr)
        return EXIT_ERROR


def entry() -> None:
    """Console-script entry: exits without tearing down the model object by object."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
