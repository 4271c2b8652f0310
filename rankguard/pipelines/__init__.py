"""Orchestration and I/O: the check, the pull-request report and the inventory pipelines."""
