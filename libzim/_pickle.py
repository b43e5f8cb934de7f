"""Pickling for the reader, search and suggestion types, and the per-process
cache of archives opened by unpickling.

Nothing here copies content: an Archive travels as its file name (plus offset
and size when embedded), an Entry or Item as its archive, index and path, a
result as its fields and its archive.  The receiving process reopens the file
through ``open_cached``, which keeps one open Archive per file, so unpickling a
thousand results of one archive opens it once.

``open_cached`` shares one Archive object between everything unpickled from
that file in this process.  ``close()`` on it therefore closes it for every
holder; the next unpickling sees it closed and opens a fresh one (the cache
never hands out a closed Archive, and never closes one itself).  An Archive
opened directly with ``Archive(path)`` is never cached.

The C types' ``__reduce__`` calls ``reduce`` here, so the reconstructors stay
in Python; the C side only exposes the state that Python cannot read otherwise (``Archive._range``,
``Entry._archive``, ``Item._archive``, ``Query._georange``, ``Search._state``,
the results' ``_state`` and the result types' ``_restore``).
"""

from __future__ import annotations

import glob
import os
import socket
import threading
from uuid import UUID
from typing import Any, Callable, Literal, Optional

from libzim import ArchiveError, ZimError
from libzim.reader import Archive, Entry, Item
from libzim.search import Query, Search, Searcher, SearchResult, SearchResultSet
from libzim.suggestion import (
    SuggestionResult,
    SuggestionResultSet,
    SuggestionSearch,
    SuggestionSearcher,
)

__all__ = ["open_cached", "drop_cached", "cached_count"]

Stamp = tuple[tuple[int, int], ...]
Key = tuple[str, Optional[int], Optional[int]]


class _Slot:
    __slots__ = ("lock", "stamp", "archive")

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held while this file opens, not for other files
        self.stamp: Stamp = ()
        self.archive: Optional[Archive] = None


_lock = threading.Lock()
_cache: dict[Key, _Slot] = {}


def _reset_after_fork() -> None:
    # A parent thread may have held a lock at fork time, and libzim's own
    # mutexes inside the inherited handles may be held too: the child starts
    # with an empty cache and opens its own handles (inherited Archive objects
    # stay valid for whoever references them).
    global _lock, _cache
    _lock = threading.Lock()
    _cache = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _stamp(path: str) -> Stamp:
    """(size, mtime_ns) of the file, or of each part of a split archive."""
    try:
        st = os.stat(path)
        return ((st.st_size, st.st_mtime_ns),)
    except FileNotFoundError:
        parts = sorted(glob.glob(glob.escape(path) + "[a-z][a-z]"))
        if not parts:
            raise ArchiveError(
                f"{path}: cannot open the unpickled Archive: no such file on host "
                f"{socket.gethostname()}"
            ) from None
        stamps = []
        for p in parts:
            st = os.stat(p)
            stamps.append((st.st_size, st.st_mtime_ns))
        return tuple(stamps)


def open_cached(path: str, offset: Optional[int] = None, size: Optional[int] = None) -> Archive:
    """The process's open Archive for this file, opened now if it has none,
    if it was closed, or if the file's size or mtime changed since."""
    key = (path, offset, size)
    stamp = _stamp(path)
    with _lock:
        slot = _cache.get(key)
        if slot is None:
            slot = _cache[key] = _Slot()
    with slot.lock:
        a = slot.archive
        if a is None or a.closed or slot.stamp != stamp:
            if offset is None and size is None:
                a = Archive(path)
            else:
                a = Archive(path, offset=offset, size=size)
            slot.archive, slot.stamp = a, stamp
        return a


def drop_cached(path: Optional[str] = None) -> int:
    """Forget (without closing) the cached archives of path, or all; returns
    how many were dropped.  They close when their last holder lets go."""
    with _lock:
        keys = [k for k in _cache if path is None or k[0] == path]
        for k in keys:
            del _cache[k]
    return len(keys)


def cached_count() -> int:
    with _lock:
        return sum(1 for s in _cache.values() if s.archive is not None and not s.archive.closed)


# ---- reconstructors (module-level so that pickle finds them by name) ----

def _archive(path: str, offset: Optional[int], size: Optional[int],
             uuid: Optional[bytes] = None) -> Archive:
    a = open_cached(path, offset, size)
    # Another host, or a replaced file, may hold another archive at that path:
    # its entries and results would silently be other pages.
    if uuid is not None and a.uuid.bytes != uuid:
        raise ArchiveError(
            f"{path}: not the archive that was pickled (UUID {a.uuid} here, "
            f"{UUID(bytes=uuid)} where it was pickled)"
        )
    return a


def _check_path(archive: Archive, index: int, found: str, path: str) -> None:
    if found != path:
        raise ArchiveError(
            f"{archive.filename}: entry {index} is {found!r} here, not {path!r}: "
            "not the file that was pickled"
        )


def _entry(archive: Archive, index: int, path: str) -> Entry:
    # By index: internal entries (metadata, listings) of namespace-less
    # archives cannot be found again by their path.
    e = archive._get_entry_by_id(index)
    _check_path(archive, index, e.path, path)
    return e


def _item(archive: Archive, index: int, path: str) -> Item:
    item = archive._get_entry_by_id(index).get_item()
    _check_path(archive, index, item.path, path)
    return item


def _query(text: str, georange: Optional[tuple[float, float, float]]) -> Query:
    q = Query(text)
    if georange is not None:
        q.set_georange(*georange)
    return q


def _searcher(archives: tuple[Archive, ...]) -> Searcher:
    return Searcher(list(archives))


def _suggestion_searcher(archive: Archive) -> SuggestionSearcher:
    return SuggestionSearcher(archive)


def _search(searcher: Searcher, text: str, georange: Optional[tuple[float, float, float]]) -> Search:
    return searcher.search(_query(text, georange))


def _suggestion_search(searcher: SuggestionSearcher, text: str,
                       mode: Literal["index", "titles", "auto"] = "index") -> SuggestionSearch:
    return searcher.suggest(text, mode=mode)


# ---- reducers -------------------------------------------------------------

def _reduce_archive(self: Archive) -> tuple[Any, ...]:
    # Absolute, so that a worker with another working directory finds it.
    path = os.path.abspath(os.fspath(self.filename))
    rng = self._range
    offset, size = rng if rng is not None else (None, None)
    try:
        uuid: Optional[bytes] = self.uuid.bytes
    except ZimError:  # closed: it still pickles, unchecked
        uuid = None
    return (_archive, (path, offset, size, uuid))


def _reduce_entry(self: Entry) -> tuple[Any, ...]:
    return (_entry, (self._archive, self._index, self.path))


def _reduce_item(self: Item) -> tuple[Any, ...]:
    return (_item, (self._archive, self._index, self.path))


def _reduce_query(self: Query) -> tuple[Any, ...]:
    return (_query, (self.query, self._georange))


def _reduce_searcher(self: Searcher) -> tuple[Any, ...]:
    return (_searcher, (tuple(self.archives),))


def _reduce_suggestion_searcher(self: SuggestionSearcher) -> tuple[Any, ...]:
    return (_suggestion_searcher, (self.archives[0],))


def _reduce_search(self: Search) -> tuple[Any, ...]:
    searcher, text, georange = self._state
    return (_search, (searcher, text, georange))


def _reduce_suggestion_search(self: SuggestionSearch) -> tuple[Any, ...]:
    searcher, text, mode = self._state
    # python-libzim's own results (None) pickle as before.
    return (_suggestion_search, (searcher, text) if mode is None else (searcher, text, mode))


def _reduce_result(self: Any) -> tuple[Any, ...]:
    # The archive is pickled once per pickle however many results share it.
    return (type(self)._restore, self._state)


def _reduce_result_set(self: Any) -> tuple[Any, ...]:
    return (type(self)._restore, (tuple(self),))


_REDUCERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    Archive: _reduce_archive,
    Entry: _reduce_entry,
    Item: _reduce_item,
    Query: _reduce_query,
    Searcher: _reduce_searcher,
    SuggestionSearcher: _reduce_suggestion_searcher,
    Search: _reduce_search,
    SuggestionSearch: _reduce_suggestion_search,
    SearchResult: _reduce_result,
    SuggestionResult: _reduce_result,
    SearchResultSet: _reduce_result_set,
    SuggestionResultSet: _reduce_result_set,
}



def reduce(obj: Any) -> tuple[Any, ...]:
    """The __reduce__ of every picklable type (the C types call it), so that
    subclasses and picklers with their own dispatch table are covered."""
    for tp in type(obj).__mro__:
        fn = _REDUCERS.get(tp)
        if fn is not None:
            return fn(obj)
    raise TypeError(f"cannot pickle {type(obj).__name__!r} object")

