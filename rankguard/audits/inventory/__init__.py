"""Inventory audits (DESIGN.md §2.6): relocate audit-table rows by their emitted literal at a
pinned revision, classify them, tell reachability from the rounds, regenerate the table, and
count bare vs genuine emissions in logs.

One module per job: `table` reads inventories, `sites` lists emitting calls from the cached
summaries, `templates` matches literals and log lines, `relocate` classifies, `pins` warns about
the inventory's own pin, `census` streams logs, `pipeline` wires them, `render` writes output.
(The submodules' names are not shadowed here: `pipeline.relocate` / `pipeline.census` run them.)
"""

from rankguard.audits.inventory.pipeline import load_pinned
from rankguard.audits.inventory.relocate import STATUSES, Relocation
from rankguard.audits.inventory.table import Inventory, read_inventory

__all__ = [
    "STATUSES",
    "Inventory",
    "Relocation",
    "load_pinned",
    "read_inventory",
]
