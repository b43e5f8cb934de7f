"""The archives an MCP server may reach: opened once, shared by every tool call.

Only the archives given at start (files, or the ``*.zim`` files of given folders)
are reachable, by book name (``zim serve``'s names, kiwix-serve's rule). Every
``path`` a client sends is looked up as an entry path inside one of them, never
as a file: there is no file-system access after start.
"""

from __future__ import annotations

import itertools

import os
from typing import Iterable, Sequence
from urllib.parse import quote

from libzim.reader import Entry
from libzim.serve.library import Book, Library, resolve

__all__ = ["Catalogue", "ToolInputError", "check_text", "MAX_QUERY_CHARS"]

MAX_QUERY_CHARS = 1000  # a query or path longer than this is refused
MAX_PATH_CHARS = 4096


class ToolInputError(ValueError):
    """A tool call's arguments cannot be served (unknown archive, no such entry,
    a value out of range): the message is what the client sees, on one line."""


def check_text(name: str, value: str, limit: int = MAX_QUERY_CHARS, *, empty: bool = False) -> str:
    """``value`` if it is text a lookup can take, else ToolInputError naming ``name``:
    not longer than ``limit`` characters, valid UTF-8 (no lone surrogates), no NUL,
    not blank unless ``empty``."""
    if not isinstance(value, str):
        raise ToolInputError(f"{name} must be a string")
    if len(value) > limit:
        raise ToolInputError(f"{name} is longer than {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolInputError(f"{name} is not valid UTF-8 text") from None
    if "\0" in value:
        raise ToolInputError(f"{name} holds a NUL character")
    if not empty and not value.strip():
        raise ToolInputError(f"{name} is empty")
    return value


def check_int(name: str, value: int, low: int, high: int) -> int:
    """``value`` if ``low <= value <= high``, else ToolInputError saying the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"{name} must be an integer")
    if not low <= value <= high:
        raise ToolInputError(f"{name} must be between {low} and {high}, not {value}")
    return value


class Catalogue:
    """The books an MCP server serves (a ``libzim.serve.library.Library``) and how
    hits and articles are cited: ``BASE_URL/content/BOOK/PATH`` on a running
    ``zim serve`` when ``base_url`` is given, else ``zim://BOOK/PATH``."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]] | Library, *, base_url: str | None = None) -> None:
        self.library = paths if isinstance(paths, Library) else Library(paths)
        self.base_url = base_url.rstrip("/") if base_url else None

    @property
    def books(self) -> dict[str, Book]:
        """The books by name, in the order given."""
        return self.library.books

    def book(self, name: str) -> Book:
        """The book called ``name``; ToolInputError listing the names when there is none."""
        check_text("archive", name, 512)
        book = self.library.books.get(name)
        if book is None:
            shown = list(itertools.islice(self.library.books, 20))
            names = ", ".join(shown) or "none"
            if len(self.library.books) > len(shown):
                names += f", ... {len(self.library.books)} in all: see the archives tool"
            raise ToolInputError(f"no archive named {name!r} (archives: {names})")
        return book

    def select(self, names: Sequence[str] | None, *, searchable: bool = False) -> tuple[Book, ...]:
        """The named books (all when ``names`` is None or empty), each once, in
        library order; with ``searchable``, refuses a named book without a
        full-text index and leaves such books out of "all"."""
        if names is not None and not isinstance(names, (list, tuple)):
            raise ToolInputError("archives must be a list of archive names")
        if names:
            if len(names) > len(self.library.books) + 8:
                raise ToolInputError("too many archive names")
            wanted = {self.book(n).name for n in names}
            books = tuple(b for b in self.library.books.values() if b.name in wanted)
            if searchable:
                for b in books:
                    if b.has_fulltext_index is False:
                        raise ToolInputError(f"archive {b.name!r} has no full-text index: use suggest for titles")
            return books
        books = tuple(self.library.books.values())
        if searchable:
            books = tuple(b for b in books if b.has_fulltext_index is not False)
            if not books:
                raise ToolInputError("no archive has a full-text index: use suggest for titles")
        return books

    def entry(self, book: Book, path: str) -> tuple[Entry, str | None]:
        """The entry at ``path`` in ``book`` (else the one titled ``path``), redirects
        followed, and the path it was redirected from (None when not a redirect);
        ToolInputError when there is none."""
        check_text("path", path, MAX_PATH_CHARS)
        archive = book.archive
        path = path.lstrip("/")
        try:
            entry = archive.get_entry_by_path(path)
        except (KeyError, ValueError):
            try:
                entry = archive.get_entry_by_title(path)
            except (KeyError, ValueError):
                raise ToolInputError(f"no entry {path!r} in archive {book.name!r}: "
                                     "find paths with search or suggest") from None
        if not entry.is_redirect:
            return entry, None
        try:
            return resolve(entry), entry.path
        except LookupError:
            raise ToolInputError(f"{path!r} in archive {book.name!r} is a redirect loop") from None

    def cite(self, book: Book, path: str) -> str:
        """The citation of ``path`` in ``book``: its URL on ``base_url``, else a ``zim://`` URI."""
        where = f"{quote(book.name, safe='')}/{quote(path, safe='/')}"
        return f"{self.base_url}/content/{where}" if self.base_url else f"zim://{where}"

    def close(self) -> None:
        """Close every archive."""
        self.library.close()
