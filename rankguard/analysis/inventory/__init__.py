"""Inventory audits (DESIGN.md §2.6): relocate audit-table rows by their emitted literal at a
pinned revision, classify them, tell reachability from the rounds, regenerate the table, and
count bare vs genuine emissions in logs.

One module per job: `table` reads inventories, `sites` lists emitting calls from the cached
summaries, `templates` matches literals and log lines, `relocate` classifies, `census` streams
logs. Reading git and wiring them is `rankguard.pipelines.inventory`; output is
`rankguard.reports.inventory`.
"""

from rankguard.analysis.inventory.relocate import STATUSES, Relocation
from rankguard.analysis.inventory.table import Inventory, read_inventory

__all__ = [
    "STATUSES",
    "Inventory",
    "Relocation",
    "read_inventory",
]
