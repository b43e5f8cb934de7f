"""Reading: the viewer (``/viewer#BOOK/PATH``) and the page an external link is caught
on (``/catch/external``); the library without JavaScript (``/nojs``) is
:mod:`libzim.serve.librarypage`'s.

The viewer is one static page per configuration: a toolbar (search with
type-ahead, the book's main page, the library, a random article) over a frame
that shows ``/content/...`` as it is; its script (viewer_assets.py) keeps the
address bar on the frame's article. Every page here escapes what it echoes
and is sent with a Content-Security-Policy allowing only what it needs: the
viewer runs its own script file (no inline script), fetches from and frames
this server only; the plain pages run no script at all.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import pages
from .core import GET, NO_CACHE, HTTPError, Options, Server, bytes_response, endpoint, root_of
from .viewer_assets import ASSET_VERSION, VIEWER_CSS, VIEWER_JS

__all__ = ["routes", "viewer_page", "catch_page", "viewer_url", "linkable",
           "VIEWER_CSP", "PAGE_CSP"]

# The viewer: its own script and stylesheet, fetches (/suggest, book titles) and
# frames (/content, /search) from this server, images only from it (none today).
VIEWER_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
              "frame-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'self'")
# /nojs and /catch/external: no script, the stylesheet, the books' illustrations, GET forms to this server.
PAGE_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
            "object-src 'none'; frame-ancestors 'self'")
MAX_SOURCE_CHARS = 4096  # a longer /catch/external?source= is a 400, not a page


def viewer_url(book: str, path: str = "", root: str = "") -> str:
    """The viewer's URL of an entry (``ROOT/viewer#BOOK/PATH``), segments percent-encoded
    as in content_url, so the frame's URL is the entry's ``/content/`` URL."""
    return f"{quote(root, safe='/')}/viewer#{quote(book, safe='')}/{quote(path, safe='/')}"


_ICONS = {  # 24x24 outlines, drawn for this project
    "library": '<path d="M4 4h4v16H4zM10 4h4v16h-4z"/><path d="M15.5 5.2l3.9-1 3.1 15.3-3.9 1z"/>',
    "home": '<path d="M3 11.5L12 4l9 7.5"/><path d="M5.5 10v10h4.5v-6h4v6h4.5V10"/>',
    "random": ('<rect x="3.5" y="3.5" width="17" height="17" rx="3"/><circle class="dot" cx="8.5" cy="8.5" r="1.5"/>'
               '<circle class="dot" cx="12" cy="12" r="1.5"/><circle class="dot" cx="15.5" cy="15.5" r="1.5"/>'),
}


def _icon(name: str) -> str:
    return (f'<svg class="zv-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">{_ICONS[name]}</svg>')


def _head(title: str, root: str, html_class: str = "") -> str:
    cls = f' class="{html_class}"' if html_class else ""
    return (f'<!DOCTYPE html>\n<html lang="en"{cls}><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{pages.esc(title)}</title>'
            f'<link rel="icon" href="{pages.esc(root)}/favicon.ico">'
            f'<link rel="stylesheet" href="{pages.esc(root)}/skin/viewer.css?v={ASSET_VERSION}">')


def viewer_page(options: Options, root: str = "") -> str:
    """The viewer's HTML: the toolbar's parts the options keep, an empty frame the
    script fills from the URL's hash, and a note for browsers without JavaScript."""
    r = pages.esc(quote(root, safe="/"))
    library = (f'<a id="zv-library" class="zv-btn" href="{r}/" accesskey="l" title="The library: every book (Alt+Shift+L)">'
               f'{_icon("library")}<span class="zv-label">Library</span></a>') if options.library_button else ""
    home = (f'<a id="zv-home" class="zv-btn" href="{r}/" target="zv-frame" accesskey="h" hidden '
            f'title="Main page of this book (Alt+Shift+H)">{_icon("home")}'
            '<span class="zv-label" id="zv-book"></span><span class="zv-hide">: main page</span></a>')
    search = (f'<form id="zv-search" role="search" method="get" action="{r}/search" target="zv-frame">'
              '<input type="hidden" name="books.name" id="zv-search-book" disabled>'
              '<input id="zv-q" name="pattern" type="search" autocomplete="off" spellcheck="false" accesskey="s" '
              'role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="zv-suggestions" '
              'placeholder="Search" aria-label="Search (press / to come here)" maxlength="1000">'
              '<ul id="zv-suggestions" role="listbox" aria-label="Suggestions" hidden></ul>'
              '</form>') if options.search_bar else '<span class="zv-gap"></span>'
    random = (f'<a id="zv-random" class="zv-btn" href="{r}/" target="zv-frame" accesskey="r" hidden '
              f'title="A random article of this book (Alt+Shift+R)">{_icon("random")}'
              '<span class="zv-label">Random</span></a>')
    return (
        _head("Library", root, "zv-viewer")
        + f'<script src="{r}/skin/viewer.js?v={ASSET_VERSION}" defer></script></head>\n'
        f'<body class="zv-viewer" data-root="{r}" data-block-external="{int(options.block_external)}">\n'
        f'<nav id="zv-bar" aria-label="Reading">{library}{home}{search}{random}</nav>\n'
        + _noscript(options, r)
        # One main landmark and a heading for the page (axe: landmark-one-main, page-has-heading-one).
        + '<main class="zv-main"><h1 class="zv-hide">Reader</h1>'
        '<iframe id="zv-frame" name="zv-frame" title="Article"></iframe></main>\n</body></html>\n'
    )


def _noscript(options: Options, r: str) -> str:
    if options.block_external:  # -b: articles open only here, where their links are looked at in script
        return ('<noscript><p class="zv-noscript">This reader needs JavaScript. This server lets no link leave '
                'the library without a warning, and the reader gives it in script, so without JavaScript articles '
                f'do not open here. <a href="{r}/nojs">The library for browsers without JavaScript</a> lists the '
                'books.</p></noscript>\n')
    return ('<noscript><p class="zv-noscript">This reader needs JavaScript. Without it, '
            f'<a href="{r}/nojs">the library for browsers without JavaScript</a> opens the articles as they are.'
            '</p></noscript>\n')


def linkable(url: str) -> bool:
    """Whether the catch page may link to ``url``: a web address (http, https, with a host)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc) and url == url.strip() \
        and url.isprintable()


def catch_page(source: str, root: str = "") -> str:
    """``/catch/external``: the link leaves the library; the address shown as text,
    and linked only when it is a web address (never javascript:, data:, ...)."""
    r = pages.esc(quote(root, safe="/"))
    shown = pages.esc(source)
    if linkable(source):
        follow = (f'<p>If you are online and trust it, <a id="zv-follow" href="{shown}" rel="noopener noreferrer">'
                  'open it</a>.</p>')
    else:
        follow = "<p>It is not a web address, so it is not linked.</p>"
    return (_head("This link leaves the library", root) + '</head>\n<body><main class="zv-page">'
            '<h1>This link leaves the library</h1>'
            '<p>The article links to an address outside this library:</p>'
            f'<p><code class="zv-url">{shown}</code></p>{follow}'
            f'<p>To keep reading, go back in your browser or open <a href="{r}/">the library</a>.</p>'
            '</main></body></html>\n')


def _send(request: Request, body: str | bytes, mimetype: str, csp: str | None, cache: str,
          status: int = 200, etag: str | None = None) -> Response:
    data = body.encode("utf-8") if isinstance(body, str) else body
    headers = {"Cache-Control": cache, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
    if csp:
        headers["Content-Security-Policy"] = csp
    if status == 200 and etag is None and cache == NO_CACHE:  # a generated page: gzipped and tagged as the others
        r = bytes_response(request, data, mimetype)
        r.headers.update(headers)
        return r
    if etag:
        headers["ETag"] = etag
        inm = request.headers.get("if-none-match", "")
        if etag in [t.strip().removeprefix("W/") for t in inm.split(",")]:
            return Response(status_code=304, headers=headers)
    r = Response(data, status_code=status, media_type=mimetype, headers=headers)
    if request.method == "HEAD":
        r.body = b""
    return r


_ASSETS = {
    "viewer.js": (VIEWER_JS.encode(), "application/javascript; charset=utf-8"),
    "viewer.css": (VIEWER_CSS.encode(), "text/css; charset=utf-8"),
}
ASSET_NAMES = tuple(_ASSETS)  # what /skin/{name} answers (the fast path takes only these)


def _error(request: Request, status: int, title: str, message: str) -> Response:
    return _send(request, pages.error_page(status, title, message, root_of(request)), "text/html; charset=utf-8",
                 PAGE_CSP, NO_CACHE, status)


async def viewer(server: Server, request: Request) -> Response:
    """``/viewer``: one page for every book and article (the hash, which the server
    never sees, says which)."""
    return _send(request, viewer_page(server.options, root_of(request)), "text/html; charset=utf-8", VIEWER_CSP,
                 NO_CACHE)


async def asset(server: Server, request: Request) -> Response:
    """``/skin/viewer.js``, ``/skin/viewer.css``: cached for good (the viewer names them by version)."""
    found = _ASSETS.get(request.path_params["name"])
    if found is None:
        return _error(request, 404, "Content not found", "No such file.")
    data, mimetype = found
    etag = '"' + hashlib.blake2b(data, digest_size=8).hexdigest() + '"'
    return _send(request, data, mimetype, None, "max-age=31536000, public, immutable", etag=etag)


def _default_icon(size: int = 32) -> bytes:
    """A small PNG (an open book, white on the viewer's blue), made once at import: a browser asks
    every site for /favicon.ico, and a 404 there is a failed request in every page's log."""
    import struct
    import zlib

    rows = []
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            edge = min(x, y, size - 1 - x, size - 1 - y)
            page = 7 <= y <= size - 8 and 5 <= x <= size - 6 and x != size // 2
            rgba = (255, 255, 255, 255) if page else (45, 109, 181, 255 if edge >= 1 else 160)
            row.extend(rgba)
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
            + chunk(b"IEND", b""))


DEFAULT_ICON = _default_icon()


async def favicon(server: Server, request: Request) -> Response:
    """``/favicon.ico``: the book's 48-pixel illustration when the library holds one book that has
    one, else a small default (issue 39: every page's automatic request for it was a 404)."""
    from .catalog import _illustration

    body, mimetype = DEFAULT_ICON, "image/png"
    books = list(server.library.books.values())
    if len(books) == 1:
        try:
            body, mimetype = await server.run(_illustration, books[0], 48)
        except HTTPError:
            pass  # no illustration: the default
    etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
    return _send(request, body, mimetype or "image/png", None, "max-age=86400, public", etag=etag)


async def catch_external(server: Server, request: Request) -> Response:
    """``/catch/external?source=URL``: where ``-b`` sends a link out of the library."""
    source = request.query_params.get("source", "")
    if not source.strip():  # kiwix-serve: 404 without a source
        return _error(request, 404, "Content not found", "No external link was given (source=...).")
    if len(source) > MAX_SOURCE_CHARS:
        return _error(request, 400, "Invalid request", f"The address is longer than {MAX_SOURCE_CHARS} characters.")
    resp = _send(request, catch_page(source, root_of(request)), "text/html; charset=utf-8", PAGE_CSP, NO_CACHE)
    resp.headers["Referrer-Policy"] = "no-referrer"  # the site linked to does not learn where the reader was
    return resp


def routes(server: Server) -> list[Route]:
    """The reading routes: ``/viewer``, its ``/skin/`` files, ``/catch/external``."""
    return [
        Route("/viewer", endpoint(server, viewer), methods=GET),
        Route("/skin/{name}", endpoint(server, asset), methods=GET),
        Route("/catch/external", endpoint(server, catch_external), methods=GET),
        Route("/favicon.ico", endpoint(server, favicon), methods=GET),
    ]
