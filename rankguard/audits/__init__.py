"""Analyses: pure functions of the `Program` (and config), no I/O."""
