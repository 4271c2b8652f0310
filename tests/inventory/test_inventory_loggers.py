"""Emitters the model recognises: level methods on receivers known to be loggers.

`warning_once`-style methods used to be plain calls (only listed level names counted), so a row
emitted that way was reported prose-only; and any receiver's `.error(...)` counted as logging.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.analysis.inventory.sites import collect_sites
from rankguard.summary import emissions as _emissions  # noqa: F401  (registers the extractor)
from rankguard.summary.emissions import extract_emissions
from rankguard.summary.parse import SummaryCache, parse_all

LOGGERS = textwrap.dedent(
    """\
    import logging
    import logging as lg
    import structlog
    from loguru import logger as guru

    logger = logging.getLogger(__name__)
    slog = structlog.get_logger()
    alias = logger

    class Worker:
        log = logging.getLogger("cls")

        def __init__(self, parser, sink: logging.Logger):
            self.logger = logging.getLogger("w")
            self.sink = sink
            self.parser = parser

        def run(self, x):
            logger.warning_once("first once %s", x)
            logger.info_once(f"info once {x}")
            logger.exception("exception text")
            logger.critical("critical text")
            logger.log(logging.WARNING, "log with level %d", x)
            lg.error("module level error")
            logging.getLogger("inline").debug("inline factory")
            guru.bind(user=x).info("loguru bound")
            slog.info("structlog event")
            alias.fatal("aliased logger")
            self.logger.warning("self attribute logger")
            self.log.info("class attribute logger")
            self.sink.error("annotated parameter")
            self.parser.error("argparse says no")
            math.log("not a log line")
    """
)


def _by_template(source: str) -> dict[str, tuple[str, str]]:
    found = extract_emissions(ast.parse(source), source)["sites"]
    return {e.template: (e.kind, e.callee) for e in found}


def test_level_methods_on_known_loggers_are_logging():
    sites = _by_template(LOGGERS)
    logging_kind = {t for t, (kind, _) in sites.items() if kind == "logging"}
    assert logging_kind == {
        "first once %s",
        "info once {}",
        "exception text",
        "critical text",
        "log with level %d",
        "module level error",
        "inline factory",
        "loguru bound",
        "structlog event",
        "aliased logger",
        "self attribute logger",
        "class attribute logger",
        "annotated parameter",
    }
    # An unknown receiver's level method is a plain call a configured pattern may select.
    assert sites["argparse says no"] == ("call", "self.parser.error")


def test_logger_imported_from_a_project_module(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/log.py").write_text("import logging\nlogger = logging.getLogger('p')\n")
    (tmp_path / "pkg/use.py").write_text(
        "from pkg.log import logger\nfrom .log import logger as rel\n"
        "from pkg.other import thing\n\n"
        "def f():\n    logger.warning_once('imported once')\n"
        "    rel.info('relative import')\n    thing.error('not a logger')\n"
    )
    (tmp_path / "pkg/other.py").write_text("thing = object()\n")
    tree = read_directory(tmp_path)
    summaries, errors = parse_all(tree.files, SummaryCache(None), jobs=1)
    assert errors == []
    emitting, others = collect_sites(tree.files, summaries, ())
    assert {s.template for s in emitting} == {"imported once", "relative import"}
    assert {s.template for s in others} == {"not a logger"}


def test_functions_passing_their_parameter_to_an_emitter_are_emitters(tmp_path: Path):
    # Logging helpers (`print_warning_once(msg)`, `log_info_on_rank0(logger, msg)`,
    # `print_rank_0(message)`): their callers' literals are emitted.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/helpers.py").write_text(
        textwrap.dedent(
            """\
            import logging
            logger = logging.getLogger(__name__)

            def print_warning_once(msg: str) -> None:
                logger.warning(msg)

            def log_info_on_rank0(logger, msg):
                if rank() == 0:
                    logger.info(msg)

            def print_rank_0(message):
                print(message, flush=True)

            def dump_log(msg):
                print(f"[dumper, rank={rank()}] {msg}")

            def lookup(name):
                return TABLE[name]

            def check(result, label):
                if result:
                    raise RuntimeError(f"{label}: failed with {result}")
            """
        )
    )
    (tmp_path / "pkg/use.py").write_text(
        textwrap.dedent(
            """\
            from pkg import helpers
            from pkg.helpers import log_info_on_rank0, lookup, print_warning_once

            def f(logger):
                print_warning_once("deprecated flag ignored")
                log_info_on_rank0(logger, f"weights loaded in {1} s")
                helpers.print_rank_0("building the model")
                helpers.dump_log("dumping tensors")
                lookup("a table key")
                helpers.check(1, "cuMemCreate")  # a label inside a message: no helper
            """
        )
    )
    tree = read_directory(tmp_path)
    summaries, _ = parse_all(tree.files, SummaryCache(None), jobs=1)
    emitting, others = collect_sites(tree.files, summaries, ())
    found = {(s.template, s.kind, s.callee) for s in emitting if s.path == "pkg/use.py"}
    assert found == {
        ("deprecated flag ignored", "wrapper", "print_warning_once"),
        ("weights loaded in {} s", "wrapper", "log_info_on_rank0"),
        ("building the model", "wrapper", "helpers.print_rank_0"),
        ("dumping tensors", "wrapper", "helpers.dump_log"),
    }
    assert {s.template for s in others} == {"a table key", "cuMemCreate"}
