"""Scheduler, its mixins and its components."""
