"""Full-text search over archives (python-libzim's libzim.search).

    searcher = Searcher(archive)          # or Searcher([a1, a2, ...])
    search = searcher.search("query")     # or a Query
    for result in search.get_results(0, 10, include_snippets=False):
        print(result.path, result.title, result.score)

A Searcher, Search and SearchResultSet may be shared by any number of threads.
"""
from libzim._libzim import Query, Search, Searcher, SearchResult, SearchResultSet

__all__ = ["Query", "Search", "Searcher", "SearchResult", "SearchResultSet"]
