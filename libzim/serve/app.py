"""The ASGI application: kiwix-serve's URLs on this binding.

Handlers run on the event loop and hand every call into libzim (entry lookup,
content read, search, suggestion) to one bounded ThreadPoolExecutor: the
binding releases the GIL inside libzim, so the workers run in parallel, and
the event loop stays free to read requests and write responses.  A worker
never touches a socket: it returns bytes, the loop sends them, so a slow
client holds a buffer, never a worker.  Beyond ``max_pending`` queued jobs
the server answers 503 rather than queueing without end.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import queue
import re
import uuid as uuidlib
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import AsyncIterator, Callable, Iterable, TypeVar
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from libzim import ZimError

from . import pages
from .library import Book, Library, resolve
from .viewer import ViewerOptions, viewer_routes

__all__ = ["create_app", "Limits"]

T = TypeVar("T")

NO_CACHE = "no-cache, no-store, must-revalidate"
STREAM_ABOVE = 1 << 20  # content larger than this is sent in chunks from the binding's memoryview
STREAM_CHUNK = 256 << 10
MAX_RANGES = 16  # more ranges in one request: the whole content (200), as RFC 9110 allows
CONTENT_CACHE = "max-age=2723040, public"  # what kiwix-serve 3.3 sends for archive content
_MIME_OK = re.compile(r"^[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}( *;[ -~]{0,128})?$")


@dataclass(frozen=True)
class Limits:
    """What one request may ask for (defaults: kiwix-serve's caps where it has one).

    ``max_page_length``: search results per page (kiwix-serve caps pageLength
    at 140); ``max_suggest_count``: suggestions per request; ``max_query_chars``:
    characters of a search pattern or suggestion term; ``max_url_bytes``: the
    request target's length (414 above it); ``max_header_bytes``: the names
    and values of a request's headers together (431 above it); ``max_pending``:
    jobs queued for the worker pool before requests get 503.
    """

    max_page_length: int = 140  # kiwix-serve caps pageLength at 140
    max_suggest_count: int = 100
    max_query_chars: int = 1000
    max_url_bytes: int = 8192
    max_header_bytes: int = 16 * 1024
    max_pending: int = 1024  # jobs queued for the workers before 503


class HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_TITLES = {400: "Invalid request", 404: "Content not found", 405: "Method not allowed",
           413: "Request too large", 414: "URI too long", 416: "Range not satisfiable",
           431: "Request headers too large",
           500: "Internal server error", 503: "Server busy"}


def error_response(status: int, message: str, head: bool = False) -> Response:
    body = pages.error_page(status, _TITLES.get(status, "Error"), message)
    r = HTMLResponse(body, status_code=status, headers={"Cache-Control": NO_CACHE})
    if head:
        r.body = b""
    return r


class _Guard:
    """Pure-ASGI outer layer: only GET and HEAD, no request body, bounded URL and
    headers (whatever server parsed them: uvicorn's h11 bounds only a head still
    arriving, and a mounting app's server may bound none)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        err: Response | None = None
        raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "replace")
        header_list = scope.get("headers") or []
        headers = dict(header_list)
        if scope["method"] not in ("GET", "HEAD"):
            err = error_response(405, "Only GET and HEAD are served.")
            err.headers["Allow"] = "GET, HEAD"
        elif len(raw) + len(scope.get("query_string", b"")) > self.limits.max_url_bytes:
            err = error_response(414, "The URL is too long.")
        elif sum(len(k) + len(v) for k, v in header_list) > self.limits.max_header_bytes:
            err = error_response(431, "The request's headers are too large.")
        elif headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers:
            err = error_response(413, "Requests must not have a body.")
        if err is not None:
            if scope["method"] == "HEAD":
                err.body = b""
            await err(scope, receive, send)
            return
        await self.app(scope, receive, send)


QUICK, SLOW = 0, 1  # job priorities: suggestions, content, metadata before search pages


class PriorityPool:
    """A ThreadPoolExecutor whose free worker takes the most urgent waiting job.

    Each job goes into a priority queue (priority, then arrival) and one runner is
    submitted to the executor per job; a runner, when a worker starts it, runs the
    best job waiting then, not necessarily its own. So a suggestion that arrives
    behind a queue of search pages waits for one worker to finish its current job,
    not for the queue (measured: suggest p99 149 ms with 8 clients searching, in one
    FIFO pool). Searches only wait while quicker jobs are queued, which are short.
    The executor keeps its usual life cycle (shutdown, exit of the interpreter).
    """

    def __init__(self, threads: int, name: str) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self._jobs: queue.PriorityQueue[tuple[int, int, Callable[[], object], Future[object]]] = queue.PriorityQueue()
        self._seq = itertools.count()

    def submit(self, priority: int, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((priority, next(self._seq), fn, future))  # type: ignore[arg-type]
        self.executor.submit(self._run_one)
        return future

    def _run_one(self) -> None:
        _, _, fn, future = self._jobs.get_nowait()  # one job per runner: never empty here
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting request
            future.set_exception(e)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.executor.shutdown(wait=wait, cancel_futures=cancel_futures)
        while True:  # jobs whose runners were cancelled: their requests must not wait forever
            try:
                _, _, _, future = self._jobs.get_nowait()
            except queue.Empty:
                return
            future.cancel()


class Server:
    """The library, the pool, and the request handlers."""

    def __init__(self, library: Library, threads: int, limits: Limits, downloads: bool = False) -> None:
        self.library = library
        self.downloads = downloads
        self.limits = limits
        self.pool = PriorityPool(max(1, threads), "zim-serve")
        self.pending = 0
        self.feed_id = str(uuidlib.uuid4())

    async def run(self, fn: Callable[..., T], *args: object, priority: int = QUICK) -> T:
        """fn(*args) on a worker; 503 when too much is queued already."""
        if self.pending >= self.limits.max_pending:
            raise HTTPError(503, "Too many requests are waiting; try again shortly.")
        self.pending += 1
        try:
            return await asyncio.wrap_future(self.pool.submit(priority, partial(fn, *args)))
        finally:
            self.pending -= 1

    # -- parameters ---------------------------------------------------------

    def book(self, name: str | None, status: int = 404) -> Book:
        if not name:
            raise HTTPError(status, "No book was given (content=... or books.name=...).")
        b = self.library.books.get(name)
        if b is None:
            raise HTTPError(status, f"No such book: {name}")
        return b

    @staticmethod
    def int_param(request: Request, name: str, default: int, low: int, high: int | None = None) -> int:
        text = request.query_params.get(name)
        if text is None or text == "":
            return default
        if not re.fullmatch(r"[+]?[0-9]{1,9}", text.strip()):
            raise HTTPError(400, f"Invalid value of {name}: {text[:40]}")
        value = int(text)
        if value < low:
            raise HTTPError(400, f"{name} must be at least {low}")
        return value if high is None else min(value, high)

    # -- content ------------------------------------------------------------

    def _lookup(self, book: Book, path: str) -> str | tuple[bytes | memoryview, str, str]:
        """The redirect target's path, or (content, mimetype, etag); raises HTTPError 404.
        Large content stays the binding's memoryview (no copy): it is streamed in chunks."""
        a = book.archive
        try:
            entry = a.get_entry_by_path(path)
        except (KeyError, ValueError):  # EntryNotFoundError; paths libzim cannot hold (NUL, surrogates)
            raise HTTPError(404, f"No entry {path} in {book.name}") from None
        if entry.is_redirect:
            try:
                return resolve(entry).path
            except LookupError:
                raise HTTPError(404, f"{path} in {book.name} is a redirect loop") from None
        item = entry.get_item()
        view = item.content
        content: bytes | memoryview = bytes(view) if len(view) <= STREAM_ABOVE else view
        etag = '"' + hashlib.blake2b(f"{book.uuid}/{path}".encode("utf-8", "surrogatepass"),
                                     digest_size=12).hexdigest() + '"'
        return content, item.mimetype, etag

    async def content(self, request: Request) -> Response:
        return await self._content(request, request.path_params["book"], request.path_params.get("path", ""))

    async def legacy_content(self, request: Request) -> Response:
        """kiwix-serve 3.3's /BOOK/PATH: the same as /content/BOOK/PATH."""
        return await self._content(request, request.path_params["book"], request.path_params.get("path", ""))

    async def book_root(self, request: Request) -> Response:
        return await self._content(request, request.path_params["book"], "")

    async def _content(self, request: Request, name: str, path: str, raw: bool = False) -> Response:
        book = self.book(name)
        qname = quote(name, safe="")
        base = quote(_root(request), safe="/")
        prefix = f"{base}/raw/{qname}/content/" if raw else f"{base}/content/{qname}/"
        if path == "":
            if book.main_path is None:
                raise HTTPError(404, f"{name} has no main page")
            return self.redirect(_join(prefix, book.main_path))
        found = await self.run(self._lookup, book, path)
        if isinstance(found, str):
            return self.redirect(_join(prefix, found))
        content, mimetype, etag = found
        return self.send_bytes(request, content, mimetype, etag)

    async def raw_content(self, request: Request) -> Response:
        return await self._content(request, request.path_params["book"], request.path_params["path"], raw=True)

    def _meta(self, book: Book, name: str) -> tuple[bytes, str]:
        try:
            item = book.archive.get_metadata_item(name)
            return bytes(item.content), item.mimetype
        except (KeyError, ValueError):
            raise HTTPError(404, f"No metadata {name} in {book.name}") from None

    async def raw_meta(self, request: Request) -> Response:
        book = self.book(request.path_params["book"])
        content, mimetype = await self.run(self._meta, book, request.path_params["name"])
        if mimetype.startswith("text/plain") or not mimetype:
            mimetype = "text/plain;charset=UTF-8"
        etag = '"' + hashlib.blake2b(f"{book.uuid}/meta/{request.path_params['name']}".encode(
            "utf-8", "surrogatepass"), digest_size=12).hexdigest() + '"'
        return self.send_bytes(request, content, mimetype, etag)

    def send_bytes(self, request: Request, content: bytes | memoryview, mimetype: str, etag: str) -> Response:
        if not _MIME_OK.match(mimetype):
            mimetype = "application/octet-stream"
        headers = {"ETag": etag, "Cache-Control": CONTENT_CACHE, "Accept-Ranges": "bytes"}
        inm = request.headers.get("if-none-match")
        if inm is not None and (inm.strip() == "*" or etag in [t.strip().removeprefix("W/") for t in inm.split(",")]):
            return Response(status_code=304, headers=headers)
        head = request.method == "HEAD"
        rng = request.headers.get("range")
        size = len(content)
        if rng is not None and self._range_applies(request, etag):
            spans = parse_ranges(rng, size)
            if spans == "unsatisfiable":
                r = error_response(416, "The requested range is outside the content.", head)
                r.headers["Content-Range"] = f"bytes */{size}"
                return r
            if isinstance(spans, list) and len(spans) == 1:
                lo, hi = spans[0]
                headers["Content-Range"] = f"bytes {lo}-{hi}/{size}"
                return _bytes_response(content[lo:hi + 1], 206, mimetype, headers, head)
            if isinstance(spans, list):
                return _multipart_response(content, spans, mimetype, headers, head)
        return _bytes_response(content, 200, mimetype, headers, head)

    @staticmethod
    def _range_applies(request: Request, etag: str) -> bool:
        ir = request.headers.get("if-range")
        return ir is None or ir.strip() == etag

    @staticmethod
    def redirect(url: str) -> Response:
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": NO_CACHE})

    # -- random -------------------------------------------------------------

    async def random(self, request: Request) -> Response:
        book = self.book(request.query_params.get("content"))

        def pick() -> str:
            try:
                return book.archive.get_random_entry().path
            except (KeyError, ZimError):
                raise HTTPError(404, f"{book.name} has no article to pick") from None

        return self.redirect(_join(f"{quote(_root(request), safe='/')}/content/{quote(book.name, safe='')}/", await self.run(pick)))

    # -- search -------------------------------------------------------------

    def search_books(self, request: Request) -> list[Book]:
        names = request.query_params.getlist("books.name") + request.query_params.getlist("content")
        ids = request.query_params.getlist("books.id")
        if len(names) + len(ids) > len(self.library.books) + 8:
            raise HTTPError(400, "Too many books in one request.")
        books: list[Book] = []
        for n in names:
            books.append(self.book(n, 400))
        for i in ids:
            b = self.library.by_uuid(i)
            if b is None:
                raise HTTPError(400, f"No such book id: {i}")
            books.append(b)
        if not books:
            books = self.library.searchable()
            if not books:
                raise HTTPError(400, "No book of this library has a full-text index.")
        seen: dict[str, Book] = {}
        for b in books:
            if not b.archive.has_fulltext_index:
                raise HTTPError(400, f"The full-text search is not available for {b.name}")
            seen.setdefault(b.name, b)
        return sorted(seen.values(), key=lambda b: b.name)

    def _search(self, books: tuple[Book, ...], pattern: str, start: int, length: int) -> tuple[int, list[pages.Hit]]:
        try:
            search = self.library.search(books, pattern)
            total = search.get_estimated_matches()
            results = list(search.get_results(start - 1, length)) if start - 1 < total else []
            hits = []
            for r in results:
                book = self.library.book_of(r.archive) or books[0]
                hits.append(pages.Hit(book, r.path, r.title, r.snippet, r.word_count))
        except (ZimError, ValueError, RuntimeError) as e:
            raise HTTPError(400, f"Cannot run this search: {type(e).__name__}") from None
        return total, hits

    async def search(self, request: Request) -> Response:
        q = request.query_params
        pattern = q.get("pattern", "")
        if not pattern.strip():
            raise HTTPError(400, "No query provided (pattern=...).")
        if len(pattern) > self.limits.max_query_chars:
            raise HTTPError(400, f"The query is longer than {self.limits.max_query_chars} characters.")
        books = self.search_books(request)
        start = self.int_param(request, "start", 1, 1)
        length = self.int_param(request, "pageLength", 25, 1, self.limits.max_page_length)
        total, hits = await self.run(self._search, tuple(books), pattern, start, length, priority=SLOW)
        names = [b.name for b in books]
        if q.get("format") == "xml":
            body = pages.search_rss(names, pattern, total, start, length, hits, _root(request))
            return _text(request, body, "application/rss+xml; charset=utf-8")
        return _text(request, pages.search_page(names, pattern, total, start, length, hits, _root(request)),
                     "text/html; charset=utf-8")

    # -- suggest ------------------------------------------------------------

    def _suggest_body(self, books: list[Book], term: str, count: int) -> bytes:
        """The /suggest response body, built on the worker: the event loop only sends it."""
        return pages.suggest_json(self._suggest(books, term, count), term).encode("utf-8")

    def _suggest(self, books: list[Book], term: str, count: int) -> list[dict[str, str]]:
        per_book: list[list[dict[str, str]]] = []
        for b in books:
            try:
                results = b.suggester.suggest(term).get_results(0, count)
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

    async def suggest(self, request: Request) -> Response:
        q = request.query_params
        names = q.getlist("content") + q.getlist("books.name")
        if not names:
            raise HTTPError(404, "No book was given (content=...).")
        if len(names) > len(self.library.books) + 8:
            raise HTTPError(400, "Too many books in one request.")
        books = list({n: self.book(n) for n in names}.values())
        term = q.get("term", "")
        if len(term) > self.limits.max_query_chars:
            raise HTTPError(400, f"The term is longer than {self.limits.max_query_chars} characters.")
        count = self.int_param(request, "count", 10, 0, self.limits.max_suggest_count)
        if term and count:
            body = await self.run(self._suggest_body, books, term, count)
        else:  # nothing to look up: no trip to a worker
            body = pages.suggest_json([], term).encode("utf-8")
        return _bytes(request, body, "application/json; charset=utf-8")

    # -- catalog ------------------------------------------------------------

    async def catalog_entries(self, request: Request) -> Response:
        q = request.query_params
        books = list(self.library.books.values())
        if q.get("lang"):
            books = [b for b in books if b.language in q.get("lang", "").split(",")]
        if q.get("name"):
            books = [b for b in books if b.name == q.get("name")]
        query = q.get("q", "")
        if len(query) > self.limits.max_query_chars:
            raise HTTPError(400, f"The query is longer than {self.limits.max_query_chars} characters.")
        if query.strip():
            books = [b for b in books if b.matches(query)]
        start = self.int_param(request, "start", 0, 0)
        count = self.int_param(request, "count", 10_000, 0, 10_000)
        body = pages.opds_entries(books[start:start + count], self.feed_id, len(books), start, _root(request),
                                  downloads=self.downloads)
        return _text(request, body, "application/atom+xml;profile=opds-catalog;kind=acquisition")

    async def catalog_root(self, request: Request) -> Response:
        body = (
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n"
            f"  <id>{pages.esc(self.feed_id)}</id>\n  <title>OPDS Catalog Root</title>\n"
            "  <link rel=\"self\" href=\"/catalog/v2/root.xml\" "
            "type=\"application/atom+xml;profile=opds-catalog;kind=navigation\"/>\n"
            "  <entry>\n    <title>All entries</title>\n    <link rel=\"subsection\" href=\"/catalog/v2/entries\" "
            "type=\"application/atom+xml;profile=opds-catalog;kind=acquisition\"/>\n  </entry>\n</feed>\n"
        )
        return _text(request, body, "application/atom+xml;profile=opds-catalog;kind=navigation")

    def _illustration(self, book: Book, size: int) -> tuple[bytes, str]:
        try:
            item = book.archive.get_illustration_item(size)
            return bytes(item.content), item.mimetype
        except (KeyError, ValueError, ZimError):
            raise HTTPError(404, f"No illustration of size {size} in {book.name}") from None

    async def illustration(self, request: Request) -> Response:
        book = self.library.by_uuid(request.path_params["uuid"])
        if book is None:
            raise HTTPError(404, f"No book with id {request.path_params['uuid']}")
        size = self.int_param(request, "size", 48, 1, 100_000)
        content, mimetype = await self.run(self._illustration, book, size)
        etag = '"' + hashlib.blake2b(f"{book.uuid}/illustration/{size}".encode(), digest_size=12).hexdigest() + '"'
        return self.send_bytes(request, content, mimetype or "image/png", etag)

    async def download(self, request: Request) -> Response:
        """The book's .zim file (only with downloads on): Starlette's FileResponse, which
        answers ranges (resumed downloads), HEAD and conditional requests itself and
        reads the file in its worker threads, not ours."""
        name = str(request.path_params["file"])
        book = self.library.books.get(name.removesuffix(".zim")) if name.endswith(".zim") else None
        if not self.downloads or book is None or book.file is None:
            raise HTTPError(404, f"No download {name}")
        return FileResponse(book.file, media_type="application/x-zim", filename=book.file.name,
                            headers={"Cache-Control": "max-age=86400, public"})

    # -- library ------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        books = sorted(self.library.books.values(), key=lambda b: (b.title.lower(), b.name))
        return _text(request, pages.library_page(books, _root(request)), "text/html; charset=utf-8")


def _root(request: Request) -> str:
    """Where the app is mounted ("" at the top), for the URLs it writes (pages quote it)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _join(prefix: str, path: str) -> str:
    """``prefix`` (already quoted) + ``path`` percent-encoded, so the Location is one safe URL."""
    return prefix + quote(path, safe="/")


def _bytes_response(body: bytes | memoryview, status: int, mimetype: str, headers: dict[str, str],
                    head: bool) -> Response:
    # The archive's MIME type as it is: Starlette's media_type would add "; charset=utf-8"
    # to text/*, overriding the charset an old archive's pages declare in their <meta>.
    headers = {**headers, "Content-Type": mimetype, "Content-Length": str(len(body))}
    if head:  # Content-Length: the size of the body a GET gets
        return Response(b"", status_code=status, headers=headers)
    if len(body) > STREAM_ABOVE:
        view = body

        async def chunks() -> AsyncIterator[bytes]:
            # One chunk copied at a time, as the client takes them: a slow client
            # holds a reference to the content, not a worker or a full copy.
            for i in range(0, len(view), STREAM_CHUNK):
                yield bytes(view[i:i + STREAM_CHUNK])

        return StreamingResponse(chunks(), status_code=status, headers=headers)
    return Response(bytes(body), status_code=status, headers=headers)


def _text(request: Request, body: str, mimetype: str) -> Response:
    return _bytes(request, body.encode("utf-8"), mimetype)


def _bytes(request: Request, body: bytes, mimetype: str) -> Response:
    r = Response(body, media_type=mimetype, headers={"Cache-Control": NO_CACHE})
    if request.method == "HEAD":
        r.body = b""
    return r


def parse_range(spec: str, size: int) -> tuple[int, int] | str | None:
    """One byte range (``A-B``, ``A-``, ``-N``, with or without the ``bytes=`` unit):
    (first, last), "unsatisfiable", or None for bad syntax (then the whole header is
    ignored: RFC 9110 lets a server answer with the whole content)."""
    m = re.fullmatch(r"\s*(?:bytes\s*=)?\s*([0-9]{0,18})\s*-\s*([0-9]{0,18})\s*", spec)
    if m is None:
        return None
    a, b = m.group(1), m.group(2)
    if a == "" and b == "":
        return None
    if a == "":
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    lo = int(a)
    hi = size - 1 if b == "" else min(int(b), size - 1)
    if b != "" and int(b) < lo:
        return None
    if lo >= size:
        return "unsatisfiable"
    return lo, hi


def parse_ranges(header: str, size: int, max_ranges: int = MAX_RANGES) -> list[tuple[int, int]] | str | None:
    """The ranges of a ``Range: bytes=...`` header, sorted, overlapping and adjacent ones
    merged (RFC 9110 allows it; so no request gets a byte twice); "unsatisfiable" when
    none is in the content; None to ignore the header (bad syntax, another unit, more
    than ``max_ranges`` ranges): the whole content is sent."""
    m = re.fullmatch(r"\s*bytes\s*=(.*)", header, re.S)
    if m is None:
        return None
    specs = [p for p in m.group(1).split(",") if p.strip()]  # RFC 9110 allows empty list elements
    if not specs or len(specs) > max_ranges:
        return None
    spans: list[tuple[int, int]] = []
    for spec in specs:
        one = parse_range(spec, size) if "=" not in spec else None  # no second "bytes=" in the list
        if one is None:
            return None
        if isinstance(one, tuple):
            spans.append(one)
    if not spans:
        return "unsatisfiable"
    spans.sort()
    merged = [spans[0]]
    for lo, hi in spans[1:]:
        if lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _multipart_response(content: bytes | memoryview, spans: list[tuple[int, int]], mimetype: str,
                        headers: dict[str, str], head: bool) -> Response:
    """206 multipart/byteranges: one part per range, each with its Content-Type and Content-Range."""
    boundary = uuidlib.uuid4().hex
    size = len(content)
    pieces: list[bytes | memoryview] = []
    for lo, hi in spans:
        pieces.append(f"--{boundary}\r\nContent-Type: {mimetype}\r\nContent-Range: bytes {lo}-{hi}/{size}\r\n\r\n"
                      .encode("latin-1"))
        pieces.append(content[lo:hi + 1])
        pieces.append(b"\r\n")
    pieces.append(f"--{boundary}--\r\n".encode("latin-1"))
    length = sum(len(p) for p in pieces)
    headers = {**headers, "Content-Type": f"multipart/byteranges; boundary={boundary}", "Content-Length": str(length)}
    if head:
        return Response(b"", status_code=206, headers=headers)
    if length <= STREAM_ABOVE:
        return Response(b"".join(pieces), status_code=206, headers=headers)

    async def chunks() -> AsyncIterator[bytes]:
        for p in pieces:
            for i in range(0, len(p), STREAM_CHUNK):
                yield bytes(p[i:i + STREAM_CHUNK])

    return StreamingResponse(chunks(), status_code=206, headers=headers)


def create_app(paths: Iterable[str | os.PathLike[str]] | Library, *, threads: int | None = None,
               limits: Limits | None = None, search_cache: int = 64, downloads: bool = False) -> Starlette:
    """The ASGI app serving ``paths`` (ZIM files or folders of them) or a Library.

    Mount it in another Starlette / FastAPI app with ``app.mount("/zim", create_app([...]))``;
    ``app.state.server`` holds the Server (its ``library`` and worker ``pool``).
    ``downloads=True`` serves each book's .zim file at ``/download/BOOK.zim`` and links it
    from the OPDS catalog (kiwix-serve serves no files; off by default: a big archive is a
    big download).
    """
    lib = paths if isinstance(paths, Library) else Library(paths, search_cache=search_cache)
    lim = limits or Limits()
    server = Server(lib, threads or min(32, (os.cpu_count() or 1) * 2), lim, downloads=downloads)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPError):
            return error_response(exc.status, exc.message, request.method == "HEAD")
        if isinstance(exc, HTTPException):
            msg = "No such page." if exc.status_code == 404 else str(exc.detail)
            return error_response(exc.status_code, msg, request.method == "HEAD")
        return error_response(500, "The server failed to answer this request.", request.method == "HEAD")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            server.pool.shutdown(wait=True, cancel_futures=True)

    routes = [
        Route("/", server.home, methods=["GET", "HEAD"]),
        *viewer_routes(lambda: list(lib.books.values()), lambda: app.state.viewer_options),
        Route("/search", server.search, methods=["GET", "HEAD"]),
        Route("/suggest", server.suggest, methods=["GET", "HEAD"]),
        Route("/random", server.random, methods=["GET", "HEAD"]),
        Route("/catalog/v2/entries", server.catalog_entries, methods=["GET", "HEAD"]),
        Route("/catalog/v2/root.xml", server.catalog_root, methods=["GET", "HEAD"]),
        Route("/catalog/v2/illustration/{uuid}", server.illustration, methods=["GET", "HEAD"]),
        Route("/catalog/v2/illustration/{uuid}/", server.illustration, methods=["GET", "HEAD"]),
        Route("/download/{file}", server.download, methods=["GET", "HEAD"]),
        Route("/content/{book}", server.book_root, methods=["GET", "HEAD"]),
        Route("/content/{book}/{path:path}", server.content, methods=["GET", "HEAD"]),
        Route("/raw/{book}/content/{path:path}", server.raw_content, methods=["GET", "HEAD"]),
        Route("/raw/{book}/meta/{name}", server.raw_meta, methods=["GET", "HEAD"]),
        Route("/{book}", server.book_root, methods=["GET", "HEAD"]),
        Route("/{book}/{path:path}", server.legacy_content, methods=["GET", "HEAD"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPError: on_http_error, HTTPException: on_http_error,
                                        Exception: on_http_error})
    app.state.server = server
    app.state.viewer_options = ViewerOptions()
    app.add_middleware(_Guard, limits=lim)
    return app

