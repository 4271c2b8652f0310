"""Rules: the plugin face over a typed analysis session (Fixit-style classes)."""
