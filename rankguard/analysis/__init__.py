"""Analyses: pure functions of the model (rounds, reach, blocking, divergence, watchdog,
staleness, inventories)."""
