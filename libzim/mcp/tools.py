"""The MCP tools as plain functions over a Catalogue: JSON text in, JSON text out.

Nothing here imports the MCP SDK (``server.py`` registers these), so the tools
can be called and tested directly. Each is synchronous: the SDK runs it in a
worker thread, and the binding releases the GIL inside libzim, so concurrent
calls run in parallel. Bad arguments raise ``ToolInputError`` with a one-line
message for the model; every size and count is bounded.
"""

from __future__ import annotations

import json
from typing import Any

from libzim import ZimError
from libzim.reader import Entry
from libzim.serve.library import Book

from .catalogue import Catalogue, ToolInputError, check_int, check_text
from .content import headings, links, locate_headings, section_span, snippet_markdown

__all__ = ["Tools", "MAX_ARCHIVES", "MAX_LIMIT", "MAX_CHARS", "MAX_LINKS"]

MAX_LIMIT = 50  # hits or titles per call
MAX_OFFSET = 10_000  # search results skipped
MAX_CHARS = 100_000  # characters of text per read
MAX_TEXT_OFFSET = 50_000_000
MAX_LINKS = 500
MAX_ARCHIVES = 100  # archives per page of the archives tool (a library may hold thousands)
MAX_HEADINGS = 80
_MARGIN = 1000
_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown", "text/x-markdown")
_READ_ERRORS = (ZimError, RuntimeError, OSError, TypeError, ValueError)


def _json(value: object) -> str:
    """Compact JSON (no indentation: every character is the model's context)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _is_html(mimetype: str) -> bool:
    return mimetype.startswith(("text/html", "application/xhtml+xml"))


class Tools:
    """The tools of ``zim mcp``: ``search``, ``read``, ``suggest``, ``archives``,
    ``random`` and ``links``, each returning a JSON object as text."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue

    def _hit(self, book: Book, path: str, title: str, **extra: Any) -> dict[str, Any]:
        return {"archive": book.name, "path": path, "title": title, **extra, "cite": self.catalogue.cite(book, path)}

    def search(self, query: str, archives: list[str] | None = None, limit: int = 10, offset: int = 0) -> str:
        """Full-text search of the archives (all, or those named) as one ranking:
        ``{"total", "hits": [{archive, path, title, snippet, score, cite}], "next_offset"}``."""
        check_text("query", query)
        check_int("limit", limit, 1, MAX_LIMIT)
        check_int("offset", offset, 0, MAX_OFFSET)
        books = self.catalogue.select(archives, searchable=True)
        library = self.catalogue.library
        try:
            search = library.search(books, query)
            total = search.get_estimated_matches()
            results = list(search.get_results(offset, limit)) if offset < total else []
        except (ZimError, RuntimeError, ValueError) as e:
            raise ToolInputError(f"cannot run this search: {type(e).__name__}: {e}") from None
        hits = []
        for r in results:
            book = library.book_of(r.archive) or books[0]
            hits.append(self._hit(book, r.path, r.title, snippet=snippet_markdown(r.snippet), score=r.score))
        more = offset + len(hits) < total and len(hits) == limit
        return _json({"query": query, "total": total, "hits": hits,
                      "next_offset": offset + len(hits) if more else None})

    def read(self, archive: str, path: str, section: str | None = None, offset: int = 0,
             max_chars: int = 8000, main_only: bool = True) -> str:
        """An article's text, whole or one section, ``max_chars`` at a time from
        ``offset``: ``{archive, path, title, text, next_offset, cite}``, with
        ``redirected_from`` when ``path`` was a redirect and ``headings`` when
        the text was cut (pass one as ``section``)."""
        book = self.catalogue.book(archive)
        check_int("offset", offset, 0, MAX_TEXT_OFFSET)
        check_int("max_chars", max_chars, 1, MAX_CHARS)
        if section is not None:
            check_text("section", section, 500)
        if not isinstance(main_only, bool):
            raise ToolInputError("main_only must be true or false")
        entry, redirected_from = self.catalogue.entry(book, path)
        try:
            item = entry.get_item()
            mimetype = item.mimetype
            if not mimetype.startswith(_TEXT_TYPES):
                raise ToolInputError(f"{entry.path!r} in {book.name!r} is {mimetype}, not text")
            if section is None:
                # A margin past the end: get_text strips the whitespace it cuts at, and
                # whether text follows the piece is what next_offset says.
                text = item.get_text(main_only=main_only, max_chars=offset + max_chars + _MARGIN)
            else:
                text = item.get_text(main_only=main_only)
            page = bytes(item.content).decode("utf-8", "replace") if _is_html(mimetype) else ""
        except _READ_ERRORS as e:
            if isinstance(e, ToolInputError):
                raise
            raise ToolInputError(f"cannot read {entry.path!r} in {book.name!r}: {type(e).__name__}: {e}") from None
        out = self._hit(book, entry.path, entry.title)
        if redirected_from is not None:
            out["redirected_from"] = redirected_from
        located = []
        if page and section is not None:
            located = locate_headings(text, headings(page))
        elif page and len(text) > offset + max_chars:  # cut: the headings of the whole text, to pick from
            located = locate_headings(item.get_text(main_only=main_only), headings(page))
        if section is not None:
            span = section_span(located, section, len(text))
            if span is None:
                names = "; ".join(h.title for h, _ in located[:MAX_HEADINGS]) or "none"
                raise ToolInputError(f"no section {section!r} in {entry.path!r} (headings: {names})")
            start, end, out["section"] = span
            text = text[start:end]
        piece = text[offset:offset + max_chars]
        more = len(text) > offset + max_chars
        out["text"] = piece
        out["next_offset"] = offset + max_chars if more else None
        if more and section is None and located:
            out["headings"] = [h.title for h, _ in located[:MAX_HEADINGS]]
        return _json(out)

    def suggest(self, query: str, archives: list[str] | None = None, limit: int = 10) -> str:
        """Titles starting with (or containing the words of) ``query``, the
        archives' lists interleaved: ``{"titles": [{archive, path, title, cite}]}``.

        mode="auto": where 100 or more titles start with the query, those, in
        title order (fast: a binary search, where the title index would rank
        every match, tens of ms at Wikipedia's size); else the title index,
        whose word matches inside titles answer "did you mean"."""
        check_text("query", query)
        check_int("limit", limit, 1, MAX_LIMIT)
        per_book: list[list[dict[str, Any]]] = []
        for book in self.catalogue.select(archives):
            try:
                results = book.suggester.suggest(query, mode="auto").get_results(0, limit)
                per_book.append([self._hit(book, r.path, r.title) for r in results])
            except (ZimError, RuntimeError, ValueError):
                per_book.append([])  # an archive without a title index has no suggestions
        merged: list[dict[str, Any]] = []
        for i in range(limit):
            merged.extend(rows[i] for rows in per_book if i < len(rows))
        return _json({"query": query, "titles": merged[:limit]})

    def archives(self, offset: int = 0, limit: int = MAX_ARCHIVES) -> str:
        """The archives served, ``limit`` from ``offset`` in library order: ``{"total",
        "archives": [{name, title, description, language, articles, fulltext, date,
        main}], "next_offset"}`` (None at the end). Opens no archive: a book's record
        (``fulltext`` true until its archive is first opened and seen without an index;
        ``main`` null until then for a library file's book)."""
        check_int("offset", offset, 0, 10_000_000)
        check_int("limit", limit, 1, MAX_ARCHIVES)
        books = list(self.catalogue.books.values())
        rows = []
        for b in books[offset:offset + limit]:
            rows.append({"name": b.name, "title": b.title, "description": b.description,
                         "language": b.language, "articles": b.article_count,
                         "fulltext": b.has_fulltext_index is not False, "date": b.date, "main": b.main_path})
        more = offset + len(rows) < len(books)
        return _json({"total": len(books), "archives": rows, "next_offset": offset + len(rows) if more else None})

    def random(self, archive: str) -> str:
        """A random article of ``archive``: ``{archive, path, title, cite}``."""
        book = self.catalogue.book(archive)
        try:
            entry = book.archive.get_random_entry()
            entry, _ = self.catalogue.entry(book, entry.path)
        except (ZimError, RuntimeError, KeyError) as e:
            raise ToolInputError(f"no random article in {book.name!r}: {type(e).__name__}") from None
        return _json(self._hit(book, entry.path, entry.title))

    def links(self, archive: str, path: str, limit: int = 100) -> str:
        """The article's links to other entries of its archive, resolved:
        ``{archive, path, links: [{path, title, text}], external, missing, truncated}``."""
        book = self.catalogue.book(archive)
        check_int("limit", limit, 1, MAX_LINKS)
        entry, _ = self.catalogue.entry(book, path)
        try:
            item = entry.get_item()
            page = bytes(item.content).decode("utf-8", "replace") if _is_html(item.mimetype) else ""
        except (ZimError, RuntimeError, OSError) as e:
            raise ToolInputError(f"cannot read {entry.path!r} in {book.name!r}: {type(e).__name__}") from None
        found, external, cut = links(page, entry.path, limit)
        rows, missing = [], 0
        for target, fragment, text in found:
            linked = self._lookup(book, target)
            if linked is None:
                missing += 1
                continue
            row = {"path": linked.path, "title": linked.title, "text": text}
            if fragment:
                row["fragment"] = fragment
            rows.append(row)
        return _json({"archive": book.name, "path": entry.path, "links": rows, "external": external,
                      "missing": missing, "truncated": cut, "cite": self.catalogue.cite(book, entry.path)})

    def _lookup(self, book: Book, path: str) -> Entry | None:
        """The entry a link names (redirects followed), or None when the archive lacks it."""
        try:
            return self.catalogue.entry(book, path)[0] if book.archive.has_entry_by_path(path) else None
        except (ToolInputError, ValueError):
            return None
