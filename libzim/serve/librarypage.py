"""The library page readers open first: ``/`` and, for browsers without scripts, ``/nojs``.

Both are one page written here from the catalog's filter (:func:`~libzim.serve.catalog.
filter_books`: the books ``/catalog/v2/entries`` would list for the same ``q``, ``lang``,
``category`` and ``tag``): a filter bar (words, language by its own name, category; a
plain GET form, every control labelled), the count, and tiles of 50 books a page (the
illustration, lazily loaded; the title, linked to the book; description, language, article
count, size, tags, download link) with paging links that keep the filters. Remote books
(a library file's books without a local file) are listed where the catalog lists them,
with their download link and no content link.

``/`` links its stylesheet and a small script (:mod:`libzim.serve.library_assets`, cached
for good under versioned URLs) and is sent with a Content-Security-Policy that allows
only them; the script opens books in the viewer and filters on a select's change, and
the page works without it. ``/nojs`` is the same page with no script at all; its links go
to ``/content/``. Both are generated pages: revalidated with the ETag of the library's
state (:func:`~libzim.serve.core.bytes_response`), gzipped when asked.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Sequence
from urllib.parse import quote, urlencode

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import bookquery, opds
from .catalog import filter_books
from .core import GET, Options, Server, bytes_response, endpoint, root_of, text_response
from .library import Book
from .library_assets import asset_response, asset_url
from .pages import esc, plural
from .viewer import PAGE_CSP, linkable

__all__ = ["LIBRARY_CSP", "PAGE_SIZE", "Listing", "human_size", "library_html", "listing", "routes"]

PAGE_SIZE = 50  # books a page: 50 tiles are ~30 KB of HTML (~6 KB gzipped)
FILTERS = ("q", "lang", "category", "tag")  # the catalog's parameters the page's form sets
MAX_PAGE = 1_000_000
# ``/``: its own stylesheet and script (files), the books' illustrations, /suggest for the
# type-ahead, GET forms to this server; nothing inline, nothing from elsewhere.
LIBRARY_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
               "form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'self'")
HTML = "text/html; charset=utf-8"


def _self_name_uncached(code: str) -> str:
    return bookquery.language_self_name(code)


# ICU's answer for a code never changes; the codes are the books' (bounded by the cache anyway).
# Wrapped here, not with @lru_cache: stubtest reads this module as its own stub and would
# compare the wrapper's (*args, **kwargs) with the function (as in libzim/dask/frame.py).
_self_name = functools.lru_cache(maxsize=1024)(_self_name_uncached)


def _codes(language: str) -> list[str]:
    return [c.strip() for c in language.split(",") if c.strip()]


def human_size(size: int) -> str:
    """A file size for readers: ``980 bytes``, ``12 kB``, ``1.4 GB`` (powers of 1000)."""
    if size < 1000:
        return plural(size, "byte")
    value = float(size)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 999.5 or unit == "TB":
            return f"{value:.1f} {unit}" if value < 9.95 else f"{value:,.0f} {unit}"
    return f"{size} bytes"  # not reached


@dataclass
class Listing:
    """What one request's page shows: its books, how many the filters keep of how many,
    which page of how many, the filters, and the languages (code, own name, books) and
    categories of every listed book for the selects."""

    books: list[Book]
    found: int
    total: int
    page: int
    pages: int
    filters: dict[str, str]
    languages: list[tuple[str, str, int]] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)


@dataclass
class _Facts:
    """What every page of one library shows alike, computed once per library (a reload
    makes a new library): its listed books by title, their ranks, languages, categories."""

    by_title: list[Book]
    rank: dict[int, int]
    languages: list[tuple[str, str, int]]
    categories: list[str]


def _facts(server: Server) -> _Facts:
    lib, remote = server.library, server.options.catalog_only
    memo: dict[bool, _Facts] | None = getattr(lib, "_library_page", None)
    if memo is None:
        memo = {}
        setattr(lib, "_library_page", memo)  # two threads may both compute it: the same value
    facts = memo.get(remote)
    if facts is None:
        every: list[Book] = filter_books(server, QueryParams(""))
        by_title = sorted(every, key=lambda b: (b.title.casefold(), b.name))
        counts: dict[str, int] = {}
        for b in every:
            for code in set(_codes(b.language)):
                counts[code] = counts.get(code, 0) + 1
        languages = sorted(((c, _self_name(c), n) for c, n in counts.items()), key=lambda t: (t[1].casefold(), t[0]))
        categories = sorted({b.category for b in every if b.category}, key=str.casefold)
        facts = memo[remote] = _Facts(by_title, {id(b): i for i, b in enumerate(by_title)}, languages, categories)
    return facts


def listing(server: Server, request: Request) -> Listing:
    """The listing of this request (blocking: the catalog's index; run it on a worker).
    400 (HTTPError) for a filter the catalog refuses or a bad ``page``."""
    q = request.query_params
    filters = {k: v for k in FILTERS if (v := q.get(k, "").strip())}
    page = server.int_param(request, "page", 1, 1, MAX_PAGE)
    facts = _facts(server)
    if not filters:
        found = facts.by_title
    else:
        found = filter_books(server, QueryParams(filters))
        if "q" not in filters:  # no words: by title (the catalog's own order is by id); with words, by relevance
            found.sort(key=lambda b: facts.rank.get(id(b), 0))
    pages = max(1, -(-len(found) // PAGE_SIZE))
    page = min(page, pages)
    return Listing(found[(page - 1) * PAGE_SIZE:page * PAGE_SIZE], len(found), len(facts.by_title), page, pages,
                   filters, facts.languages, facts.categories)


def _url(base: str, filters: dict[str, str], page: int = 1) -> str:
    pairs = list(filters.items()) + ([("page", str(page))] if page > 1 else [])
    return base + ("?" + urlencode(pairs) if pairs else "")


def _select(name: str, label: str, every: str, options: Sequence[tuple[str, str]], chosen: str) -> str:
    items = [f'<option value="">{every}</option>']
    known = False
    for value, text in options:
        sel = value == chosen
        known = known or sel
        items.append(f'<option value="{esc(value)}"{" selected" if sel else ""}>{esc(text)}</option>')
    if chosen and not known:  # a value from the URL the library does not have: shown, so the count makes sense
        items.append(f'<option value="{esc(chosen)}" selected>{esc(chosen)}</option>')
    return (f'<div class="lp-field"><label for="lp-{name}">{label}</label>'
            f'<select id="lp-{name}" name="{name}">{"".join(items)}</select></div>')


def _filter_form(view: Listing, base: str) -> str:
    f = view.filters
    langs = [(code, f"{name} ({n:,})") for code, name, n in view.languages]
    tag = ""
    if f.get("tag"):
        rest = {k: v for k, v in f.items() if k != "tag"}
        tag = (f'<input type="hidden" name="tag" value="{esc(f["tag"])}">'
               f'<p class="lp-tagfilter">Tag: <strong>{esc(f["tag"])}</strong> '
               f'<a href="{esc(_url(base, rest))}">show every tag</a></p>')
    return (f'<form id="lp-filters" class="lp-filters" method="get" action="{esc(base)}" role="search" '
            'aria-label="Filter the books">'
            '<div class="lp-field lp-words"><label for="lp-q">Words in a title or description</label>'
            f'<input type="search" id="lp-q" name="q" value="{esc(f.get("q", ""))}" maxlength="1000"></div>'
            + _select("lang", "Language", "All languages", langs, f.get("lang", ""))
            + _select("category", "Category", "All categories", [(c, c) for c in view.categories],
                      f.get("category", ""))
            + tag + '<button type="submit">Show books</button></form>')


def _tile(b: Book, base: str, filters: dict[str, str], root: str, content_root: str | None, options: Options) -> str:
    r = quote(root, safe="/")
    remote = bool(getattr(b, "remote", False))
    sizes = tuple(b.illustration_sizes) or ((48,) if b.favicon else ())
    if sizes and not remote:  # the server has a remote book's illustration nowhere
        size = 48 if 48 in sizes else min(sizes)
        icon = (f'<img src="{esc(r)}/catalog/v2/illustration/{esc(quote(b.uuid, safe=""))}?size={size}" '
                'class="lp-icon" width="48" height="48" alt="" loading="lazy" decoding="async">')
    else:
        icon = '<span class="lp-icon lp-noicon"></span>'
    title = esc(b.title)
    if content_root is not None and not remote:
        href = f"{content_root}/content/{quote(b.name, safe='')}/"
        title = f'<a class="title zv-title" href="{esc(href)}">{title}</a>'
    # <bdi>: a right-to-left name (العربية) would otherwise reorder the line's numbers around it
    facts = [", ".join(f"<bdi>{esc(_self_name(c))}</bdi>" for c in _codes(b.language))] if b.language else []
    if b.article_count:
        facts.append(plural(b.article_count, "article"))
    if b.size:
        facts.append(human_size(b.size))
    if remote:
        facts.append("download only")
    tags = [t for t in (x.strip() for x in b.tags.split(";")) if t and not t.startswith("_")]
    tag_list = ""
    if tags:
        rest = {k: v for k, v in filters.items() if k != "tag"}
        tag_list = ('<ul class="lp-tags" aria-label="Tags">'
                    + "".join(f'<li><a href="{esc(_url(base, rest | {"tag": t}))}">{esc(t)}</a></li>' for t in tags)
                    + "</ul>")
    url = ""
    if options.downloads and b.file is not None:
        url = opds.download_url(b.name, root)
    elif b.url and linkable(b.url):
        url = b.url
    links = ""
    if url:
        what = f" ({human_size(b.size)})" if b.size else ""
        links = (f'<p class="lp-links"><a href="{esc(url)}" download>Download'
                 f'<span class="lp-hide"> {esc(b.title)}</span>{what}</a></p>')
    desc = f'<p class="lp-desc">{esc(b.description)}</p>' if b.description else ""
    return (f'<li class="book" data-name="{esc(b.name)}">{icon}<h2>{title}</h2>{desc}'
            f'<p class="lp-meta">{" · ".join(facts)}</p>{tag_list}{links}</li>')


def _paging(view: Listing, base: str) -> str:
    if view.pages <= 1:
        return ""
    shown = sorted({1, view.pages} | {p for p in range(view.page - 2, view.page + 3) if 1 <= p <= view.pages})
    items = []
    if view.page > 1:
        items.append(f'<li><a href="{esc(_url(base, view.filters, view.page - 1))}" rel="prev">Previous</a></li>')
    last = 0
    for p in shown:
        if p > last + 1:
            items.append('<li><span>…</span></li>')
        current = ' aria-current="page"' if p == view.page else ""
        items.append(f'<li><a href="{esc(_url(base, view.filters, p))}"{current}>'
                     f'<span class="lp-hide">Page </span>{p}</a></li>')
        last = p
    if view.page < view.pages:
        items.append(f'<li><a href="{esc(_url(base, view.filters, view.page + 1))}" rel="next">Next</a></li>')
    return f'<nav class="lp-pages" aria-label="Pages of books"><ul>{"".join(items)}</ul></nav>'


def _book_search(books: Sequence[Book], root: str) -> str:
    """Search inside a book of this page (the indexed ones): GET /search; with the script,
    type-ahead titles and results in the viewer."""
    indexed = [b for b in books if not getattr(b, "remote", False) and b.has_fulltext_index is not False]
    if not indexed:
        return ""
    r = esc(quote(root, safe="/"))
    opts = "".join(f'<option value="{esc(b.name)}">{esc(b.title)}</option>' for b in indexed)
    return ('<section class="lp-search" aria-labelledby="lp-search-title"><h2 id="lp-search-title">Search inside a book'
            f'</h2><form id="kiwixsearchform" method="get" action="{r}/search" role="search" '
            'aria-label="Search inside a book">'
            f'<div class="lp-field"><label for="book">Book</label><select id="book" name="books.name">{opts}</select>'
            '</div><div class="lp-field"><label for="kiwixsearchbox">Words to search for</label>'
            '<input type="search" id="kiwixsearchbox" name="pattern" autocomplete="off" maxlength="1000"></div>'
            '<button type="submit">Search</button></form><div id="suggestions" aria-live="polite"></div></section>')


def library_html(view: Listing, root: str, options: Options, content_root: str | None, nojs: bool) -> str:
    """The page's HTML: ``nojs`` for ``/nojs`` (no script; its forms and links stay there)."""
    r = quote(root, safe="/")
    base = r + ("/nojs" if nojs else "/")
    count = plural(view.total, "book") if not view.filters else f"{view.found:,} of {plural(view.total, 'book')}"
    if view.pages > 1:
        count += f" · page {view.page:,} of {view.pages:,}"
    tiles = "".join(_tile(b, base, view.filters, root, content_root, options) for b in view.books)
    body = (f'<ul class="books zv-books">{tiles}</ul>' if tiles else
            f'<p class="lp-empty">No book matches these filters. <a href="{esc(base)}">Show every book</a></p>')
    script = "" if nojs else f'<script src="{esc(asset_url("library.js", r))}" defer></script>'
    other = (f'<a href="{esc(r)}/">The library with JavaScript</a> opens books in a reader with search.' if nojs
             else f'<a href="{esc(r)}/nojs">The library without JavaScript</a>.')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>Library</title><link rel="icon" href="{esc(r)}/favicon.ico">'
        f'<link rel="stylesheet" href="{esc(asset_url("library.css", r))}">{script}</head>\n'
        f'<body class="lp" data-root="{esc(r)}">\n<header class="lp-head"><h1>Library</h1></header>\n'
        f'<main class="lp-main">{_filter_form(view, base)}<p class="lp-count">{count}</p>\n'
        f'{body}\n{_paging(view, base)}{_book_search(view.books, root)}</main>\n'
        f'<footer class="lp-foot"><p>{other} Kiwix apps read this library from its '
        f'<a href="{esc(r)}/catalog/v2/entries">OPDS catalog</a>.</p></footer>\n</body></html>\n'
    )


def _content_root(server: Server, request: Request) -> str | None:
    # as the catalog's links: --contentServerURL's, else here, none with --catalogOnly alone
    if server.options.content_server_url:
        return server.options.content_server_url
    return None if server.options.catalog_only else quote(root_of(request), safe="/")


async def _page(server: Server, request: Request, nojs: bool) -> Response:
    view = await server.run(listing, server, request)  # the catalog's index: off the event loop
    body = library_html(view, root_of(request), server.options, _content_root(server, request), nojs)
    r = bytes_response(request, body.encode("utf-8"), HTML)
    r.headers["Content-Security-Policy"] = PAGE_CSP if nojs else LIBRARY_CSP
    r.headers["X-Content-Type-Options"] = "nosniff"
    r.headers["Referrer-Policy"] = "same-origin"
    return r


async def home(server: Server, request: Request) -> Response:
    """``/``: the library page (or ``--customIndex``'s page)."""
    if server.options.custom_index is not None:
        return text_response(request, server.options.custom_index, HTML)
    return await _page(server, request, nojs=False)


async def nojs(server: Server, request: Request) -> Response:
    """``/nojs``: the library page without any script."""
    return await _page(server, request, nojs=True)


async def css(server: Server, request: Request) -> Response:
    """``/skin/library.css``."""
    return asset_response(request, "library.css")


async def js(server: Server, request: Request) -> Response:
    """``/skin/library.js``."""
    return asset_response(request, "library.js")


def routes(server: Server) -> list[Route]:
    """``/``, ``/nojs`` and the page's two files (before the viewer's ``/skin/{name}``)."""
    return [Route(path, endpoint(server, fn), methods=GET) for path, fn in (
        ("/", home), ("/nojs", nojs), ("/skin/library.css", css), ("/skin/library.js", js))]
