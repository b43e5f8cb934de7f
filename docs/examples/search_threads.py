"""Full-text search and suggestions from several threads sharing one Searcher.

    python docs/examples/search_threads.py ARCHIVE.zim
"""

import sys
from concurrent.futures import ThreadPoolExecutor

from libzim.reader import Archive
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

archive = Archive(sys.argv[1])
searcher = Searcher(archive)                    # one Searcher, shared by every thread


def top(query):
    search = searcher.search(Query().set_query(query))     # the GIL is released while libzim works
    return [(r.path, r.score) for r in search.get_results(0, 10, include_snippets=False)]


queries = ["event", "loop", "parser", "event loop"] * 4
with ThreadPoolExecutor(max_workers=4) as pool:
    answers = list(pool.map(top, queries))
assert answers == [top(q) for q in queries]     # the same answers as one thread gets
print(dict(zip(queries, answers)))

for r in searcher.search("event loop").get_results(0, 3):  # with snippets
    print(r.path, r.title, r.score, r.snippet)
for s in SuggestionSearcher(archive).suggest("pa").get_results(0, 5):
    print("suggestion:", s.path, s.title)
