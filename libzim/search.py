"""Full-text search (filled in by the search family)."""
