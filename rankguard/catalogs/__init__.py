"""Catalogs as data: what is a collective, what blocks, which terms come from the driver."""
