"""The catalog's book query: libkiwix's ``Filter`` and query language over book records.

``/catalog/v2/entries``, ``/catalog/search`` and ``/search``'s ``books.filter.*`` select
books as kiwix-serve does: ``q`` through Xapian (words, not substrings; ``"phrases"``;
``title:``, ``description:``, ``name:``, ``category:``, ``lang:``, ``publisher:``,
``creator:``, ``tag:`` prefixes; ``-exclusions``; ``wild*cards``; no boolean operators,
so ``or`` is a word), ``category`` and ``lang`` as comma-separated alternatives, ``tag``
and ``notag`` (``;``-separated; hidden ``_tags`` are matched there, never by ``q``),
``name``, ``maxsize``. The index (:class:`CatalogIndex`, native: src/zimshim_catalog.cpp)
is built once per library from :class:`BookRecord` values, which are what the catalog
knows of a book, with or without its archive: a library file's book whose file is
missing (a *remote* book) is a record too.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Mapping

# The native module's private catalog index (src/catalog.c), outside its public stubs.
_native: Any = importlib.import_module("libzim._libzim")
_CatalogIndex = _native._CatalogIndex
_language_self_name = _native._language_self_name

from .library import book_name_from_path, category_from_tags

__all__ = ["BookRecord", "CatalogIndex", "index_of", "language_self_name", "remote_record"]

FILTER_PARAMS = ("q", "name", "flavour", "category", "lang", "publisher", "creator", "tag", "notag")


@dataclass(eq=False)
class BookRecord:
    """A book as the catalog lists it: the attributes :mod:`libzim.serve.opds` reads of a
    :class:`~libzim.serve.library.Book`, without an archive. ``remote``: no local file
    (its content is not served; its ``url`` is where to get it)."""

    uuid: str
    name: str
    title: str
    description: str = ""
    language: str = ""
    creator: str = ""
    publisher: str = ""
    date: str = ""
    tags: str = ""
    flavour: str = ""
    category: str = ""
    meta_name: str = ""
    article_count: int = 0
    media_count: int = 0
    size: int = 0
    url: str = ""
    file: None = None
    favicon: None = None
    illustration_sizes: tuple[int, ...] = ()
    remote: bool = True
    rendered: dict[Hashable, str] = field(default_factory=dict, repr=False)  # as Book.rendered


def _count(text: str | None) -> int:
    return int(text) if text and text.isdigit() and len(text) <= 15 else 0


def remote_record(info: Mapping[str, str]) -> BookRecord | None:
    """The record of a library file's ``<book>`` whose file is absent; None without an id."""
    if not info.get("id"):
        return None
    path = info.get("path") or info.get("url", "").rsplit("/", 1)[-1] or info["id"]
    tags = info.get("tags", "")
    name = book_name_from_path(path)
    return BookRecord(
        uuid=info["id"], name=name, title=info.get("title") or name, description=info.get("description", ""),
        language=info.get("language", ""), creator=info.get("creator", ""), publisher=info.get("publisher", ""),
        date=info.get("date", ""), tags=tags, flavour=info.get("flavour", ""),
        category=info.get("category") or category_from_tags(tags), meta_name=info.get("name", ""),
        article_count=_count(info.get("articleCount")), media_count=_count(info.get("mediaCount")),
        size=_count(info.get("size")) << 10, url=info.get("url", ""))  # kiwix-manage writes KiB


class CatalogIndex:
    """The books of a library (local books, then remote ones), indexed once.

    ``books`` are Books or BookRecords (anything with their attributes). :meth:`select`
    answers in libkiwix's order: with no condition that Xapian ranks, by id (its books'
    map); else by Xapian's relevance, then library order."""

    def __init__(self, books: Iterable[object]) -> None:
        self.books = list(books)
        self._index = _CatalogIndex()
        for i, b in enumerate(self.books):
            def g(a: str, b: object = b) -> str:
                return str(getattr(b, a, "") or "")

            self._index.add(i, g("title"), g("description"), g("language"), g("creator"), g("publisher"),
                            g("meta_name") or g("name"), g("flavour"), g("category"), g("tags"))
        self.by_id = sorted(range(len(self.books)), key=lambda i: getattr(self.books[i], "uuid", ""))

    def select(self, params: Mapping[str, str | None], remote: bool, maxsize: int | None = None) -> list[object]:
        """The books the filter ``params`` (:data:`FILTER_PARAMS`, values as given) selects;
        remote books only when ``remote`` (kiwix-serve lists them in catalog-only mode).
        ValueError for a query Xapian cannot parse."""
        values = [params.get(k) or None for k in FILTER_PARAMS]
        if any(values):
            order = self._index.query(True, *values)  # libkiwix's Filter::query(q) is partial
        else:
            order = self.by_id
        out = [self.books[i] for i in order]
        if not remote:
            out = [b for b in out if not getattr(b, "remote", False)]
        if maxsize is not None:
            out = [b for b in out if getattr(b, "size", 0) <= maxsize]
        return out


_lock = threading.Lock()


def index_of(library: object) -> CatalogIndex:
    """The library's catalog index, built on first use (a reload makes a new library,
    so a new index). Its books: the library's, then its ``remote`` records."""
    idx = getattr(library, "_catalog_index", None)
    if idx is None:
        with _lock:
            idx = getattr(library, "_catalog_index", None)
            if idx is None:
                books = list(getattr(library, "books", {}).values()) + list(getattr(library, "remote", ()))
                idx = CatalogIndex(books)
                setattr(library, "_catalog_index", idx)
    return idx


def language_self_name(code: str) -> str:
    """The language's name in itself, as kiwix writes it (ICU: "fra" is "français");
    the code when ICU does not know it."""
    return str(_language_self_name(code))
