"""A chain through a subclass's override holds only where that subclass is configured.

Class-hierarchy resolution sends `backend.prepare(x)` on a declared `Backend` to every
subclass's override (`core.chains`: an "override" hop). Which subclass a launch builds is
configuration the model does not see, so a blocking call reached that way is known to block,
not known to run: at most medium confidence, naming the override it depends on. Measured by
hand on three corpora before this was built: high-confidence findings through an override were
true 3 times in 12 (sglang 2/8, megatron-core 0/2, vllm 1/2), against about half elsewhere.
"""

from __future__ import annotations

from rankguard.analysis.blocking_types import BlockingCall, lowered


def configured(call: BlockingCall) -> BlockingCall:
    """`call` at most medium if its chain passes a subclass's override."""
    if call.confidence != "high":
        return call
    functions = [hop.function for hop in call.chain[1:]] + [call.function]
    chosen = next(
        ((hop, functions[index]) for index, hop in enumerate(call.chain) if hop.edge == "override"),
        None,
    )
    if chosen is None:
        return call
    hop, override = chosen
    why = (
        f"reached through `{override}`, an override of the declared receiver's method "
        f"({hop.path}:{hop.line}): it runs only where the program is configured with that class"
    )
    return lowered(call, "medium", why)
