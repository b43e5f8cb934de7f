"""Title suggestions (filled in by the suggestion family)."""
