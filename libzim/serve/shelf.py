"""The open side of a library: archives, searchers and suggestion searchers, opened on
first use and kept in bounded LRU caches (:class:`libzim._cache.LRUCache`).

Books (:class:`libzim.serve.library.Book`) are records; a :class:`Shelf` opens what
a request needs of them. The caches are sized from the process's open-file limit
(:func:`default_sizes`), so a library of any size fits it: an open archive holds
two file descriptors (its file, and the native copy libzim's lookups run on), a
searcher and a suggestion searcher one more each (Xapian's database), and an
evicted archive's descriptors stay open while a searcher made from it lives.
Every job of the server's worker pool runs in a :func:`~libzim._cache.lease_scope`,
so an archive evicted during a request is closed when the request ends.

A book whose archive is gone or damaged when first opened raises
:class:`BookUnavailable` (the server answers with an error page) and is logged
once, never failing the server. One Shelf serves a library and every library it
is reloaded into: an unchanged book keeps its open archive and searchers.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Hashable

from libzim._cache import LRUCache, open_file_limit
from libzim.reader import Archive
from libzim.search import Search, Searcher
from libzim.suggestion import SuggestionSearcher

from .bookinfo import InfoCache, file_key, info_of

if TYPE_CHECKING:
    from .library import Book

__all__ = ["BookUnavailable", "CacheSizes", "Shelf", "default_sizes", "open_file_limit"]

log = logging.getLogger("libzim.serve")

# What share of RLIMIT_NOFILE the caches may use at worst: archives 2 descriptors
# each (1/8 of the limit as entries: 1/4 of it), searchers and suggestion searchers
# up to 3 each with their archive's (1/32 each: 3/16 of it together); 7/16 in all,
# the rest for connections, the interpreter's own files and the cache file.
ARCHIVE_SHARE, SEARCHER_SHARE, SUGGESTER_SHARE = 8, 32, 32
# Above these, memory rather than descriptors is what an open archive costs.
MAX_ARCHIVES, MAX_SEARCHERS, MAX_SUGGESTERS = 2048, 512, 512
MIN_SIZE = 4


@dataclass(frozen=True)
class CacheSizes:
    """How many archives, searchers (counted in books: a searcher over 5 books weighs 5)
    and suggestion searchers are kept open; ``searches``: searches being paged."""

    archives: int
    searchers: int
    suggesters: int
    searches: int = 64


def default_sizes(nofile: int | None = None) -> CacheSizes:
    """The caches' sizes for an open-file limit ``nofile`` (the process's by default):
    at 1,024, 128 archives, 32 books' searchers, 32 suggestion searchers (at most
    ~448 descriptors); at 256, 32 / 8 / 8."""
    n = open_file_limit() if nofile is None else nofile
    return CacheSizes(archives=min(MAX_ARCHIVES, max(MIN_SIZE, n // ARCHIVE_SHARE)),
                      searchers=min(MAX_SEARCHERS, max(MIN_SIZE, n // SEARCHER_SHARE)),
                      suggesters=min(MAX_SUGGESTERS, max(MIN_SIZE, n // SUGGESTER_SHARE)))


class BookUnavailable(LookupError):
    """A book whose archive cannot be opened (``status``: 404 gone, 500 damaged) or
    cannot serve what was asked (a search over more books than the searcher cache
    holds: 400; no full-text index: 404)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _SearcherEntry:
    __slots__ = ("key", "searcher", "by_archive")

    def __init__(self, key: Hashable, searcher: Searcher, by_archive: dict[int, tuple[Archive, Book]]) -> None:
        self.key = key
        self.searcher = searcher
        self.by_archive = by_archive  # id(Archive) -> (Archive, Book): whose a result is


class Shelf:
    """The caches of one server (shared by its reloaded libraries); ``sizes`` default to
    :func:`default_sizes`; ``info``: where records learnt on first open are kept."""

    def __init__(self, sizes: CacheSizes | None = None, info: InfoCache | None = None) -> None:
        self.sizes = sizes or default_sizes()
        self.info = info if info is not None else InfoCache(None)
        self.archives: LRUCache[Hashable, Archive] = LRUCache(self.sizes.archives, self._close_archive, "archives")
        self.searchers: LRUCache[Hashable, _SearcherEntry] = LRUCache(
            self.sizes.searchers, self._drop_searcher, "searchers")
        self.suggesters: LRUCache[Hashable, SuggestionSearcher] = LRUCache(self.sizes.suggesters, None,
                                                                          "suggestion searchers")
        self.searches: LRUCache[Hashable, Search] = LRUCache(self.sizes.searches, None, "searches")
        self._failed: dict[Hashable, str] = {}  # books whose open failed, logged once (bounded below)
        self._lock = threading.Lock()

    # -- archives ---------------------------------------------------------------

    def archive(self, book: Book) -> Archive:
        """The book's open Archive (opened on first use; leased in the current scope)."""
        return self.archives.get(book.key, lambda: self._open(book))

    def _open(self, book: Book) -> Archive:
        if book.path is None:
            raise BookUnavailable(404, f"{book.name}: no archive file")
        try:
            a = Archive(book.path)
        except Exception as e:  # noqa: BLE001 - any archive libzim cannot open is this book's error page
            gone = not os.path.exists(book.path)
            why = "its file is gone" if gone else " ".join(str(e).split())[:300]
            self._log_once(book, f"{book.name}: cannot open {book.path}: {why}")
            raise BookUnavailable(404 if gone else 500, f"The archive of {book.name} cannot be opened"
                                  + (" (its file is gone)." if gone else " (it is damaged or unreadable).")) from None
        if not book.complete:
            self._complete(book, a)
        with self._lock:
            self._failed.pop(book.key, None)
        return a

    def _complete(self, book: Book, a: Archive) -> None:
        """What a library file did not say, learnt from the open archive (and cached)."""
        try:
            rec = info_of(a)
        except Exception:  # noqa: BLE001 - the archive serves what it can; its record stays as it was
            return
        key = file_key(book.path) if book.path is not None else None
        self.info.put(key, rec)
        book.learn(rec)

    def _log_once(self, book: Book, line: str) -> None:
        with self._lock:
            if self._failed.get(book.key) == line:
                return
            if len(self._failed) > 10_000:
                self._failed.clear()
            self._failed[book.key] = line
        log.error("%s", line)

    @staticmethod
    def _close_archive(a: Archive) -> None:
        a.close()  # a searcher made from it keeps its own handle: it goes when the searcher does

    # -- searchers ----------------------------------------------------------------

    def suggester(self, book: Book) -> SuggestionSearcher:
        """The book's SuggestionSearcher (made on first use; leased in the current scope)."""
        return self.suggesters.get(book.key, lambda: SuggestionSearcher(self.archive(book)))

    def _searcher(self, books: tuple[Book, ...]) -> _SearcherEntry:
        if len(books) > self.searchers.capacity:
            raise BookUnavailable(400, f"A search may cover at most {self.searchers.capacity} book(s) here "
                                       f"(--searcher-cache); it asked for {len(books)}.")
        key = tuple(b.key for b in books)

        def make() -> _SearcherEntry:
            archives = []
            by_archive: dict[int, tuple[Archive, Book]] = {}
            for b in books:
                a = self.archive(b)
                if not a.has_fulltext_index:
                    raise BookUnavailable(404, f"The full-text search is not available for {b.name}")
                archives.append(a)
                by_archive[id(a)] = (a, b)
            return _SearcherEntry(key, Searcher(archives), by_archive)

        return self.searchers.get(key, make, weight=len(books))

    def _drop_searcher(self, entry: _SearcherEntry) -> None:
        """An evicted searcher takes its searches being paged with it (they hold its files)."""
        self.searches.discard_if(lambda k: k[0] == entry.key)  # type: ignore[index]

    def search(self, books: tuple[Book, ...], pattern: str) -> tuple[Search, dict[int, tuple[Archive, Book]], bool]:
        """The (cached) Search of ``pattern`` over ``books``, whose result archives map
        to books by id, and whether it was made now."""
        entry = self._searcher(books)
        made = []

        def run() -> Search:
            made.append(True)
            return entry.searcher.search(pattern)

        search = self.searches.get((entry.key, pattern), run)
        return search, entry.by_archive, bool(made)

    # -- the rest -------------------------------------------------------------------

    def forget(self, keys: set[Hashable]) -> None:
        """Evict what is open of books no longer served (closed when their requests end)."""
        if not keys:
            return
        self.archives.discard_if(lambda k: k in keys)
        self.suggesters.discard_if(lambda k: k in keys)
        self.searchers.discard_if(lambda k: isinstance(k, tuple) and any(x in keys for x in k))

    def stats(self) -> dict[str, int]:
        """How many of each are open, and the archive cache's counters."""
        return {"archives": len(self.archives), "searchers": len(self.searchers),
                "suggesters": len(self.suggesters), "searches": len(self.searches),
                "archives_opened": self.archives.opened, "archives_evicted": self.archives.evicted}

    def close(self) -> None:
        """Close everything not leased (leased ones when their requests end); save the records."""
        self.searches.clear()
        self.searchers.clear()
        self.suggesters.clear()
        self.archives.clear()
        self.info.save()
