"""The `emissions` extractor: emitter kinds, enclosing functions and templates."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rankguard.analysis.inventory.templates import LineMatcher, contains_literal, line_matchers
from rankguard.summary.emissions import extract_emissions

SOURCE = textwrap.dedent(
    """\
    import logging, sys, warnings
    logger = logging.getLogger(__name__)
    logger.info("module level %s", 1)

    def f(x):
        logger.info("lazy %d items", x)
        logger.info("no args so 100%s stays")
        logging.warning("pct %s" % x)
        logger.log(logging.INFO, "level first %s", x)
        logger.error(f"fstring {x!r} done")
        logger.debug("fmt {} and {name}".format(x, name=x))
        logger.warning("implicit "
                       "concat")
        print("a", x, sep="-")
        warnings.warn("deprecated thing")
        sys.stderr.write("to stderr\\n")
        report("custom " + str(x) + " end")
        d.get("a key")
        "{} not an emitter".format(x)

        def inner():
            raise ValueError(f"bad {x}")
        return inner

    class C:
        print("class body")

        def m(self):
            lam = lambda: logger.info("in lambda")
    """
)


@pytest.fixture(scope="module")
def sites():
    found = extract_emissions(ast.parse(SOURCE), SOURCE)
    return {e.template: e for e in found["sites"]}


@pytest.mark.parametrize(
    ("template", "function", "kind", "callee"),
    [
        ("module level %s", "", "logging", "logger.info"),
        ("lazy %d items", "f", "logging", "logger.info"),
        ("no args so 100%s stays", "f", "logging", "logger.info"),
        ("pct %s", "f", "logging", "logging.warning"),
        ("level first %s", "f", "logging", "logger.log"),
        ("fstring {} done", "f", "logging", "logger.error"),
        ("fmt {} and {name}", "f", "logging", "logger.debug"),
        ("implicit concat", "f", "logging", "logger.warning"),
        ("a-{}", "f", "print", "print"),
        ("deprecated thing", "f", "warnings", "warnings.warn"),
        ("to stderr\n", "f", "stream", "sys.stderr.write"),
        ("custom {} end", "f", "call", "report"),
        ("bad {}", "f.<locals>.inner", "raise", "ValueError"),
        ("class body", "", "print", "print"),
        ("in lambda", "C.m", "logging", "logger.info"),
    ],
)
def test_kinds_functions_templates(sites, template, function, kind, callee):
    site = sites[template]
    assert (site.function, site.kind, site.callee) == (function, kind, callee)


def test_lines_and_skips(sites):
    assert sites["implicit concat"].line == 12
    assert sites["implicit concat"].end_line == 13
    assert sites["bad {}"].line == 22  # the raise line
    assert "a key" not in sites  # a key lookup is not a message
    assert not any("not an emitter" in t for t in sites)
    lazy = sites["lazy %d items"].parts
    assert lazy == ((False, "lazy "), (True, "%d"), (False, " items"))
    assert sites["no args so 100%s stays"].parts == ((False, "no args so 100%s stays"),)


def test_contains_literal():
    parts = ((False, "Logging configured for TP"), (True, "%d"), (False, " PP"), (True, "%d"))
    assert contains_literal(parts, "configured for")
    assert not contains_literal(parts, "TP0 PP1")
    assert contains_literal(parts, "TP0 PP1", across_fields=True)
    assert contains_literal(parts, "Logging configured for TP0 PP", across_fields=True)
    assert not contains_literal(parts, "TP0 PP1 and more text here", across_fields=True)
    assert not contains_literal(parts, "XX configured", across_fields=True)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"[ts TP0] Asking the pool to release 12 bytes of cached KV", True),
        (b"Asking the pool to release 12 bytes of cached KV \r", True),
        (b"Asking the pool to release 12 bytes of cached KV and more", False),
        (b"doc: Asking the pool to release", False),
        (b"Asking the pool to release  bytes of cached KV", True),  # an empty field
    ],
)
def test_line_matcher(line, expected):
    parts = ((False, "Asking the pool to release "), (True, "{}"), (False, " bytes of cached KV"))
    (matcher,) = line_matchers(parts, "Asking the pool")
    assert matcher.matches(line) is expected


def test_multiline_template_segments():
    parts = ((False, "head line\nsecond "), (True, "%s"), (False, " tail"))
    (matcher,) = line_matchers(parts, "second")
    assert matcher == LineMatcher((b"second ", b" tail"), False, False, True)
    assert matcher.matches(b"second x tail")
    assert not matcher.matches(b"prefix second x tail")  # a continuation line starts the line
    (first,) = line_matchers(parts, "head")
    assert first.matches(b"[ts] head line")
