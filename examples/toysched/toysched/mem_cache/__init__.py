"""KV cache bookkeeping."""
