"""The served library: one shared Archive, Searcher and SuggestionSearcher per book.

Everything here is called from the worker threads of the server's pool: the
binding releases the GIL around libzim's work, and its Archive, Searcher and
SuggestionSearcher objects are safe to share between threads, so every worker
uses the same objects (one file descriptor set, one cluster cache per book).
No function here touches the network; a slow client only holds the event loop's
buffers, never a worker.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import unicodedata
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from libzim.reader import Archive, Entry
from libzim.search import Search, Searcher
from libzim.suggestion import SuggestionSearcher

__all__ = ["Book", "Library", "book_name_from_path", "find_archives"]


def book_name_from_path(path: str | os.PathLike[str]) -> str:
    """The name kiwix-serve (libkiwix 11, Book::getHumanReadableIdFromPath) gives
    a book: the file name without directory and ``.zim*`` suffix, accents
    removed, spaces as ``_``, ``+`` as ``plus``."""
    # A file name that is not UTF-8 (surrogate escapes) gets U+FFFD: names go into URLs.
    name = Path(path).name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    name = "".join(c for c in unicodedata.normalize("NFD", name) if not unicodedata.combining(c))
    name = re.sub(r"\.zim[a-z]*$", "", name)
    return name.replace(" ", "_").replace("+", "plus")


def find_archives(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given; folders give the ``*.zim`` files they hold (recursively), sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.zim") if q.is_file()))
        else:
            out.append(p)
    return out


def _meta(archive: Archive, key: str) -> str:
    try:
        return bytes(archive.get_metadata(key)).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - missing or unreadable metadata is just absent
        return ""


@dataclass(eq=False)
class Book:
    """One archive and what the pages show about it (read once, at start).

    ``name`` is the book name in URLs (kiwix-serve's rule); ``archive`` the
    shared Archive. From the archive's metadata (empty when absent):
    ``title``, ``description``, ``language``, ``creator``, ``publisher``,
    ``date``, ``tags``, ``flavour``. ``uuid`` is the archive's UUID as hex;
    ``article_count`` and ``media_count`` are libzim's counts; ``main_path``
    is the main page's path (redirects resolved) or None;
    ``illustration_sizes`` the sizes of its square illustrations; ``file``
    the one .zim file it was opened from (None for split or embedded
    archives, which ``--downloads`` cannot serve). ``meta_name`` is the
    archive's ``Name`` (OPDS ``<name>``), ``category`` its ``_category:`` tag,
    ``size`` its size in bytes; a library file may set these, ``url`` and a
    ``favicon``.
    """

    name: str
    archive: Archive
    title: str
    description: str
    language: str
    creator: str
    publisher: str
    date: str
    tags: str
    flavour: str
    uuid: str
    article_count: int
    media_count: int
    main_path: str | None
    illustration_sizes: tuple[int, ...]
    file: Path | None = None  # the one .zim file it was opened from (None: split or embedded archives)
    meta_name: str = ""  # the archive's Name metadata (the OPDS <name>; not the URL name)
    category: str = ""
    size: int = 0  # bytes of the archive's file(s), or what a library file says
    url: str = ""  # where a library file says the book can be downloaded
    favicon: tuple[bytes, str] | None = None  # a library file's favicon (data, MIME type)
    path: Path | None = None  # the path it was opened from
    archive_uuid: str = ""  # the archive's own UUID (ETags: a library file may give another id)
    stamp: tuple[str, int, int] | None = None  # the file as opened (realpath, mtime, inode): reloads compare it
    _suggester: SuggestionSearcher | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, name: str, path: Path, info: dict[str, str] | None = None) -> Book:
        """Open the archive at path as the book name, reading its metadata,
        main path and illustration sizes once; raises what Archive() raises.
        ``info``: what a library file says of the book (its non-empty values
        win over the archive's; see :func:`libzim.serve.libraryfile.read_library_file`)."""
        a = Archive(path)
        main: str | None = None
        if a.has_main_entry:
            entry = a.main_entry
            main = resolve(entry).path if entry.is_redirect else entry.path
        try:
            # Deprecated by python-libzim for get_illustration_infos() (libzim 9.3),
            # which the libzims here lack: the only way to list them.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                sizes = tuple(sorted(a.get_illustration_sizes()))
        except Exception:  # noqa: BLE001 - no illustration listed is what the pages show then
            sizes = ()
        tags = _meta(a, "Tags")
        book = cls(
            name=name, archive=a, title=_meta(a, "Title") or name,
            description=_meta(a, "Description"), language=_meta(a, "Language"),
            creator=_meta(a, "Creator"), publisher=_meta(a, "Publisher"), date=_meta(a, "Date"),
            tags=tags, flavour=_meta(a, "Flavour"), uuid=str(a.uuid),
            article_count=a.article_count, media_count=a.media_count, main_path=main,
            illustration_sizes=sizes, file=_single_file(path), meta_name=_meta(a, "Name"),
            category=category_from_tags(tags), size=_file_size(path), path=Path(path), archive_uuid=str(a.uuid),
            stamp=file_stamp(path),
        )
        if info:
            book.apply(info)
        return book

    def apply(self, info: dict[str, str]) -> None:
        """Take what a library file says (non-empty values only; counts as numbers)."""
        for attr, key in (("uuid", "id"), ("title", "title"), ("description", "description"),
                          ("language", "language"), ("creator", "creator"), ("publisher", "publisher"),
                          ("date", "date"), ("meta_name", "name"), ("flavour", "flavour"), ("url", "url")):
            if info.get(key):
                setattr(self, attr, info[key])
        if info.get("tags"):
            self.tags = info["tags"]
            self.category = category_from_tags(self.tags)
        if info.get("category"):
            self.category = info["category"]
        for attr, key in (("article_count", "articleCount"), ("media_count", "mediaCount")):
            if info.get(key, "").isdigit() and len(info[key]) <= 15:
                setattr(self, attr, int(info[key]))
        if info.get("size", "").isdigit() and len(info["size"]) <= 15:
            self.size = int(info["size"]) << 10  # kiwix-manage writes KiB

    def tag_list(self) -> list[str]:
        """The tags, split at ``;`` (kiwix's format), empty ones dropped."""
        return [t for t in self.tags.split(";") if t]

    def matches(self, query: str) -> bool:
        """The OPDS catalog's ``q=``: every word of ``query`` is in the title, description,
        name, tags, creator or publisher (case-insensitive substrings; libkiwix uses Xapian)."""
        text = " ".join((self.title, self.description, self.name, self.tags, self.creator, self.publisher)).casefold()
        return all(w in text for w in query.casefold().split())

    @property
    def suggester(self) -> SuggestionSearcher:
        """The book's one SuggestionSearcher, shared by every worker thread,
        made on first use (under a lock, so only one is made)."""
        with self._lock:
            if self._suggester is None:
                self._suggester = SuggestionSearcher(self.archive)
            return self._suggester


def category_from_tags(tags: str) -> str:
    """The value of the ``_category:`` tag (libkiwix's Book::getCategoryFromTags), or ""."""
    for t in tags.split(";"):
        if t.startswith("_category:"):
            return t[len("_category:"):]
    return ""


def file_stamp(path: Path) -> tuple[str, int, int] | None:
    """(realpath, mtime, inode) of the file, or None: a replaced file has another."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_mtime_ns, st.st_ino)


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def date_alias(name: str) -> str | None:
    """The book name without its ``_YYYY-MM`` end (kiwix-serve ``-z``), or None."""
    m = re.fullmatch(r"(.+)_[0-9]{4}-[0-9]{2}", name)
    return m.group(1) if m else None


def _single_file(path: Path) -> Path | None:
    """The archive's file when one whole ``.zim`` file holds it (what a download serves)."""
    p = Path(os.path.realpath(path))
    return p if p.suffix == ".zim" and p.is_file() else None


def resolve(entry: Entry, limit: int = 50) -> Entry:
    """Follow redirects, bounded so a redirect loop in an archive cannot hang a worker."""
    for _ in range(limit):
        if not entry.is_redirect:
            return entry
        entry = entry.get_redirect_entry()
    raise LookupError("redirect loop")


class _LRU:
    """A small thread-safe LRU map (bounded: old entries are dropped)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._d: OrderedDict[object, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> object | None:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: object, value: object) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d)


class Library:
    """The books by name, and bounded caches of searchers and running searches.

    A search being paged is kept (LRU, ``search_cache`` entries) so that the next
    page asks the same ``Search`` for more results instead of making a new one
    (parsed once; Xapian matches each requested page); searchers over several
    books are kept the same way. ``paths``: archives and folders to open;
    ``books``: Books opened already (a :class:`~libzim.serve.libraryfile.Source`
    builds them from library files); ``date_aliases``: kiwix-serve ``-z``'s
    date-less names (:meth:`get` answers them).
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]] = (), *, search_cache: int = 64,
                 searcher_cache: int = 16, books: Iterable[Book] = (), date_aliases: bool = False) -> None:
        self.books: dict[str, Book] = {}
        self.aliases: dict[str, Book] = {}  # -z: date-less names (the first book that has it)
        self._by_file: dict[str, Book] = {}
        self._by_uuid: dict[str, Book] = {}
        self._by_archive: dict[int, Book] = {}  # id(Archive): the archive a SearchResult names is the book's own
        opened = (Book.open(book_name_from_path(p), p) for p in find_archives(paths)
                  if book_name_from_path(p) not in self.books)
        for book in itertools.chain(opened, books):
            if book.name in self.books:  # kiwix-serve keeps the first of two books with the same name
                continue
            self.books[book.name] = book
            self._by_file[os.path.realpath(book.archive.filename)] = book
            self._by_uuid.setdefault(book.uuid, book)
            self._by_archive[id(book.archive)] = book
        if date_aliases:
            for book in self.books.values():
                alias = date_alias(book.name)
                if alias is not None and alias not in self.books:
                    self.aliases.setdefault(alias, book)
        self.source: object = None  # what reloads it (libzim.serve.libraryfile.Source), if anything
        self._searchers = _LRU(searcher_cache)
        self._searches = _LRU(search_cache)
        self.searches_run = 0  # how many queries were run (not served from the cache)

    def get(self, name: str) -> Book | None:
        """The book of this URL name, or of this date-less alias (``-z``), or None."""
        return self.books.get(name) or self.aliases.get(name)

    def by_uuid(self, uuid: str) -> Book | None:
        """The book whose archive has this UUID (str form), or None; of two
        books with one UUID, the first."""
        return self._by_uuid.get(uuid)

    def book_of(self, archive: Archive) -> Book | None:
        """The book a search result came from: by identity (a result names the Archive its
        Searcher was made with, ours), else by file (realpath costs ~30 us: not per hit)."""
        book = self._by_archive.get(id(archive))
        if book is not None and book.archive is archive:
            return book
        return self._by_file.get(os.path.realpath(archive.filename))

    def searchable(self) -> list[Book]:
        """The books whose archive has a full-text index, in library order."""
        return [b for b in self.books.values() if b.archive.has_fulltext_index]

    def search(self, books: tuple[Book, ...], pattern: str) -> Search:
        """The (cached) Search of ``pattern`` over ``books``."""
        key = (tuple(b.name for b in books), pattern)
        found = self._searches.get(key)
        if isinstance(found, Search):
            return found
        skey = key[0]
        searcher = self._searchers.get(skey)
        if not isinstance(searcher, Searcher):
            searcher = Searcher([b.archive for b in books])
            self._searchers.put(skey, searcher)
        search = searcher.search(pattern)
        self._searches.put(key, search)
        self.searches_run += 1
        return search

    def close(self) -> None:
        """Close every book's Archive (searches still held keep their files
        open until dropped)."""
        for book in self.books.values():
            book.archive.close()
