"""The OPDS catalog (``/catalog/v2/...`` and the legacy ``/catalog/...``), the book
illustrations and the library page ``/``; the book filters that ``/search``'s
``books.filter.*`` share."""

from __future__ import annotations

from urllib.parse import quote

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from libzim import ZimError

from . import opds, pages
from .content import etag_of, send_bytes
from .core import GET, NO_CACHE, HTTPError, Server, endpoint, root_of, text_response
from .library import Book

__all__ = ["filter_books", "routes"]

MAX_COUNT = 100_000  # count=-1 (all) is this many at most


def filter_books(server: Server, books: list[Book], q: QueryParams, prefix: str = "") -> list[Book]:
    """libkiwix's catalog filter: ``lang`` (comma-separated; a book of several languages
    matches any), ``category``, ``tag`` / ``notag`` (``;``-separated: all / none of
    them), ``maxsize`` (bytes), ``name`` (the book's Name), ``q`` (every word in its
    title, description, ...); each parameter name after ``prefix``."""
    def get(name: str) -> str | None:
        v = q.get(prefix + name)
        if v is not None and len(v) > server.limits.max_query_chars:
            raise HTTPError(400, f"{prefix}{name} is longer than {server.limits.max_query_chars} characters.")
        return v

    lang, category, name, query = get("lang"), get("category"), get("name"), get("q")
    tags, notags, maxsize = get("tag"), get("notag"), get("maxsize")
    if lang:
        wanted = {x.strip() for x in lang.split(",") if x.strip()}
        books = [b for b in books if wanted & {x.strip() for x in b.language.split(",")}]
    if category:
        books = [b for b in books if b.category == category]
    if name:
        books = [b for b in books if (b.meta_name or b.name) == name]
    if tags:
        need = {t for t in tags.split(";") if t}
        books = [b for b in books if need <= set(b.tag_list())]
    if notags:
        refuse = {t for t in notags.split(";") if t}
        books = [b for b in books if not refuse & set(b.tag_list())]
    if maxsize:
        if not maxsize.isdigit() or len(maxsize) > 18:
            raise HTTPError(400, f"Invalid value of {prefix}maxsize: {maxsize[:40]}")
        books = [b for b in books if b.size <= int(maxsize)]
    if query and query.strip():
        books = [b for b in books if b.matches(query)]
    return books


def by_title(books: list[Book]) -> list[Book]:
    """The books in kiwix-serve's catalog order: by title, case and punctuation ignored
    ("Charles, Ray" < "Ray Charles" < "Ray (uncategorized) Charles")."""
    return sorted(books, key=lambda b: ("".join(c for c in b.title.casefold() if c.isalnum()), b.title, b.name))


def _page_of(server: Server, request: Request) -> tuple[list[Book], int, int, str]:
    """The filtered books of this request's page, their total, the start, the query string."""
    lib = server.library
    books = filter_books(server, by_title(list(lib.books.values())), request.query_params)
    start = server.int_param(request, "start", 0, 0)
    count = server.int_param(request, "count", 10, -1, MAX_COUNT)
    if count < 0:
        count = MAX_COUNT
    return books[start:start + count], len(books), start, request.url.query


def _content_root(server: Server, request: Request) -> str | None:
    """Where the catalog's content links point: --contentServerURL, else here (none
    with --catalogOnly)."""
    if server.options.content_server_url:
        return server.options.content_server_url
    return None if server.options.catalog_only else quote(root_of(request), safe="/")


def library_id(server: Server) -> str:
    """This server and library's id: it changes when the library is reloaded."""
    return f"{server.feed_id}.{id(server.library):x}"


async def catalog_entries(server: Server, request: Request, partial: bool = False,
                          legacy: bool = False) -> Response:
    """``/catalog/v2/entries`` and ``partial_entries``: the books, filtered, a page of them."""
    books, total, start, query = _page_of(server, request)
    body = opds.entries_feed(books, library_id(server), total, start, query, root_of(request),
                             _content_root(server, request), partial=partial, downloads=server.options.downloads,
                             endpoint="/catalog" if legacy else "/catalog/v2")
    return text_response(request, body, opds.ACQUISITION)


async def catalog_partial(server: Server, request: Request) -> Response:
    """``/catalog/v2/partial_entries``: the entries, each a title and a link to its complete entry."""
    return await catalog_entries(server, request, partial=True)


async def catalog_legacy_search(server: Server, request: Request) -> Response:
    """The legacy ``/catalog/search`` (OPDS v1): the v2 entries' feed."""
    return await catalog_entries(server, request, legacy=True)


async def catalog_legacy_root(server: Server, request: Request) -> Response:
    """The legacy ``/catalog/root.xml``: every book, one feed."""
    books = by_title(list(server.library.books.values()))
    body = opds.entries_feed(books, library_id(server), len(books), 0, "", root_of(request),
                             _content_root(server, request), downloads=server.options.downloads, endpoint="/catalog")
    return text_response(request, body, opds.ACQUISITION)


async def catalog_entry(server: Server, request: Request) -> Response:
    """``/catalog/v2/entry/UUID``: one book's complete entry."""
    book = server.library.by_uuid(request.path_params["uuid"])
    if book is None:
        raise HTTPError(404, f"No book with id {request.path_params['uuid']}")
    body = opds.entry_document(book, root_of(request), _content_root(server, request), server.options.downloads)
    return text_response(request, body, opds.ENTRY)


async def catalog_root(server: Server, request: Request) -> Response:
    """``/catalog/v2/root.xml``: the navigation feed."""
    return text_response(request, opds.root_feed(library_id(server), root_of(request)), opds.NAVIGATION)


async def catalog_categories(server: Server, request: Request) -> Response:
    """``/catalog/v2/categories``: the books' categories, sorted."""
    cats = sorted({b.category for b in server.library.books.values() if b.category})
    return text_response(request, opds.categories_feed(cats, library_id(server), root_of(request)), opds.NAVIGATION)


async def catalog_languages(server: Server, request: Request) -> Response:
    """``/catalog/v2/languages``: each language code and how many books have it."""
    counts: dict[str, int] = {}
    for b in server.library.books.values():
        for code in {x.strip() for x in b.language.split(",") if x.strip()}:
            counts[code] = counts.get(code, 0) + 1
    body = opds.languages_feed(sorted(counts.items()), library_id(server), root_of(request))
    return text_response(request, body, opds.NAVIGATION)


async def catalog_searchdescription(server: Server, request: Request) -> Response:
    """``/catalog/v2/searchdescription.xml`` (and the legacy one): how to search the catalog."""
    return text_response(request, opds.searchdescription(root_of(request), "catalog"), opds.OPENSEARCH)


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
    etag = etag_of(book.archive_uuid or book.uuid, "illustration", str(size))
    # kiwix-serve: the library's (not the archive's), so revalidated as its other documents
    return send_bytes(request, body, mimetype or "image/png", etag, cache=NO_CACHE)


async def home(server: Server, request: Request) -> Response:
    """``/``: the library page (or ``--customIndex``'s page)."""
    if server.options.custom_index is not None:
        return text_response(request, server.options.custom_index, "text/html; charset=utf-8")
    books = sorted(server.library.books.values(), key=lambda b: (b.title.lower(), b.name))
    return text_response(request, pages.library_page(books, root_of(request)), "text/html; charset=utf-8")


def routes(server: Server) -> list[Route]:
    """The library page, the OPDS catalog and illustrations."""
    table = [
        ("/", home),
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
        ("/catalog/searchdescription.xml", catalog_searchdescription),
    ]
    return [Route(path, endpoint(server, fn), methods=GET) for path, fn in table]
