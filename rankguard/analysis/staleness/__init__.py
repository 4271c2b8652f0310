"""Staleness direction: every driver term, the sign with which it reaches each consumer, and
whether a stale (cached), too-large value widens the budget there (DESIGN.md §1, §2.5)."""

from rankguard.analysis.staleness.report import StalenessReport, TermRow, staleness

__all__ = ["StalenessReport", "TermRow", "staleness"]
