"""Archive content: ``/content/BOOK/PATH`` (and kiwix-serve 3.3's ``/BOOK/PATH``),
``/raw/BOOK/content|meta/...``, ``/random``, ``/download/BOOK.zim``; ETags,
conditional requests and byte ranges."""

from __future__ import annotations

import hashlib
import re
import uuid as uuidlib
from typing import AsyncIterator, cast
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Scope, Send

from libzim import ZimError

from .core import (GET, GZIP_ABOVE, HTTPError, Server, accepts_gzip, compressible, endpoint, error_response, gzip_bytes,
                   join, redirect, root_of, scope_takes_gzip)
from .library import Book, resolve
from .viewer import viewer_url

__all__ = ["parse_range", "parse_ranges", "routes", "send_bytes"]

STREAM_ABOVE = 1 << 20  # content larger than this is sent in chunks from the binding's memoryview
STREAM_CHUNK = 256 << 10
# What a kept answer costs beside its bytes (key, tuples, MIME type and ETag strings, the
# dict's slot), counted against --answer-cache: ~450 bytes and the path's (sys.getsizeof).
ANSWER_OVERHEAD = 512
MAX_RANGES = 16  # more ranges in one request: the whole content (200), as RFC 9110 allows
CONTENT_CACHE = "max-age=3600, must-revalidate"  # what the newest kiwix-serve sends for archive content
# The newest kiwix-serve's policy for /content: the article cannot navigate the
# page it is framed in (the viewer) nor reach other origins; no Referer leaves.
CONTENT_CSP = ("default-src 'self' data: blob: about: 'unsafe-inline' 'unsafe-eval'; "
               "sandbox allow-scripts allow-same-origin allow-modals allow-popups "
               "allow-popups-to-escape-sandbox allow-forms allow-downloads;")
# With -b, forms in an article may not send the reader to another site either (the
# viewer catches links on click; a form's submission it does not see).
CONTENT_CSP_BLOCKED = CONTENT_CSP + " form-action 'self';"
# With -b, a browser opening one of these at the top of a tab (not in the viewer's
# frame) is sent to the viewer, which catches the links that leave the library.
LINKING_TYPES = ("text/html", "application/xhtml+xml", "image/svg+xml", "application/pdf")
_MIME_OK = re.compile(r"^[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}( *;[ -~]{0,128})?$")


def etag_of(*parts: str) -> str:
    """A strong ETag for what ``parts`` name (book UUID first: a new archive, new tags)."""
    key = "/".join(parts).encode("utf-8", "surrogatepass")
    return '"' + hashlib.blake2b(key, digest_size=12).hexdigest() + '"'


Found = tuple[bytes | memoryview, str, str, bytes | None]
Kept = tuple[bytes | None, str, str, bytes | None]  # a kept answer: content None when only its gzip is kept


def _lookup(book: Book, path: str, gzip_ok: bool = False) -> str | Found:
    """The redirect target's path, or (content, mimetype, etag, gzipped content or None);
    raises HTTPError 404. Large content stays the binding's memoryview (no copy): it is
    streamed in chunks. Compression happens here, on the worker, when ``gzip_ok``."""
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
    mimetype = item.mimetype
    packed = gzip_bytes(content) if gzip_ok and len(content) > GZIP_ABOVE and compressible(mimetype) else None
    return content, mimetype, etag_of(book.archive_uuid or book.uuid, path), packed


def _recent(server: Server, book: Book, path: str, gzip_ok: bool) -> str | Found | None:
    """The answer kept for ``path`` of this very Book (server.answers), if it serves this
    request: not when gzip is asked and worth it but was not made yet, nor when only the
    gzip was kept (content too large to keep as it is) and the request does not take it."""
    kept = server.answers.get((book.name, path))
    if kept is None:
        return None
    owner, found = cast("tuple[Book, str | Kept]", kept)
    if owner is not book:  # another library's Book of that name (a reload): not its answer
        return None
    if isinstance(found, str):
        return found
    body, mimetype, etag, packed = found
    if body is None:  # only the gzip kept: a request without gzip (or with a range) needs the content
        return (b"", mimetype, etag, packed) if gzip_ok and packed is not None else None
    if gzip_ok and packed is None and len(body) > GZIP_ABOVE and compressible(mimetype):
        return None
    return body, mimetype, etag, packed


def _keep(server: Server, book: Book, path: str, found: str | Found) -> None:
    """Keep a worker's answer for the next request of ``path``: whole when it fits the bound per
    answer; else its gzip alone when that fits (a large page gzipped once, not per request);
    else nothing (what was kept stays)."""
    cache, key = server.answers, (book.name, path)
    over = ANSWER_OVERHEAD + 2 * len(path)
    if isinstance(found, str):
        cache.put(key, (book, found), over + 2 * len(found))
        return
    body, mimetype, etag, packed = found
    gz = len(packed) if packed is not None else 0
    if isinstance(body, bytes) and over + len(body) + gz <= cache.max_item:
        cache.put(key, (book, found), over + len(body) + gz)
    elif packed is not None and over + gz <= cache.max_item:
        cache.put(key, (book, (None, mimetype, etag, packed)), over + gz)


# A request with one of these headers needs send_bytes's whole logic (304, 206, 416).
_CONDITIONAL = frozenset((b"range", b"if-none-match", b"if-range"))


_HEADS: dict[tuple[str, bool], tuple[bytes, bool, bool]] = {}  # _head_of's, a few dozen MIME types


def _head_of(mimetype: str, raw: bool) -> tuple[bytes, bool, bool]:
    """What a kept answer's head takes from its MIME type: the Content-Type sent (as
    send_bytes checks it), whether Vary: Accept-Encoding goes with it, whether the CSP
    and Referrer-Policy do (as _content adds them). Made once per type (an archive has a
    few dozen; over 512, an archive of odd types, the table starts again)."""
    found = _HEADS.get((mimetype, raw))
    if found is None:
        sent = mimetype if _MIME_OK.match(mimetype) else "application/octet-stream"
        found = sent.encode("latin-1"), compressible(sent), not raw and not mimetype.startswith("application/pdf")
        if len(_HEADS) >= 512:
            _HEADS.clear()
        _HEADS[(mimetype, raw)] = found
    return found


_CONTENT_CACHE_B = CONTENT_CACHE.encode()
_CSP_B = CONTENT_CSP.encode()


async def send_kept(server: Server, scope: Scope, send: Send, name: str, path: str, raw: bool) -> bool:
    """A page view's usual request answered from the kept answers without Starlette's
    Request and Response: a GET of an entry (not a redirect) whose answer is kept, without
    a range or a condition, the server without ``-b``. Sends the very head and body
    ``_content`` would (tests/test_serve_fastpath.py compares them) and returns True;
    False, having sent nothing, for any other request (the full path answers it).

    Why: Starlette's Request, its header mappings, a Response and its MutableHeaders
    were half of our own code's cost for such an answer (bench/results/request-path.md)."""
    if scope["method"] != "GET" or not path or server.options.block_external:
        return False
    gzip_ok = scope_takes_gzip(scope, _CONDITIONAL)
    book = server.library.get(name) if name else None
    if gzip_ok is None or book is None or (book.name, path) not in server.answers:
        return False
    found = _recent(server, book, path, gzip_ok)
    if found is None or isinstance(found, str):
        return False
    body, mimetype, etag, packed = found
    sent, vary, csp = _head_of(mimetype, raw)
    coded = gzip_ok and packed is not None
    headers = [(b"etag", (etag[:-1] + '.gz"' if coded else etag).encode("latin-1")),
               (b"cache-control", _CONTENT_CACHE_B), (b"accept-ranges", b"bytes")]
    if vary:
        headers.append((b"vary", b"Accept-Encoding"))
    if coded and packed is not None:
        headers.append((b"content-encoding", b"gzip"))
        body = packed
    headers.append((b"content-type", sent))
    headers.append((b"content-length", str(len(body)).encode()))
    if csp:
        headers.append((b"content-security-policy", _CSP_B))
        headers.append((b"referrer-policy", b"no-referrer"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": bytes(body)})
    return True


async def content(server: Server, request: Request) -> Response:
    """``/content/BOOK/PATH`` and ``/BOOK/PATH``: the entry, or a redirect to its target."""
    return await _content(server, request, request.path_params["book"], request.path_params.get("path", ""))


async def book_root(server: Server, request: Request) -> Response:
    """``/content/BOOK`` and ``/BOOK``: a redirect to the main page."""
    return await _content(server, request, request.path_params["book"], "")


async def raw_content(server: Server, request: Request) -> Response:
    """``/raw/BOOK/content/PATH``: the entry as it is (redirects stay under /raw)."""
    return await _content(server, request, request.path_params["book"], request.path_params["path"], raw=True)


async def _content(server: Server, request: Request, name: str, path: str, raw: bool = False) -> Response:
    book = server.book(name)
    qname = quote(name, safe="")
    base = quote(root_of(request), safe="/")
    prefix = f"{base}/raw/{qname}/content/" if raw else f"{base}/content/{qname}/"
    if path == "":
        if not book.complete:  # a library file's book never opened: its main page is learnt on a worker
            await server.run(book.ensure_complete)
        if book.main_path is None:
            raise HTTPError(404, f"{name} has no main page")
        return redirect(join(prefix, book.main_path))
    # Ranges are of the content as stored: a range request is never compressed.
    gzip_ok = accepts_gzip(request) and "range" not in request.headers
    found = _recent(server, book, path, gzip_ok)
    if found is None:
        found = await server.run(_lookup, book, path, gzip_ok)
        _keep(server, book, path, found)
    if isinstance(found, str):
        return redirect(join(prefix, found))
    body, mimetype, etag, packed = found
    if not gzip_ok:  # a kept answer may hold the gzip another client asked for
        packed = None
    blocking = server.options.block_external
    if blocking and opened_in_tab(request) and mimetype.split(";")[0].strip().lower() in LINKING_TYPES:
        return _to_viewer(request, name, path)
    r = send_bytes(request, body, mimetype, etag, packed)
    if blocking:  # the answer depends on where it is opened: no cache may give a tab the frame's
        r.headers["Vary"] = ", ".join(filter(None, [r.headers.get("Vary"), "Sec-Fetch-Dest"]))
    if not raw and not mimetype.startswith("application/pdf"):  # kiwix-serve leaves PDF out (Chromium's viewer)
        r.headers["Content-Security-Policy"] = CONTENT_CSP_BLOCKED if blocking else CONTENT_CSP
        r.headers["Referrer-Policy"] = "no-referrer"
    return r


def opened_in_tab(request: Request) -> bool:
    """Whether a browser asks for the page as the top of a tab or window (its
    ``Sec-Fetch-Dest: document``), not for a frame, a fetch or a program such as curl
    (which send no such header and get the bytes as they are)."""
    return request.headers.get("sec-fetch-dest", "").strip().lower() == "document"


def _to_viewer(request: Request, name: str, path: str) -> Response:
    """``-b``: an article opened outside the viewer goes into it (its query kept; its
    #anchor the browser never sent), so its external links reach ``/catch/external``."""
    query = request.url.query
    r = redirect(viewer_url(name, path, root_of(request)) + (f"?{quote(query, safe='=&%+;/:,')}" if query else ""))
    r.headers["Vary"] = "Sec-Fetch-Dest"
    return r


def _meta(book: Book, name: str) -> tuple[bytes, str]:
    try:
        item = book.archive.get_metadata_item(name)
        return bytes(item.content), item.mimetype
    except (KeyError, ValueError):
        raise HTTPError(404, f"No metadata {name} in {book.name}") from None


async def raw_meta(server: Server, request: Request) -> Response:
    """``/raw/BOOK/meta/NAME``: one metadata item."""
    book = server.book(request.path_params["book"])
    body, mimetype = await server.run(_meta, book, request.path_params["name"])
    if mimetype.startswith("text/plain") or not mimetype:
        mimetype = "text/plain;charset=UTF-8"
    etag = etag_of(book.archive_uuid or book.uuid, "meta", request.path_params["name"])
    return send_bytes(request, body, mimetype, etag)


async def random(server: Server, request: Request) -> Response:
    """``/random?content=BOOK``: a redirect to a random article."""
    book = server.book(request.query_params.get("content"))

    def pick() -> str:
        try:
            return book.archive.get_random_entry().path
        except (KeyError, ZimError):
            raise HTTPError(404, f"{book.name} has no article to pick") from None

    prefix = f"{quote(root_of(request), safe='/')}/content/{quote(book.name, safe='')}/"
    return redirect(join(prefix, await server.run(pick)))


async def download(server: Server, request: Request) -> Response:
    """The book's .zim file (only with downloads on): Starlette's FileResponse, which
    answers ranges (resumed downloads), HEAD and conditional requests itself and
    reads the file in its worker threads, not ours."""
    name = str(request.path_params["file"])
    book = server.library.books.get(name.removesuffix(".zim")) if name.endswith(".zim") else None
    if not server.options.downloads or book is None or book.file is None:
        raise HTTPError(404, f"No download {name}")
    return FileResponse(book.file, media_type="application/x-zim", filename=book.file.name,
                        headers={"Cache-Control": "max-age=86400, public"})


def send_bytes(request: Request, body: bytes | memoryview, mimetype: str, etag: str,
               packed: bytes | None = None, cache: str = CONTENT_CACHE) -> Response:
    """Content with its ETag: 304 when the client has it, 206/416 for ranges, else 200;
    ``packed``: the content gzipped (sent, with its own ETag, when there is no range)."""
    if not _MIME_OK.match(mimetype):
        mimetype = "application/octet-stream"
    gz_etag = etag[:-1] + '.gz"'
    headers = {"ETag": etag, "Cache-Control": cache, "Accept-Ranges": "bytes"}
    if compressible(mimetype):
        headers["Vary"] = "Accept-Encoding"
    rng = request.headers.get("range")
    if packed is not None and rng is None:
        headers["ETag"], headers["Content-Encoding"] = gz_etag, "gzip"
    inm = request.headers.get("if-none-match")
    if inm is not None:
        tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
        if inm.strip() == "*" or etag in tags or gz_etag in tags:  # the same content, either coding
            headers.pop("Content-Encoding", None)
            return Response(status_code=304, headers=headers)
    if "Content-Encoding" in headers and packed is not None:
        return _bytes_response(packed, 200, mimetype, headers, request.method == "HEAD")
    head = request.method == "HEAD"
    size = len(body)
    if rng is not None and _range_applies(request, etag):
        spans = parse_ranges(rng, size)
        if spans == "unsatisfiable":
            r = error_response(416, "The requested range is outside the content.", head, root_of(request))
            r.headers["Content-Range"] = f"bytes */{size}"
            return r
        if isinstance(spans, list) and len(spans) == 1:
            lo, hi = spans[0]
            headers["Content-Range"] = f"bytes {lo}-{hi}/{size}"
            return _bytes_response(body[lo:hi + 1], 206, mimetype, headers, head)
        if isinstance(spans, list):
            return _multipart_response(body, spans, mimetype, headers, head)
    return _bytes_response(body, 200, mimetype, headers, head)


def _range_applies(request: Request, etag: str) -> bool:
    ir = request.headers.get("if-range")
    return ir is None or ir.strip() == etag


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


def _multipart_response(body: bytes | memoryview, spans: list[tuple[int, int]], mimetype: str,
                        headers: dict[str, str], head: bool) -> Response:
    """206 multipart/byteranges: one part per range, each with its Content-Type and Content-Range."""
    boundary = uuidlib.uuid4().hex
    size = len(body)
    pieces: list[bytes | memoryview] = []
    for lo, hi in spans:
        pieces.append(f"--{boundary}\r\nContent-Type: {mimetype}\r\nContent-Range: bytes {lo}-{hi}/{size}\r\n\r\n"
                      .encode("latin-1"))
        pieces.append(body[lo:hi + 1])
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


def routes(server: Server) -> list[Route]:
    """The content routes (``/BOOK/PATH``, the catch-all, comes last: see ``tail_routes``)."""
    return [
        Route("/random", endpoint(server, random), methods=GET),
        Route("/download/{file}", endpoint(server, download), methods=GET),
        Route("/content/{book}", endpoint(server, book_root), methods=GET),
        Route("/content/{book}/{path:path}", endpoint(server, content), methods=GET),
        Route("/raw/{book}/content/{path:path}", endpoint(server, raw_content), methods=GET),
        Route("/raw/{book}/meta/{name}", endpoint(server, raw_meta), methods=GET),
    ]


# The first segments that name an endpoint (libkiwix's isEndpointUrl): a URL under one of
# them that no route took is a 404, never a redirect to /content/ (the newest kiwix-serve).
ENDPOINTS = frozenset({"catalog", "catch", "content", "nojs", "random", "raw", "search", "skin", "suggest",
                       "viewer"})


async def to_content(server: Server, request: Request) -> Response:
    """Any other URL ``/X`` (kiwix-serve 3.3's ``/BOOK/PATH`` among them): a redirect to
    ``/content/X``, its query kept, as the newest kiwix-serve; 404 under an endpoint's name."""
    rest = request.path_params.get("rest", "")
    first = rest.split("/", 1)[0]
    if first in ENDPOINTS or (first == "download" and server.downloads):
        raise HTTPError(404, "No such page.")
    query = request.url.query
    target = f"{quote(root_of(request), safe='/')}/content/{quote(rest, safe='/')}"
    return redirect(target + ("?" + quote(query, safe="&=+%;,/:@") if query else ""))


def tail_routes(server: Server) -> list[Route]:
    """Every URL no other route took: after every other route (it matches anything)."""
    return [Route("/{rest:path}", endpoint(server, to_content), methods=GET)]
