"""Per-file summaries: the only place that reads syntax trees for the whole-program model.

Importing the package registers every fact extractor, so every process computes (and caches)
the same summary for the same content.
"""

from rankguard.summary import arith as arith  # registers the "arith" extractor (staleness)
from rankguard.summary import emissions as emissions  # registers "emissions" (inventories)
