"""The OPDS catalog (``/catalog/v2/...`` and the legacy ``/catalog/...``) and the book
illustrations; the book filters that ``/search``'s ``books.filter.*`` and the library
page (:mod:`libzim.serve.librarypage`) share."""

from __future__ import annotations

from urllib.parse import quote

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from libzim import ZimError

from . import bookquery, opds, pages
from .core import GET, HTTPError, Server, bytes_response, endpoint, library_generation, root_of, text_response
from .library import Book

__all__ = ["filter_books", "routes"]

MAX_COUNT = 100_000  # count=-1 (all) is this many at most


def filter_books(server: Server, q: QueryParams, prefix: str = "", remote: bool | None = None) -> list[Book]:
    """libkiwix's catalog filter (:mod:`libzim.serve.bookquery`): ``q`` (its query
    language), ``lang`` and ``category`` (comma-separated alternatives), ``tag`` /
    ``notag`` (``;``-separated: all / none of them), ``name``, ``flavour``,
    ``publisher``, ``creator``, ``maxsize`` (bytes); each parameter name after
    ``prefix``. In libkiwix's order. Remote books (no local file) only in catalog-only
    mode, as kiwix-serve (``remote`` says otherwise)."""
    def get(name: str) -> str | None:
        v = q.get(prefix + name)
        if v is not None and len(v) > server.limits.max_query_chars:
            raise HTTPError(400, f"{prefix}{name} is longer than {server.limits.max_query_chars} characters.")
        return v

    params = {k: get(k) for k in bookquery.FILTER_PARAMS}
    maxsize = get("maxsize")
    limit = None
    if maxsize:  # kiwix ignores a value it cannot read as a number
        limit = int(maxsize) if maxsize.isdigit() and len(maxsize) <= 18 else None
    if remote is None:
        remote = server.options.catalog_only
    try:
        return bookquery.index_of(server.library).select(params, remote, limit)  # type: ignore[return-value]
    except ValueError as e:
        raise HTTPError(400, f"Cannot read this catalog query: {e}") from None


def _page_of(server: Server, request: Request) -> tuple[list[Book], int, int, str]:
    """The filtered books of this request's page, their total, the start, the query string."""
    books = filter_books(server, request.query_params)
    start = server.int_param(request, "start", 0, 0)
    count = server.int_param(request, "count", 10, -1, MAX_COUNT)
    if count < 0:
        count = MAX_COUNT
    return books[start:start + count], len(books), start, kiwix_query(request)


def kiwix_query(request: Request) -> str:
    """The request's query string as kiwix-serve writes it back (feed titles, self links):
    each name and value decoded, then percent-encoded but for letters, digits and
    ``-_.!~*'()/`` (libkiwix's urlEncode), in the request's order."""
    def enc(text: str) -> str:
        return quote(text, safe="-_.!~*'()/")
    return "&".join(f"{enc(k)}={enc(v)}" for k, v in request.query_params.multi_items())


def _content_root(server: Server, request: Request) -> str | None:
    """Where the catalog's content links point: --contentServerURL, else here (none
    with --catalogOnly)."""
    if server.options.content_server_url:
        return server.options.content_server_url
    return None if server.options.catalog_only else quote(root_of(request), safe="/")


def library_id(server: Server) -> str:
    """This server and library's id: it changes when the library is reloaded."""
    return f"{server.feed_id}.{library_generation(server.library)}"


async def catalog_entries(server: Server, request: Request, partial: bool = False) -> Response:
    """``/catalog/v2/entries`` and ``partial_entries``: the books, filtered, a page of them."""
    books, total, start, query = await server.run(_page_of, server, request)  # the index: off the loop
    body = opds.entries_feed(books, library_id(server), total, start, query, root_of(request),
                             _content_root(server, request), partial=partial, downloads=server.options.downloads)
    return text_response(request, body, opds.ACQUISITION)


async def catalog_partial(server: Server, request: Request) -> Response:
    """``/catalog/v2/partial_entries``: the entries, each a title and a link to its complete entry."""
    return await catalog_entries(server, request, partial=True)


async def catalog_legacy_search(server: Server, request: Request) -> Response:
    """The legacy ``/catalog/search`` (OPDS v1)."""
    books, total, start, query = await server.run(_page_of, server, request)  # the index: off the loop
    body = opds.legacy_feed(books, library_id(server), total, start, query, root_of(request),
                            _content_root(server, request), downloads=server.options.downloads)
    return text_response(request, body, opds.ACQUISITION)


async def catalog_legacy_root(server: Server, request: Request) -> Response:
    """The legacy ``/catalog/root.xml``: the local books a library file gives a download
    URL, one feed (kiwix-serve's selection)."""
    # kiwix: Filter().valid(true).local(true).remote(true), the local books that have a url
    books = [b for b in await server.run(filter_books, server, QueryParams(""), "", False) if b.url]
    body = opds.legacy_feed(books, library_id(server), len(books), 0, None, root_of(request),
                            _content_root(server, request), downloads=server.options.downloads)
    return text_response(request, body, opds.ACQUISITION)


async def catalog_entry(server: Server, request: Request) -> Response:
    """``/catalog/v2/entry/UUID``: one book's complete entry (a remote book's in catalog-only mode)."""
    uuid = request.path_params["uuid"]
    book = server.library.by_uuid(uuid)
    if book is None and server.options.catalog_only:
        book = next((r for r in getattr(server.library, "remote", ()) if r.uuid == uuid), None)
    if book is None:
        raise HTTPError(404, f"No book with id {request.path_params['uuid']}")
    body = opds.entry_document(book, root_of(request), _content_root(server, request), server.options.downloads)
    return text_response(request, body, opds.ENTRY)


async def catalog_root(server: Server, request: Request) -> Response:
    """``/catalog/v2/root.xml``: the navigation feed."""
    return text_response(request, opds.root_feed(library_id(server), root_of(request)), opds.NAVIGATION)


async def _all_books(server: Server) -> list[object]:
    """Every book the catalog knows, local and remote (kiwix counts both in its lists); the
    index is built on a worker (2.5 s at 10,000 books: not on the event loop)."""
    return (await server.run(bookquery.index_of, server.library)).books


async def catalog_categories(server: Server, request: Request) -> Response:
    """``/catalog/v2/categories``: the books' categories (remote books' too), sorted."""
    cats = sorted({b.category for b in await _all_books(server) if b.category})  # type: ignore[attr-defined]
    return text_response(request, opds.categories_feed(cats, library_id(server), root_of(request)), opds.NAVIGATION)


async def catalog_languages(server: Server, request: Request) -> Response:
    """``/catalog/v2/languages``: each language, its own name and how many books have it."""
    counts: dict[str, int] = {}
    for b in await _all_books(server):
        for code in {x.strip() for x in b.language.split(",") if x.strip()}:  # type: ignore[attr-defined]
            counts[code] = counts.get(code, 0) + 1
    rows = [(code, bookquery.language_self_name(code), n) for code, n in sorted(counts.items())]
    body = opds.languages_feed(rows, library_id(server), root_of(request))
    return text_response(request, body, opds.NAVIGATION)


async def catalog_searchdescription(server: Server, request: Request) -> Response:
    """``/catalog/v2/searchdescription.xml``: how to search the catalog."""
    return text_response(request, opds.searchdescription(root_of(request), "catalog"), opds.OPENSEARCH)


async def catalog_legacy_searchdescription(server: Server, request: Request) -> Response:
    """The legacy ``/catalog/searchdescription.xml`` (its template is ``/catalog/search``)."""
    return text_response(request, opds.searchdescription(root_of(request), "legacy"), opds.OPENSEARCH)


def _illustration(book: Book, size: int) -> tuple[bytes, str]:
    try:
        item = book.archive.get_illustration_item(size)
        return bytes(item.content), item.mimetype
    except (KeyError, ValueError, ZimError):
        if book.favicon is not None and size == 48:
            return book.favicon
        raise HTTPError(404, f"No illustration of size {size} in {book.name}") from None


async def illustration(server: Server, request: Request) -> Response:
    """``/catalog/v2/illustration/UUID?size=N``: the book's square illustration."""
    book = server.library.by_uuid(request.path_params["uuid"])
    if book is None:
        raise HTTPError(404, f"No book with id {request.path_params['uuid']}")
    if not request.query_params.get("size"):
        raise HTTPError(404, "No illustration size was given (size=...).")
    size = server.int_param(request, "size", 48, 1, 100_000)
    body, mimetype = await server.run(_illustration, book, size)
    # kiwix-serve: the library's (not the archive's), so tagged and revalidated as its other documents
    return bytes_response(request, body, mimetype or "image/png")


async def nojs_download(server: Server, request: Request) -> Response:
    """``/nojs/download/BOOK``: the book's download links for browsers without scripts (kiwix's
    no_js_download page): its file here with ``--downloads``, else the library file's URL."""
    book = server.library.get(request.path_params["name"])
    if book is None:
        raise HTTPError(404, f"No such book: {request.path_params['name']}")
    if server.options.downloads and book.file is not None:
        url = opds.download_url(book.name, root_of(request))
    else:
        url = book.url
    links = (f'<p><a href="{pages.esc(url)}" download>Direct download</a></p>\n'
             f'<p><a href="{pages.esc(url)}.sha256" download>Download hash</a></p>\n'
             if url else "<p>This server offers no download of this book.</p>\n")
    body = ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="UTF-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
            f"<title>Download links</title>\n</head>\n<body>\n<h1>Download links of {pages.esc(book.title)}</h1>\n"
            f"{links}</body>\n</html>\n")
    return text_response(request, body, "text/html; charset=utf-8")


def routes(server: Server) -> list[Route]:
    """The OPDS catalog, illustrations and the no-script download page."""
    table = [
        ("/catalog/v2/root.xml", catalog_root),
        ("/catalog/v2/entries", catalog_entries),
        ("/catalog/v2/partial_entries", catalog_partial),
        ("/catalog/v2/entry/{uuid}", catalog_entry),
        ("/catalog/v2/categories", catalog_categories),
        ("/catalog/v2/languages", catalog_languages),
        ("/catalog/v2/searchdescription.xml", catalog_searchdescription),
        ("/catalog/v2/illustration/{uuid}", illustration),
        ("/catalog/v2/illustration/{uuid}/", illustration),
        ("/catalog/root.xml", catalog_legacy_root),
        ("/catalog/search", catalog_legacy_search),
        ("/catalog/searchdescription.xml", catalog_legacy_searchdescription),
        ("/nojs/download/{name}", nojs_download),
    ]
    return [Route(path, endpoint(server, fn), methods=GET) for path, fn in table]
