"""The OPDS catalog (``/catalog/...``), the book illustrations and the library page ``/``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from libzim import ZimError

from . import pages
from .content import etag_of, send_bytes
from .core import GET, HTTPError, Server, endpoint, root_of, text_response
from .library import Book

__all__ = ["routes"]

ACQUISITION = "application/atom+xml;profile=opds-catalog;kind=acquisition"
NAVIGATION = "application/atom+xml;profile=opds-catalog;kind=navigation"


async def catalog_entries(server: Server, request: Request) -> Response:
    """``/catalog/v2/entries``: the books, filtered, as an OPDS acquisition feed."""
    q = request.query_params
    books = list(server.library.books.values())
    if q.get("lang"):
        books = [b for b in books if b.language in q.get("lang", "").split(",")]
    if q.get("name"):
        books = [b for b in books if b.name == q.get("name")]
    query = q.get("q", "")
    if len(query) > server.limits.max_query_chars:
        raise HTTPError(400, f"The query is longer than {server.limits.max_query_chars} characters.")
    if query.strip():
        books = [b for b in books if b.matches(query)]
    start = server.int_param(request, "start", 0, 0)
    count = server.int_param(request, "count", 10_000, 0, 10_000)
    body = pages.opds_entries(books[start:start + count], server.feed_id, len(books), start, root_of(request),
                              downloads=server.options.downloads)
    return text_response(request, body, ACQUISITION)


async def catalog_root(server: Server, request: Request) -> Response:
    """``/catalog/v2/root.xml``: the navigation feed."""
    body = (
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n"
        f"  <id>{pages.esc(server.feed_id)}</id>\n  <title>OPDS Catalog Root</title>\n"
        "  <link rel=\"self\" href=\"/catalog/v2/root.xml\" "
        f"type=\"{NAVIGATION}\"/>\n"
        "  <entry>\n    <title>All entries</title>\n    <link rel=\"subsection\" href=\"/catalog/v2/entries\" "
        f"type=\"{ACQUISITION}\"/>\n  </entry>\n</feed>\n"
    )
    return text_response(request, body, NAVIGATION)


def _illustration(book: Book, size: int) -> tuple[bytes, str]:
    try:
        item = book.archive.get_illustration_item(size)
        return bytes(item.content), item.mimetype
    except (KeyError, ValueError, ZimError):
        raise HTTPError(404, f"No illustration of size {size} in {book.name}") from None


async def illustration(server: Server, request: Request) -> Response:
    """``/catalog/v2/illustration/UUID?size=N``: the book's square illustration."""
    book = server.library.by_uuid(request.path_params["uuid"])
    if book is None:
        raise HTTPError(404, f"No book with id {request.path_params['uuid']}")
    size = server.int_param(request, "size", 48, 1, 100_000)
    body, mimetype = await server.run(_illustration, book, size)
    return send_bytes(request, body, mimetype or "image/png", etag_of(book.uuid, "illustration", str(size)))


async def home(server: Server, request: Request) -> Response:
    """``/``: the library page."""
    books = sorted(server.library.books.values(), key=lambda b: (b.title.lower(), b.name))
    return text_response(request, pages.library_page(books, root_of(request)), "text/html; charset=utf-8")


def routes(server: Server) -> list[Route]:
    """The library page, the OPDS catalog and illustrations."""
    return [
        Route("/", endpoint(server, home), methods=GET),
        Route("/catalog/v2/entries", endpoint(server, catalog_entries), methods=GET),
        Route("/catalog/v2/root.xml", endpoint(server, catalog_root), methods=GET),
        Route("/catalog/v2/illustration/{uuid}", endpoint(server, illustration), methods=GET),
        Route("/catalog/v2/illustration/{uuid}/", endpoint(server, illustration), methods=GET),
    ]
