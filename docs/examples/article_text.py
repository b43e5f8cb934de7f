"""The visible text of articles, and search results with their text.

    python docs/examples/article_text.py ARCHIVE.zim
"""

import sys

from libzim.reader import Archive
from libzim.search import Query, Searcher

archive = Archive(sys.argv[1])
item = archive.get_entry_by_path("loop").get_item()
print(item.text)                                    # main text, navigation dropped
print(item.get_text(main_only=False, max_chars=2000))
searcher = Searcher(archive)
for r in searcher.search(Query().set_query("parser")).get_results(0, 5, include_text=True):
    print(r.path, r.text[:200])
