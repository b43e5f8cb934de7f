"""Full-text search over archives (python-libzim's libzim.search).

    searcher = Searcher(archive)          # or Searcher([a1, a2, ...])
    search = searcher.search("query")     # or a Query
    for result in search.get_results(0, 10, include_snippets=False):
        print(result.path, result.title, result.score)

A Searcher, Search and SearchResultSet may be shared by any number of threads.
Snippets of hits seen before are made from a process-wide cache of their
visible text (get/set_snippet_cache_max_size, get_snippet_cache_current_size),
apart from the reader's cluster cache.
"""
from libzim._libzim import (
    Query,
    Search,
    Searcher,
    SearchResult,
    SearchResultSet,
    get_snippet_cache_current_size,
    get_snippet_cache_max_size,
    set_snippet_cache_max_size,
)

__all__ = [
    "Query",
    "Search",
    "Searcher",
    "SearchResult",
    "SearchResultSet",
    "get_snippet_cache_current_size",
    "get_snippet_cache_max_size",
    "set_snippet_cache_max_size",
]
