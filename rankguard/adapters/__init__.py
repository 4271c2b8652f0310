"""I/O behind small adapters: the filesystem, git revisions, ruff. Analyses never touch these."""
