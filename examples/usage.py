# pyright: strict
"""The usage example of docs/getting-started.md as a program, type-checked against the installed package.

    python examples/usage.py ARCHIVE [ENTRY_PATH] [QUERY] [TITLE_PREFIX]

ENTRY_PATH defaults to the archive's main entry (a random article if it has
none); an empty ENTRY_PATH does the same. The demo archive (`python -m libzim
demo` prints its path) is ~/.cache/libzim-c/python3-doc__python3-doc_*.zim.

tools/test.sh checks this file with `mypy --strict` and pyright against the
package installed from the sdist, so the shipped stubs are what a user's type
checker sees. The annotations below are the types the documentation promises.
"""

from __future__ import annotations

import sys
import threading

from libzim import SearchError, ZimError
from libzim.reader import Archive, Entry, Item
from libzim.search import Query, Search, Searcher, SearchResult
from libzim.suggestion import SuggestionSearcher
from libzim.version import get_libzim_version


def pick_entry(archive: Archive, entry_path: str) -> Entry:
    """The entry asked for; else the main entry; else a random article."""
    if entry_path:
        return archive.get_entry_by_path(entry_path)
    if archive.has_main_entry:
        return archive.main_entry  # often a redirect: get_item() follows it
    return archive.get_random_entry()


def show(path: str, entry_path: str, query: str, prefix: str) -> None:
    with Archive(path) as archive:  # or Archive(path, offset=8, size=n)
        entry: Entry = pick_entry(archive, entry_path)
        item: Item = entry.get_item()
        data: memoryview = item.content  # zero-copy
        print(f"{entry.path} -> {item.path}: {item.mimetype}, {len(data)} bytes")

        try:
            searcher = Searcher(archive)  # share it between threads
            search: Search = searcher.search(Query().set_query(query))  # a str or a Query
        except SearchError as e:  # no full-text index
            print(f"no search: {e}")
        else:
            print(search.get_estimated_matches())
            for r in search.get_results(0, 16, include_snippets=False):
                hit: SearchResult = r
                print(hit.path, hit.title, hit.score)  # hit.snippet == ""

            def worker() -> None:
                searcher.search(query).get_results(0, 10)

            threads = [threading.Thread(target=worker) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        for s in SuggestionSearcher(archive).suggest(prefix).get_results(0, 10):
            print(s.path, s.title)

        failed: list[str] = list(archive.validate(["dirent_ptrs"]))
        print(f"libzim {get_libzim_version()}, failed checks: {failed or 'none'}")


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 4:
        print(__doc__, file=sys.stderr)
        return 2
    defaults = ["", "event loop", "pyth"]
    path, entry_path, query, prefix = argv + defaults[len(argv) - 1 :]
    try:
        show(path, entry_path, query, prefix)
    except ZimError as e:
        # args[0]: str() of a KeyError (EntryNotFoundError) adds quotes.
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
