"""rankguard: static audits for code where every rank runs the same loop and meets at collectives."""

__version__ = "0.1.0"
