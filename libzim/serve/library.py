"""The served library: its books by name, each a record, its archive opened on first use.

A Book is what the catalog and the pages need (read once, or from a library file,
or from the record cache of :mod:`.bookinfo`); its Archive, Searcher and
SuggestionSearcher come from the library's :class:`~libzim.serve.shelf.Shelf`,
which opens them when a request needs them and keeps a bounded number open,
shared by every worker thread (the binding's objects are safe to share; it
releases the GIL around libzim's work). Opening happens on the worker threads of
the server's pool, never on the event loop. No function here touches the network.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable

from libzim.reader import Archive, Entry
from libzim.search import Search
from libzim.suggestion import SuggestionSearcher

from .bookinfo import InfoCache, read_info
from .shelf import BookUnavailable, CacheSizes, Shelf, default_sizes

__all__ = ["Book", "BookUnavailable", "FileFacts", "Library", "file_facts", "book_name_from_path", "find_archives"]


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


@dataclass(eq=False)
class Book:
    """A book: the record of one archive, which is opened only when a request needs it.

    ``name`` is the book name in URLs (kiwix-serve's rule). From the archive's
    metadata or a library file (empty when absent): ``title``, ``description``,
    ``language``, ``creator``, ``publisher``, ``date``, ``tags``, ``flavour``.
    ``uuid`` is the book's id (the archive's UUID as hex, unless a library file
    says otherwise); ``article_count`` and ``media_count`` are libzim's counts;
    ``main_path`` is the main page's path (redirects resolved) or None;
    ``illustration_sizes`` the sizes of its square illustrations;
    ``has_fulltext_index`` whether it has a full-text index (None: not known yet,
    taken as yes until the archive is opened); ``file`` the one .zim file it is
    read from (None for split or embedded archives, which ``--downloads`` cannot
    serve). ``meta_name`` is the archive's ``Name`` (OPDS ``<name>``), ``category``
    its ``_category:`` tag, ``size`` its size in bytes; a library file may set
    these, ``url`` and a ``favicon``. ``path`` is the archive's path,
    ``archive_uuid`` the archive's own UUID (ETags: a library file may give the
    book another id), ``stamp`` the file as found (realpath, mtime, inode), which
    reloads compare and the shelf's caches are keyed by. ``complete`` is False for
    a book of a library file whose archive was never read: ``main_path``,
    ``illustration_sizes`` and ``has_fulltext_index`` are learnt on its first open
    (:meth:`ensure_complete`). ``file_says`` is True for a library file's book: its
    ``flavour`` and illustrations are the file's, as kiwix takes them, and its first
    open leaves them as they are. ``rendered`` keeps what was written from the record
    (its OPDS entry), a new dict whenever its fields change.

    :attr:`archive` and :attr:`suggester` are the shelf's (opened on first use).
    """

    name: str
    title: str
    description: str = ""
    language: str = ""
    creator: str = ""
    publisher: str = ""
    date: str = ""
    tags: str = ""
    flavour: str = ""
    uuid: str = ""
    article_count: int = 0
    media_count: int = 0
    main_path: str | None = None
    illustration_sizes: tuple[int, ...] = ()
    file: Path | None = None  # the one .zim file it is read from (None: split or embedded archives)
    meta_name: str = ""  # the archive's Name metadata (the OPDS <name>; not the URL name)
    category: str = ""
    size: int = 0  # bytes of the archive's file(s), or what a library file says
    url: str = ""  # where a library file says the book can be downloaded
    favicon: tuple[bytes, str] | None = None  # a library file's favicon (data, MIME type)
    path: Path | None = None  # the archive's path
    archive_uuid: str = ""  # the archive's own UUID (ETags: a library file may give another id)
    stamp: tuple[str, int, int] | None = None  # the file as found (realpath, mtime, inode): reloads compare it
    has_fulltext_index: bool | None = None
    complete: bool = True
    file_says: bool = False  # a library file's book: its flavour and illustrations are the file's (kiwix)
    shelf: Shelf | None = field(default=None, repr=False)
    # What was rendered from this record (OPDS entries), by what else it depends on. A change
    # of fields replaces the dict (never clears it): a rendering begun on the old fields then
    # stores into the old dict, which nobody reads any more.
    rendered: dict[Hashable, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_record(cls, name: str, path: Path, record: dict[str, Any] | None,
                    info: dict[str, str] | None = None, shelf: Shelf | None = None,
                    facts: FileFacts | None = None) -> Book:
        """The book ``name`` of the archive at ``path``: its record (:mod:`.bookinfo`; None
        when it was never read: then ``complete`` is False) and what a library file says
        (``info``: its non-empty values win; see
        :func:`libzim.serve.libraryfile.read_library_file`)."""
        rec = record or {}
        tags = str(rec.get("tags", ""))
        f = facts if facts is not None else file_facts(path)
        book = cls(
            name=name, title=str(rec.get("title") or name), description=str(rec.get("description", "")),
            language=str(rec.get("language", "")), creator=str(rec.get("creator", "")),
            publisher=str(rec.get("publisher", "")), date=str(rec.get("date", "")), tags=tags,
            flavour=str(rec.get("flavour", "")), uuid=str(rec.get("uuid", "")),
            article_count=int(rec.get("article_count", 0)), media_count=int(rec.get("media_count", 0)),
            main_path=rec.get("main_path"), illustration_sizes=tuple(rec.get("illustration_sizes", ())),
            file=f.single_file, meta_name=str(rec.get("name", "")), category=category_from_tags(tags),
            size=f.size, path=Path(path), archive_uuid=str(rec.get("uuid", "")), stamp=f.stamp,
            has_fulltext_index=rec.get("fulltext"), complete=record is not None, shelf=shelf)
        if info:
            # (a library file's _ftindex: tag is not taken: kiwix-manage 3.3.0 writes
            # _ftindex:no for archives whose index libkiwix 11 does not look for)
            book.apply(info)
        return book

    @classmethod
    def open(cls, name: str, path: Path, info: dict[str, str] | None = None) -> Book:
        """The book ``name`` of the archive at ``path``, its record read now (the archive is
        opened and closed; raises what Archive() raises). ``info``: what a library file
        says of the book (its non-empty values win over the archive's)."""
        return cls.from_record(name, path, read_info(path), info)

    def learn(self, record: dict[str, Any]) -> None:
        """Take what only the archive knows (a library file's book, opened the first time),
        and what the library file left empty."""
        for attr, key in (("description", "description"), ("language", "language"), ("creator", "creator"),
                          ("publisher", "publisher"), ("date", "date"), ("flavour", "flavour"),
                          ("meta_name", "name"), ("article_count", "article_count"),
                          ("media_count", "media_count")):
            if attr == "flavour" and self.file_says:
                continue
            if not getattr(self, attr) and record.get(key):
                setattr(self, attr, record[key])
        if not self.tags and record.get("tags"):
            self.tags = str(record["tags"])
            self.category = self.category or category_from_tags(self.tags)
        if self.title == self.name and record.get("title"):
            self.title = str(record["title"])
        self.main_path = record.get("main_path")
        if not self.file_says:
            self.illustration_sizes = tuple(record.get("illustration_sizes", ()))
        self.has_fulltext_index = bool(record.get("fulltext"))
        self.archive_uuid = str(record.get("uuid", ""))
        if not self.uuid:
            self.uuid = self.archive_uuid
        self.complete = True
        self.rendered = {}

    def ensure_complete(self) -> None:
        """Open the archive if the record lacks what only it knows (on a worker)."""
        if not self.complete:
            self.archive  # noqa: B018 - opening it completes the record

    @property
    def key(self) -> Hashable:
        """What the shelf's caches know this archive by: its file as found (a replaced
        file is another key), else its path."""
        return self.stamp if self.stamp is not None else ("path", str(self.path))

    @property
    def archive(self) -> Archive:
        """The book's open Archive, from its shelf (opened on first use; in a
        :func:`libzim._cache.lease_scope`, kept open until the scope ends). Raises
        :class:`~libzim.serve.shelf.BookUnavailable` if it cannot be opened."""
        return self._shelf().archive(self)

    @property
    def suggester(self) -> SuggestionSearcher:
        """The book's SuggestionSearcher, shared by every worker thread, made on first use."""
        return self._shelf().suggester(self)

    def _shelf(self) -> Shelf:
        if self.shelf is None:
            self.shelf = _default_shelf()
        return self.shelf

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
        if info.get("favicon") and info.get("faviconMimeType", "").startswith("image/") and len(info["favicon"]) < 1 << 20:
            try:
                self.favicon = (base64.b64decode(info["favicon"], validate=True), info["faviconMimeType"])
            except ValueError:
                pass
        self.rendered = {}  # also a copy's own (libraryfile._reused copies the fields)

    def tag_list(self) -> list[str]:
        """The tags, split at ``;`` (kiwix's format), empty ones dropped."""
        return [t for t in self.tags.split(";") if t]

    def matches(self, query: str) -> bool:
        """The OPDS catalog's ``q=``: every word of ``query`` is in the title, description,
        name, tags, creator or publisher (case-insensitive substrings; libkiwix uses Xapian)."""
        text = " ".join((self.title, self.description, self.name, self.tags, self.creator, self.publisher)).casefold()
        return all(w in text for w in query.casefold().split())


_DEFAULT: list[Shelf] = []


def _default_shelf() -> Shelf:
    """The shelf of books made outside a Library (one per process)."""
    if not _DEFAULT:
        _DEFAULT.append(Shelf())
    return _DEFAULT[0]


def category_from_tags(tags: str) -> str:
    """The value of the ``_category:`` tag (libkiwix's Book::getCategoryFromTags), or ""."""
    for t in tags.split(";"):
        if t.startswith("_category:"):
            return t[len("_category:"):]
    return ""


def file_stamp(path: Path) -> tuple[str, int, int] | None:
    """(realpath, mtime, inode) of the file, or None: a replaced file has another."""
    return file_facts(path).stamp


@dataclass(frozen=True)
class FileFacts:
    """What a book needs of its file, from one stat and one realpath: ``real`` (its
    real path, or "" when it cannot be stat'ed), ``size``, ``mtime_ns``, ``inode``,
    ``regular`` (a regular file)."""

    real: str
    size: int = 0
    mtime_ns: int = 0
    inode: int = 0
    regular: bool = False

    @property
    def stamp(self) -> tuple[str, int, int] | None:
        """(realpath, mtime, inode), or None: what reloads compare."""
        return (self.real, self.mtime_ns, self.inode) if self.real else None

    @property
    def key(self) -> tuple[str, int, int] | None:
        """(realpath, size, mtime): the record cache's key (:func:`libzim.serve.bookinfo.file_key`)."""
        return (self.real, self.size, self.mtime_ns) if self.real else None

    @property
    def single_file(self) -> Path | None:
        """The archive's file when one whole ``.zim`` file holds it (what a download serves)."""
        return Path(self.real) if self.regular and self.real.endswith(".zim") else None


def file_facts(path: str | os.PathLike[str], dirs: dict[str, str] | None = None) -> FileFacts:
    """The file's :class:`FileFacts`. ``dirs``: real paths of folders found so far (a
    library of 10,000 books in one folder resolves that folder once, not each book's
    every component: os.path.realpath lstat()s each one)."""
    try:
        st = os.stat(path)
    except OSError:
        return FileFacts("")
    absolute = os.path.abspath(path)
    if dirs is None:
        real = os.path.realpath(absolute)
    else:
        folder, base = os.path.split(absolute)
        rfolder = dirs.get(folder)
        if rfolder is None:
            rfolder = dirs[folder] = os.path.realpath(folder)
        real = os.path.join(rfolder, base)
        if os.path.islink(real):
            real = os.path.realpath(real)
    return FileFacts(real, st.st_size, st.st_mtime_ns, st.st_ino, stat.S_ISREG(st.st_mode))


def date_alias(name: str) -> str | None:
    """The book name without its ``_YYYY-MM`` end (kiwix-serve ``-z``), or None."""
    m = re.fullmatch(r"(.+)_[0-9]{4}-[0-9]{2}", name)
    return m.group(1) if m else None


def resolve(entry: Entry, limit: int = 50) -> Entry:
    """Follow redirects, bounded so a redirect loop in an archive cannot hang a worker."""
    for _ in range(limit):
        if not entry.is_redirect:
            return entry
        entry = entry.get_redirect_entry()
    raise LookupError("redirect loop")


class Library:
    """The books by name, over a :class:`~libzim.serve.shelf.Shelf` that opens their
    archives, searchers and suggestion searchers on first use, in bounded caches.

    A search being paged is kept (the shelf's ``searches``) so that the next page asks
    the same ``Search`` for more results instead of making a new one (parsed once;
    Xapian matches each requested page). ``paths``: archives and folders, each read
    once for its record (or found in ``info``, the record cache) and closed;
    ``books``: Books made already (a :class:`~libzim.serve.libraryfile.Source` makes
    them from library files); ``date_aliases``: kiwix-serve ``-z``'s date-less names
    (:meth:`get` answers them). ``shelf``: the caches (a reloaded library keeps its
    predecessor's); else one sized by ``sizes`` (default: from the open-file limit),
    with ``search_cache`` searches kept and ``searcher_cache`` books' searchers.
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]] = (), *, search_cache: int = 64,
                 searcher_cache: int | None = None, books: Iterable[Book] = (), date_aliases: bool = False,
                 shelf: Shelf | None = None, sizes: CacheSizes | None = None, info: InfoCache | None = None) -> None:
        if shelf is None:
            base = sizes or default_sizes()
            base = CacheSizes(base.archives, searcher_cache or base.searchers, base.suggesters, search_cache)
            shelf = Shelf(base, info)
        self.shelf = shelf
        self.books: dict[str, Book] = {}
        self.aliases: dict[str, Book] = {}  # -z: date-less names (the first book that has it)
        self._by_file: dict[str, Book] = {}
        self._by_uuid: dict[str, Book] = {}
        opened = (Book.from_record(book_name_from_path(p), p, shelf.info.read(p), shelf=shelf)
                  for p in find_archives(paths) if book_name_from_path(p) not in self.books)
        for book in itertools.chain(opened, books):
            if book.name in self.books:  # kiwix-serve keeps the first of two books with the same name
                continue
            book.shelf = shelf
            self.books[book.name] = book
            if book.stamp is not None:
                self._by_file[book.stamp[0]] = book
            elif book.path is not None:
                self._by_file[os.path.realpath(book.path)] = book
            self._by_uuid.setdefault(book.uuid, book)
        shelf.info.save()
        if date_aliases:
            for book in self.books.values():
                alias = date_alias(book.name)
                if alias is not None and alias not in self.books:
                    self.aliases.setdefault(alias, book)
        self.source: object = None  # what reloads it (libzim.serve.libraryfile.Source), if anything
        self.searches_run = 0  # how many queries were run (not served from the cache)

    def get(self, name: str) -> Book | None:
        """The book of this URL name, or of this date-less alias (``-z``), or None."""
        return self.books.get(name) or self.aliases.get(name)

    def by_uuid(self, uuid: str) -> Book | None:
        """The book with this id (str form), or None; of two books with one id, the first."""
        return self._by_uuid.get(uuid)

    def book_of(self, archive: Archive) -> Book | None:
        """The book a search result came from: by its file (realpath costs ~30 us:
        :meth:`search_hits` maps results by identity instead)."""
        return self._by_file.get(os.path.realpath(archive.filename))

    def searchable(self) -> list[Book]:
        """The books with a full-text index (or not known yet not to have one), in library order."""
        return [b for b in self.books.values() if b.has_fulltext_index is not False]

    def search(self, books: tuple[Book, ...], pattern: str) -> Search:
        """The (cached) Search of ``pattern`` over ``books`` (opening their archives and
        searcher as needed; raises :class:`~libzim.serve.shelf.BookUnavailable`)."""
        return self.search_with_books(books, pattern)[0]

    def search_with_books(self, books: tuple[Book, ...], pattern: str) -> tuple[Search, Callable[[Archive], Book | None]]:
        """:meth:`search` and a function giving the book of a result's archive."""
        search, by_archive, made = self.shelf.search(books, pattern)
        if made:
            self.searches_run += 1

        def book_of(archive: Archive) -> Book | None:
            found = by_archive.get(id(archive))
            if found is not None and found[0] is archive:
                return found[1]
            return self.book_of(archive)

        return search, book_of

    def close(self) -> None:
        """Close what the shelf holds open (what requests still hold, when they end)."""
        self.shelf.close()
