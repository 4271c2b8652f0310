"""Per-file summaries: the only place that reads syntax trees for the whole-program model."""
