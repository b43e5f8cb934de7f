"""Title suggestions (python-libzim's libzim.suggestion)."""
from libzim._libzim import (
    SuggestionResult,
    SuggestionResultSet,
    SuggestionSearch,
    SuggestionSearcher,
)

__all__ = ["SuggestionResult", "SuggestionResultSet", "SuggestionSearch", "SuggestionSearcher"]
