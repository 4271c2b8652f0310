"""The per-pull-request report (DESIGN.md §2.7): base vs head of one repository.

One module per section: `sides` reads and analyses a revision, `findings` matches findings by
fingerprint (and pairs moved ones), `staleness` compares staleness rows, `literals` compares
emitted literals and inventory rows, `ruffparity` compares ruff on the changed files, and
`build` assembles the sections and the one-line verdict.
"""

from rankguard.pipelines.report.build import Report, build_report

__all__ = ["Report", "build_report"]
