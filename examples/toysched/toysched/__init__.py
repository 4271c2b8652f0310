"""toysched: a toy sglang-style scheduler, one process per rank."""

__version__ = "0.1.0"
