"""SARIF 2.1.0 for GitHub code scanning: one run, rules with descriptions and help, results with
`partialFingerprints` (our line-free fingerprint) and the call chain as a code flow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankguard import __version__
from rankguard.core.errors import ErrorRecord
from rankguard.core.findings import Finding
from rankguard.reports import rule_docs
from rankguard.rules.base import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "rankguard/v1"
LEVEL = "warning"  # every rule's default: a finding is a risk to review, not a crash


def _location(path: str, line: int, message: str | None = None) -> dict[str, Any]:
    loc: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": max(int(line), 1)},
        }
    }
    if message:
        loc["message"] = {"text": message}
    return loc


def _rule(rule: type[Rule]) -> dict[str, Any]:
    """A reportingDescriptor with the rule's documentation (`reports.rule_docs`): help as text
    and Markdown, a link to its anchor in the shipped docs, default level and tags."""
    tags = ["rankguard", *([rule.code] if rule.code else []), "fixable" if rule.fix else "manual"]
    return {
        "id": rule.name,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.description},
        "fullDescription": {"text": rule.what or rule.help or rule.description},
        "help": {"text": rule_docs.to_text(rule), "markdown": rule_docs.to_markdown(rule)},
        "helpUri": rule_docs.help_uri(rule),
        "defaultConfiguration": {"level": LEVEL},
        "properties": {"code": rule.code, "tags": tags},
    }


def _result(finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVEL,
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.line)],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
    }
    if finding.rule in rule_index:
        result["ruleIndex"] = rule_index[finding.rule]
    chain = finding.extra.get("chain") or []
    if chain:
        steps = [
            {"location": _location(hop["path"], hop["line"], f"in {hop['function']}")}
            for hop in chain
        ]
        result["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
    related = []
    collective = finding.extra.get("collective")
    if isinstance(collective, dict) and "path" in collective:
        label = f"collective {collective['callee']}"
        related.append(_location(collective["path"], collective["line"], label))
    for follower in finding.extra.get("followers") or ():
        # A sync this one drains: it waits in this one's place once this one is removed.
        label = f"follower `{follower['text']}`: waits where this call reads the host"
        related.append(_location(follower["path"], follower["line"], label))
    if related:
        result["relatedLocations"] = [{"id": i, **loc} for i, loc in enumerate(related, 1)]
    props = {k: finding.extra[k] for k in ("round", "confidence", "cadenced") if k in finding.extra}
    if props:
        result["properties"] = props
    return result


def render(
    findings: Sequence[Finding], rules: Sequence[type[Rule]], errors: Sequence[ErrorRecord] = ()
) -> dict[str, Any]:
    ordered = sorted(rules, key=lambda r: r.name)
    rule_index = {rule.name: i for i, rule in enumerate(ordered)}
    invocation: dict[str, Any] = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": error.message},
                "locations": [_location(error.path, 1)],
            }
            for error in errors
        ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rankguard",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/rankguard/",
                        "rules": [_rule(rule) for rule in ordered],
                    }
                },
                "invocations": [invocation],
                "results": [_result(f, rule_index) for f in sorted(findings)],
            }
        ],
    }
