"""rank-divergent-collective as a group-aware uniformity analysis (DESIGN §2.3).

A value is uniform over a group or varying. The modules, one job each: `lattice` (labels and
environments), `transfer` (one flow-sensitive walk per function), `agreement` (what a collective
agrees on, over which groups), `existence` (what `x is None` reads, in a test or an argument, and
what a returned helper answer hands on), `roots` (what a broadcast's root holds), `branches` (what
reaches past an `if`), `answers` (which `return` runs, when that decides a helper's answer),
`callbacks` (what a handed callable returns, per call site), `relays` (what a hand-rolled fan-out
hands on), `trees` (what part of a value is computed from: a conditional whose sides yield the same
items does not depend on its test), `zipped` (each target of a loop over `zip`/`enumerate` holds
its own sequence's items), `flow` (program-wide solve: the round-state induction, and group
filtering), `modes` (what only another mode's loop runs), `feasible` (what the round reaches on
paths the blocking analysis's facts allow), `collectives` (what a call enters, over which group,
pruned by call-site constants), `guards` (which conditions decide a collective call and whether
every side agrees), `findings` (the answer).
What varies, and which axes a group spans, comes from the catalog `catalogs/rank_sources.toml`.
"""

from rankguard.analysis.uniformity.findings import DivergentCall, find_divergent_calls

__all__ = ["DivergentCall", "find_divergent_calls"]
