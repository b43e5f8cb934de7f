"""kiwix-manage's ``library.xml`` files, and building (and rebuilding) the served library.

A library file lists books (``<book id=... path=... title=... />``); a relative
``path`` is relative to the file's folder. The file is parsed with expat and a
DTD refused outright (so no entity can expand: no "billion laughs", no
external entity), within a size and a book-count bound; a value that is not a
sane number is ignored. A path may lead anywhere (kiwix-manage writes absolute
ones too), but only a file that starts as a ZIM archive does becomes a book: a
path to any other file is an invalid archive, never served (a damaged archive is
found when first opened: its pages are error pages, see :mod:`libzim.serve.shelf`).

:class:`Source` remembers where a library came from and rebuilds it: on a
reload (SIGHUP, or ``--monitorLibrary`` seeing a file change), the books whose
file is unchanged keep their open Archive, a replaced file is opened anew, a
removed book goes (what it had open is closed when the requests using it end);
requests under way keep the Book they started with. Books are records: archives
are opened on first use by the library's shelf (:mod:`libzim.serve.shelf`), which
a reloaded library keeps.
"""

from __future__ import annotations

import asyncio
import logging
import os
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .bookinfo import InfoCache, looks_like_zim
from .library import Book, Library, book_name_from_path, file_facts, find_archives
from .shelf import CacheSizes, Shelf, default_sizes

__all__ = ["LibraryFileError", "Source", "read_library_file"]

log = logging.getLogger("libzim.serve")

MAX_FILE_BYTES = 64 << 20  # a library of 100,000 books with favicons is ~60 MiB
MAX_BOOKS = 200_000


class LibraryFileError(ValueError):
    """A library file that cannot be read: its path and the defect, in one line."""


class _Refused(Exception):
    pass


def _refuse(*_: object) -> None:
    raise _Refused("a DTD or entity declaration (refused: entities could expand without end)")


def read_library_file(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The ``<book>`` elements of a kiwix-manage library file, as attribute dicts, each
    ``path`` made absolute against the file's folder; raises LibraryFileError naming the
    file and the defect (unreadable, too big, malformed, a DTD, too many books)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise LibraryFileError(f"{p}: cannot read the library file ({e.strerror or e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise LibraryFileError(f"{p}: library file larger than {MAX_FILE_BYTES >> 20} MiB")
    books: list[dict[str, str]] = []
    depth = [0]
    root_tag: list[str] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        depth[0] += 1
        if depth[0] == 1:
            root_tag.append(tag)
        elif depth[0] == 2 and tag == "book":
            if len(books) >= MAX_BOOKS:
                raise _Refused(f"more than {MAX_BOOKS} books")
            books.append(dict(attrs))

    def end(tag: str) -> None:
        depth[0] -= 1

    parser = xml.parsers.expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except _Refused as e:
        raise LibraryFileError(f"{p}: {e}") from None
    except xml.parsers.expat.ExpatError as e:
        raise LibraryFileError(f"{p}: malformed XML ({e})") from None
    if root_tag != ["library"]:
        raise LibraryFileError(f"{p}: not a kiwix library file (its root element is not <library>)")
    base = p.resolve().parent
    for b in books:
        if b.get("path"):
            b["path"] = str(base / b["path"])  # an absolute path stays as it is
    return books


@dataclass
class Source:
    """Where the served library comes from, to build it again on a reload.

    ``archives``: ZIM files and folders (``zim serve ARCHIVE...``);
    ``library_files``: kiwix-manage library files (``--library``), merged in
    order (the first book of a name wins, as kiwix-serve). ``skip_invalid``:
    an unreadable archive is logged and skipped instead of failing. A library
    file's book whose file is missing (or that has only a ``url``) is a *remote*
    book, as kiwix counts it: the library's ``remote`` records
    (:func:`libzim.serve.bookquery.remote_record`), which the catalog lists in
    catalog-only mode and counts in its languages and categories. ``date_aliases``: kiwix-serve ``-z``.
    ``search_cache``: how many searches being paged are kept (LRU) for their next pages;
    ``sizes``: the shelf's caches (default: from the open-file limit, with ``search_cache``);
    ``info``: the record cache (:class:`~libzim.serve.bookinfo.InfoCache`; default: in
    memory only, so every start reads each archive given as a path once).
    """

    archives: list[str] = field(default_factory=list)
    library_files: list[str] = field(default_factory=list)
    skip_invalid: bool = False
    date_aliases: bool = False
    search_cache: int = 64
    sizes: CacheSizes | None = None
    info: InfoCache | None = None

    def stamp(self) -> tuple[tuple[str, int, int], ...]:
        """The library files' modification times and sizes: a change means a reload."""
        out = []
        for f in self.library_files:
            try:
                st = os.stat(f)
                out.append((f, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((f, 0, -1))
        return tuple(out)

    def _entries(self, remote: list[dict[str, str]] | None = None) -> Iterable[tuple[Path, dict[str, str] | None]]:
        """The archives to open; the books without a local file go to ``remote``."""
        for path in find_archives(self.archives):
            yield path, None
        for lf in self.library_files:
            for info in read_library_file(lf):
                if not info.get("path") or not Path(info["path"]).is_file():
                    log.info("%s: %s: no local file: a remote book (listed, not served)", lf,
                             (info.get("path") or info.get("id", "?"))[:200])
                    if remote is not None:
                        remote.append(info)
                    continue
                yield Path(info["path"]), info

    def load(self, previous: Library | None = None) -> Library:
        """A new Library from the sources, its books known without opening them: an
        archive given as a path is read once for its record (unless the record cache has
        it) and closed; a library file's book takes what the file says and what the cache
        knows, its file only checked to start as a ZIM file does (4 bytes), unless the
        file lacks its title or article count (not kiwix-manage's): then it is read as a path. Books of
        ``previous`` whose file is unchanged are kept as they are, and its shelf (their
        open archives and searchers); what is open of books gone is closed. Raises
        LibraryFileError for a bad library file, or what Archive() raises for a bad
        archive (without ``skip_invalid``)."""
        shelf = previous.shelf if previous is not None else Shelf(self.sizes or _sizes(self.search_cache), self.info)
        keep: dict[tuple[str, int, int], Book] = {}
        if previous is not None:
            for b in previous.books.values():
                if b.stamp is not None:
                    keep[b.stamp] = b
        books: list[Book] = []
        names: set[str] = set()
        remote_infos: list[dict[str, str]] = []
        dirs: dict[str, str] = {}
        for path, info in self._entries(remote_infos):
            name = book_name_from_path(path)
            if name in names:
                log.warning("%s: the book name %s is taken already: only the first is served", path, name)
                continue
            try:
                facts = file_facts(path, dirs)
                key = facts.stamp
                old = keep.get(key) if key is not None else None
                if old is not None and old.name == name:
                    book = _reused(old, path, info)
                elif info is None or not (info.get("title") and info.get("articleCount")):
                    # a path, or a library file not from kiwix-manage: the archive's record
                    book = Book.from_record(name, path, shelf.info.read(path, facts.key), info, shelf=shelf,
                                            facts=facts)
                else:
                    book = Book.from_record(name, path, _known(shelf, path, facts.key), info, shelf=shelf,
                                            facts=facts)
                if info is not None:
                    _as_the_file_says(book, info)
            except Exception as e:  # noqa: BLE001 - any archive libzim cannot read
                if not self.skip_invalid:
                    raise
                log.warning("skipping the invalid archive %s: %s", path, " ".join(str(e).split())[:300])
                continue
            names.add(name)
            books.append(book)
        lib = Library(books=books, date_aliases=self.date_aliases, shelf=shelf)
        lib.source = self
        from .bookquery import remote_record  # the catalog's module; imported late: it needs the native index

        ids = {b.uuid for b in books}
        lib.remote = []  # type: ignore[attr-defined]
        for info in remote_infos:
            rec = remote_record(info)
            if rec is not None and rec.uuid not in ids:
                ids.add(rec.uuid)
                lib.remote.append(rec)  # type: ignore[attr-defined]
        if previous is not None:
            shelf.forget({b.key for b in previous.books.values()} - {b.key for b in books})
        return lib


def _as_the_file_says(book: Book, info: dict[str, str]) -> None:
    """What kiwix takes from the library file even where it says nothing (libkiwix's
    Book::updateFromXml): the flavour, and the illustration (a 48-pixel one only when
    the file gives a favicon and its MIME type; the archive's own are not listed)."""
    book.flavour = info.get("flavour", "")
    book.illustration_sizes = (48,) if info.get("favicon") and info.get("faviconMimeType") else ()
    book.file_says = True  # the first open (Book.learn) leaves these two as they are
    book.rendered = {}


def _sizes(search_cache: int) -> CacheSizes:
    d = default_sizes()
    return CacheSizes(d.archives, d.searchers, d.suggesters, search_cache)


def _known(shelf: Shelf, path: Path, key: tuple[str, int, int] | None) -> dict[str, Any] | None:
    """The cached record of a library file's archive, or None once its file was seen to
    start as a ZIM file does (the rest is learnt when it is first opened); ValueError
    for any other file, which never becomes a book."""
    rec = shelf.info.get(key)
    if rec is None and not looks_like_zim(path):
        raise ValueError(f"{path}: not a ZIM archive (no ZIM magic number)")
    return rec


def _reused(old: Book, path: Path, info: dict[str, str] | None) -> Book:
    """The same open archive; the library file's values as they are now."""
    if info is None:
        return old
    fresh = Book.__new__(Book)
    fresh.__dict__.update(old.__dict__)
    fresh.apply(info)
    return fresh


class Reloader:
    """Reloads ``server.library`` from its Source: on :meth:`request` (SIGHUP) and, when
    ``monitor``, when a library file changes (checked every ``interval`` seconds, as
    kiwix-serve does). A reload that fails keeps the old library and logs why."""

    def __init__(self, server: object, monitor: bool, interval: float = 1.0) -> None:
        self.server = server
        self.monitor = monitor
        self.interval = interval
        self.reloads = 0  # successful reloads
        self.failures = 0
        self._wanted = False
        lib = getattr(server, "library")
        self._stamp = lib.source.stamp() if isinstance(lib.source, Source) else ()

    def request(self) -> None:
        """Reload at the next check (what SIGHUP does; safe from a signal handler)."""
        self._wanted = True

    def reload_now(self) -> bool:
        """Rebuild the library now (in the calling thread); True when it was replaced."""
        server = self.server
        old = getattr(server, "library")
        source = old.source
        if not isinstance(source, Source):
            return False
        self._stamp = source.stamp()
        try:
            new = source.load(old)
        except Exception as e:  # noqa: BLE001 - keep serving the old library, say why
            self.failures += 1
            log.error("the library was not reloaded (the old one is still served): %s", " ".join(str(e).split())[:500])
            return False
        setattr(server, "library", new)  # one assignment: a request sees the old or the new, whole
        self.reloads += 1
        log.info("library reloaded: %d book(s)", len(new.books))
        return True

    def due(self) -> bool:
        """Whether a reload was asked for, or (monitoring) a library file changed."""
        if self._wanted:
            self._wanted = False
            return True
        lib = getattr(self.server, "library")
        return self.monitor and isinstance(lib.source, Source) and lib.source.stamp() != self._stamp

    async def run(self) -> None:
        """Check every ``interval`` seconds until cancelled; reload in a thread (opening
        archives must not stop the event loop)."""
        while True:
            await asyncio.sleep(self.interval)
            if self.due():
                await asyncio.to_thread(self.reload_now)
