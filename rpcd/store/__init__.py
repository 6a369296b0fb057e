"""Pi-compatible session JSONL store."""
