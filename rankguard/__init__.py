"""rankguard: static audits for code where every rank runs one loop and meets at collectives."""

__version__ = "0.1.0"
