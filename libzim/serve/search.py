"""Full-text search (``/search``) and suggestions (``/suggest``)."""

from __future__ import annotations

import unicodedata
from typing import Literal, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope, Send

from libzim import ZimError

from . import opds, pages, searchpage
from .catalog import filter_books
from .core import (GET, GZIP_ABOVE, NO_CACHE, SLOW, HTTPError, Server, accepts_gzip, bytes_response, endpoint, gzip_bytes,
                   root_of, scope_takes_gzip, state_tag, text_response)
from .library import Book

__all__ = ["routes"]


def search_books(server: Server, request: Request) -> list[Book]:
    """The books a search covers (``books.name``, ``content``, ``books.id``; all indexed
    books when none is named), sorted by name; 400 for an unknown or unindexed one."""
    lib = server.library
    names = request.query_params.getlist("books.name") + request.query_params.getlist("content")
    ids = request.query_params.getlist("books.id")
    if len(names) + len(ids) > len(lib.books) + 8:
        raise HTTPError(400, "Too many books in one request.")
    books: list[Book] = []
    for n in names:
        books.append(server.book(n, 400))
    for i in ids:
        b = lib.by_uuid(i)
        if b is None:
            raise HTTPError(400, f"No such book id: {i}")
        books.append(b)
    if not books and any(k.startswith("books.filter.") for k in request.query_params):
        books = [b for b in filter_books(server, request.query_params, "books.filter.", remote=False)
                 if b.has_fulltext_index is not False]
        if not books:
            raise HTTPError(400, "No book matches the selection (books.filter.*).")
    limit = server.options.search_limit
    if not books:
        # kiwix-serve counts every book of the library against -s when none is selected
        if limit and len(lib.books) > limit:
            raise HTTPError(400, f"A search may cover at most {limit} book(s) here (--searchLimit); "
                                 f"select some of the library's {len(lib.books)} (content=..., books.filter.*).")
        books = lib.searchable()
        if not books:
            raise HTTPError(404, "No book of this library has a full-text index.")
    seen: dict[str, Book] = {}
    for b in books:
        if b.has_fulltext_index is False:  # kiwix-serve: 404 "fulltext-search-unavailable"
            raise HTTPError(404, f"The full-text search is not available for {b.name}")
        seen.setdefault(b.name, b)
    if limit and len(seen) > limit:
        raise HTTPError(400, f"A search may cover at most {limit} book(s) here (--searchLimit); "
                             f"it asked for {len(seen)}.")
    return sorted(seen.values(), key=lambda b: b.name)


def unaccented(text: str) -> str:
    """``text`` without its accents (marks), as libzim indexes the words: "jàzz" finds
    what "jazz" finds, as with kiwix-serve."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", "".join(
        c for c in unicodedata.normalize("NFD", text) if not unicodedata.category(c).startswith("M")))


def _search(server: Server, books: tuple[Book, ...], pattern: str, start: int,
            length: int) -> tuple[int, list[pages.Hit]]:
    lib = server.library
    try:
        search, book_of = lib.search_with_books(books, pattern)
        total = search.get_estimated_matches()
        results = list(search.get_results(start, length)) if start < total else []
        hits = []
        for r in results:
            book = book_of(r.archive) or books[0]
            hits.append(pages.Hit(book, r.path, r.title, r.snippet, r.word_count))
    except (ZimError, ValueError, RuntimeError) as e:
        raise HTTPError(400, f"Cannot run this search: {type(e).__name__}") from None
    return total, hits


async def search(server: Server, request: Request) -> Response:
    """``/search``: a page of results as HTML, or RSS with ``format=xml``."""
    q = request.query_params
    pattern = q.get("pattern", "")
    selected = any(k in ("content", "books.name", "books.id") or k.startswith("books.filter.") for k in q)
    if not pattern.strip() and not selected:
        raise HTTPError(400, "No query provided (pattern=...).")
    if len(pattern) > server.limits.max_query_chars:
        raise HTTPError(400, f"The query is longer than {server.limits.max_query_chars} characters.")
    books = await server.run(search_books, server, request)  # books.filter.* may build the catalog index
    start = server.int_param(request, "start", 0, 0)  # 0-based, as libkiwix 14.1+
    length = server.int_param(request, "pageLength", 25, 0, server.limits.max_page_length) or 25  # 0: the default
    if pattern.strip():
        total, hits = await server.run(_search, server, tuple(books), unaccented(pattern.strip()), start, length,
                                       priority=SLOW)
    else:  # a book but nothing to look for: an empty page, as kiwix's (EmptyPatternSearchDoesNotError)
        total, hits = 0, []
    names = [b.name for b in books]
    if q.get("format") == "xml":
        body = pages.search_rss(names, pattern, total, start, length, hits, root_of(request))
        return text_response(request, body, "application/rss+xml; charset=utf-8")
    return searchpage.search_response(request, server.options, books, pattern, total, start, length, hits)


def _suggest_body(books: list[Book], term: str, start: int, count: int, mode: Literal["index", "titles", "auto"] = "index") -> bytes:
    """The /suggest response body, built on the worker: the event loop only sends it."""
    fulltext = any(b.has_fulltext_index is not False for b in books)
    return pages.suggest_json(_suggest(books, term, start, count, mode), term, fulltext).encode("utf-8")


def _suggest(books: list[Book], term: str, start: int, count: int, mode: Literal["index", "titles", "auto"] = "index") -> list[dict[str, str]]:
    per_book: list[list[dict[str, str]]] = []
    for b in books:
        try:
            results = b.suggester.suggest(term, mode=mode).get_results(start, count)
            rows = [{"value": r.title, "label": r.snippet or r.title, "kind": "path", "path": r.path,
                     "book": b.name} for r in results]
        except (ZimError, ValueError, RuntimeError):
            rows = []
        per_book.append(rows)
    merged: list[dict[str, str]] = []
    for i in range(count):  # interleave the books' lists, each in its own order
        for rows in per_book:
            if i < len(rows) and len(merged) < count:
                merged.append(rows[i])
    return merged


async def suggest(server: Server, request: Request) -> Response:
    """``/suggest``: title suggestions as JSON."""
    q = request.query_params
    names = q.getlist("content") + q.getlist("books.name")
    if not names:
        raise HTTPError(404, "No book was given (content=...).")
    if len(names) > len(server.library.books) + 8:
        raise HTTPError(400, "Too many books in one request.")
    by_name = {n: server.book(n) for n in names}
    books = list(by_name.values())
    term = q.get("term", "")
    if len(term) > server.limits.max_query_chars:
        raise HTTPError(400, f"The term is longer than {server.limits.max_query_chars} characters.")
    count = server.int_param(request, "count", 10, 0, server.limits.max_suggest_count) or 10  # 0: kiwix's 10
    start = server.int_param(request, "start", 0, 0, 1_000_000)
    packed = None
    if term:
        # A keystroke's prefix ("p", "py", "pyt") is asked again and again: its answer is
        # kept (server.suggestions) under the URL's query, for these very Books (a reload
        # makes new ones), with its gzip once a browser asked for it (made per request, it
        # was a fifth of a kept answer's instructions: bench/results/request-path.md).
        # The same query always means the same books, term, start and count (the limits and
        # the suggestion mode are the server's): send_kept answers it without this handler.
        key = request.scope["query_string"]
        gz = accepts_gzip(request)
        kept = cast("Kept | None", server.suggestions.get(key))
        if kept is not None and _same_books(server, kept[0]) and tuple(b for _, b in kept[0]) == tuple(books):
            body, packed = kept[1], kept[2]
            if gz and packed is None and len(body) > GZIP_ABOVE:
                packed = gzip_bytes(body)  # once per kept answer, on the loop: a few KB of JSON
                _keep_suggestion(server, key, kept[0], body, packed)
        else:
            # A book never opened learns whether it has an index on this first query: that
            # answer is not kept (the next one is, from the complete record).
            complete = all(b.complete for b in books)
            mode = server.options.suggest_mode
            body, packed = await server.run(_suggest_answer, books, term, start, count, mode, gz)
            if complete:
                _keep_suggestion(server, key, tuple(by_name.items()), body, packed)
    else:  # nothing to look up: no trip to a worker
        fulltext = any(b.has_fulltext_index is not False for b in books)
        body = pages.suggest_json([], term, fulltext).encode("utf-8")
    return bytes_response(request, body, JSON, packed)


JSON = "application/json; charset=utf-8"
_JSON_B = JSON.encode()
_NO_CACHE_B = NO_CACHE.encode()
_REFUSED = frozenset((b"if-none-match",))  # a 304 or not: bytes_response decides
# A kept suggestion: the (name asked, Book) pairs, the JSON, its gzip once made.
Kept = tuple[tuple[tuple[str, Book], ...], bytes, "bytes | None"]


def _same_books(server: Server, pairs: tuple[tuple[str, Book], ...]) -> bool:
    """Whether each name still gives the very Book it gave (no reload since)."""
    library = server.library
    return all(library.get(name) is book for name, book in pairs)


def _suggest_answer(books: list[Book], term: str, start: int, count: int, mode: Literal["index", "titles", "auto"],
                    gz: bool) -> tuple[bytes, bytes | None]:
    """The JSON body, and its gzip when the client takes it and it is worth it (on the worker)."""
    body = _suggest_body(books, term, start, count, mode)
    return body, gzip_bytes(body) if gz and len(body) > GZIP_ABOVE else None


def _keep_suggestion(server: Server, key: bytes, pairs: tuple[tuple[str, Book], ...], body: bytes,
                     packed: bytes | None) -> None:
    size = 512 + len(body) + (len(packed) if packed is not None else 0) + 2 * len(key)
    server.suggestions.put(key, (pairs, body, packed), size)


async def send_kept(server: Server, scope: Scope, send: Send) -> bool:
    """A repeated suggestion (a GET whose query was answered before, for the same Books)
    sent from its kept answer without Starlette's Request and Response, with the head
    ``bytes_response`` builds (tests/test_serve_fastpath.py compares the bytes); False,
    having sent nothing, for anything else: HEAD, If-None-Match, a query not kept, a
    reload since, or gzip asked before it was made (the handler makes and keeps it).

    Why: parsing the query, its checks, the Request and the Response were four fifths
    of our code's cost for a kept suggestion (bench/results/request-path.md)."""
    if scope["method"] != "GET":
        return False
    gz = scope_takes_gzip(scope, _REFUSED)
    key = scope["query_string"]
    if gz is None or key not in server.suggestions:
        return False
    pairs, body, packed = cast(Kept, server.suggestions.get(key))
    if not _same_books(server, pairs):
        return False
    coded = gz and len(body) > GZIP_ABOVE
    if coded:
        if packed is None:
            return False
        body = packed
    headers = [(b"cache-control", _NO_CACHE_B), (b"vary", b"Accept-Encoding"),
               (b"etag", state_tag(server, coded).encode("latin-1"))]
    if coded:
        headers.append((b"content-encoding", b"gzip"))
    headers.append((b"content-length", str(len(body)).encode()))
    headers.append((b"content-type", _JSON_B))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
    return True


async def searchdescription(server: Server, request: Request) -> Response:
    """``/search/searchdescription.xml``: the OpenSearch description the RSS results link."""
    return text_response(request, opds.searchdescription(root_of(request), "search"), opds.OPENSEARCH)


def routes(server: Server) -> list[Route]:
    """``/search`` and ``/suggest``."""
    return [
        Route("/search", endpoint(server, search), methods=GET),
        Route("/search/searchdescription.xml", endpoint(server, searchdescription), methods=GET),
        Route("/suggest", endpoint(server, suggest), methods=GET),
    ]
