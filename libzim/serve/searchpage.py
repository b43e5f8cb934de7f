"""The full-text search's result page (``/search`` as HTML).

kiwix's result markup (the ``header`` line "Results <b>1-25</b> of <b>44</b> for ...",
``<li><a href=...>`` per result with its ``<cite>`` snippet, ``book-title`` and
``informations`` lines, the ``pagination`` links) under a toolbar of its own, as
kiwix-serve's taskbar gives it: a link to the library, the book searched, a labelled
query box that keeps the request's book selection, and the paging at the top and at the
bottom. Opened inside the viewer's frame the toolbar is hidden (the viewer has its own):
one small inline script says so, allowed by its hash in the page's Content-Security-Policy
along with the inline style; nothing else runs. Every value echoed is escaped here.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Sequence
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from .core import Options, root_of, text_response
from .library import Book
from .pages import Hit, content_url, esc, safe_snippet

__all__ = ["search_page", "search_response", "selection_of", "SEARCH_CSP"]

# The query parameters that choose the books: kept by the query box and the paging links,
# so the next search covers what this one did (and no list of every book is written out).
_SELECTION = ("books.name", "content", "books.id")

_STYLE = """
*,*::before,*::after{box-sizing:border-box}
html,body{margin:0}
body{font:16px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#202122;background:#fff}
:focus-visible{outline:3px solid #3366cc;outline-offset:1px}
a{color:#3366cc}
.sp-hide{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.sp-bar{display:flex;flex-wrap:wrap;align-items:center;gap:.4em;padding:.35em .6em;background:#f8f9fa;
  border-bottom:1px solid #c8ccd1}
.sp-framed .sp-bar{display:none}
.sp-btn{display:inline-flex;align-items:center;min-height:2.3em;padding:.3em .65em;border:1px solid #c8ccd1;
  border-radius:6px;background:#fff;color:#202122;text-decoration:none;white-space:nowrap}
.sp-btn:hover{background:#eaecf0;border-color:#a2a9b1}
.sp-book{font-weight:600;max-width:22em;overflow:hidden;text-overflow:ellipsis}
.sp-search{flex:1;display:flex;gap:.4em;min-width:12em;margin:0}
.sp-search input{flex:1;min-width:0;min-height:2.3em;font:inherit;padding:.3em .7em;border:1px solid #72777d;
  border-radius:6px;color:inherit;background:#fff}
.sp-search button{font:inherit;min-height:2.3em;padding:.3em .8em;border:1px solid #72777d;border-radius:6px;
  background:#fff;color:#202122}
main{max-width:50em;margin:0 auto;padding:.6em 1em 1.5em}
h1.header{font-size:1.1em;font-weight:normal;margin:.6em 0}
.results ul{list-style:none;padding:0;margin:0}
.results li{padding:.6em 0;border-bottom:1px solid #eaecf0}
.results li>a{font-size:1.1em;font-weight:600}
.results cite{display:block;font-style:normal;margin:.2em 0}
.book-title,.informations{font-size:.9em;color:#54595d}
.pagination{display:flex;flex-wrap:wrap;gap:.3em;margin:.8em 0}
.pagination a,.pagination b{display:inline-block;min-width:2.3em;min-height:2.3em;padding:.35em .6em;
  text-align:center;border:1px solid #c8ccd1;border-radius:6px;text-decoration:none}
.pagination b{background:#3366cc;border-color:#3366cc;color:#fff}
.sp-empty{color:#54595d}
@media (max-width:640px){.sp-bar{padding:.3em .35em}.sp-book{max-width:100%}}
"""

# Inside the viewer's frame the viewer's toolbar is the page's; this one would repeat it.
_FRAMED_JS = "if(window.top!==window.self)document.documentElement.className='sp-framed';"


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


SEARCH_CSP = (f"default-src 'none'; style-src {_sha256(_STYLE)}; script-src {_sha256(_FRAMED_JS)}; "
              "img-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'self'")


def selection_of(request: Request) -> list[tuple[str, str]]:
    """The request's book selection (``books.name``, ``content``, ``books.id``,
    ``books.filter.*``), in its order: what the query box and the paging keep."""
    return [(k, v) for k, v in request.query_params.multi_items()
            if k in _SELECTION or k.startswith("books.filter.")]


def _link(selection: Sequence[tuple[str, str]], pattern: str, start: int, page_length: int, root: str) -> str:
    q = [("pattern", pattern), *selection, ("start", str(start)), ("pageLength", str(page_length))]
    return quote(root, safe="/") + "/search?" + urlencode(q)


def _pager(selection: Sequence[tuple[str, str]], pattern: str, total: int, start: int, page_length: int,
           root: str, label: str) -> str:
    """kiwix's pages around the current one (4 each side), with a previous and a next link."""
    if total <= page_length and start == 0:
        return ""
    current = start // page_length
    last = max(0, (total - 1) // page_length)
    parts = []
    if current > 0:
        prev = _link(selection, pattern, min(current - 1, last) * page_length, page_length, root)
        parts.append(f"<a href=\"{esc(prev)}\" rel=\"prev\"><span aria-hidden=\"true\">\u2039 </span>Previous</a>")
    for p in range(max(0, current - 4), min(last, current + 4) + 1):
        if p == current:
            parts.append(f"<b aria-current=\"page\">{p + 1}</b>")
        else:
            link = _link(selection, pattern, p * page_length, page_length, root)
            parts.append(f"<a href=\"{esc(link)}\">{p + 1}</a>")
    if current < last:
        nxt = _link(selection, pattern, (current + 1) * page_length, page_length, root)
        parts.append(f"<a href=\"{esc(nxt)}\" rel=\"next\">Next<span aria-hidden=\"true\"> \u203a</span></a>")
    return f"<nav class=\"pagination\" aria-label=\"{label}\">{''.join(parts)}</nav>"


def _toolbar(books: Sequence[Book], selection: Sequence[tuple[str, str]], pattern: str, root: str,
             options: Options) -> str:
    r = esc(quote(root, safe="/"))
    parts = []
    if options.library_button:
        parts.append(f"<a class=\"sp-btn sp-library\" href=\"{r}/\">Library</a>")
    if len(books) == 1:
        b = books[0]
        parts.append(f"<a class=\"sp-btn sp-book\" href=\"{esc(content_url(b.name, root=root))}\" "
                     f"title=\"Main page of {esc(b.title)}\">{esc(b.title)}</a>")
        where = f"Search {b.title}"
    else:
        parts.append(f"<span class=\"sp-book\">{len(books):,} books</span>")
        where = f"Search {len(books):,} books"
    if options.search_bar:
        kept = "".join(f"<input type=\"hidden\" name=\"{esc(k)}\" value=\"{esc(v)}\">" for k, v in selection)
        parts.append(
            f"<form class=\"sp-search\" role=\"search\" method=\"get\" action=\"{r}/search\">{kept}"
            f"<label class=\"sp-hide\" for=\"sp-q\">{esc(where)}</label>"
            f"<input id=\"sp-q\" name=\"pattern\" type=\"search\" value=\"{esc(pattern)}\" "
            f"placeholder=\"{esc(where)}\" maxlength=\"1000\" autocomplete=\"off\">"
            "<button type=\"submit\">Search</button></form>")
    return f"<header class=\"sp-bar\">{''.join(parts)}</header>"


def search_page(books: Sequence[Book], selection: Sequence[tuple[str, str]], pattern: str, total: int,
                start: int, page_length: int, hits: Sequence[Hit], root: str = "",
                options: Options | None = None) -> str:
    """The HTML result page: the toolbar (``options``' library button and search bar),
    kiwix's header line, results and paging; ``start`` is 0-based, as libkiwix 14.1+'s;
    ``selection``: the request's book parameters (selection_of), kept by the links."""
    options = options or Options()
    if hits:
        header = (f"Results <b>{start + 1}-{start + len(hits)}</b> of <b>{total}</b> for "
                  f"<b>\"{esc(pattern)}\"</b>")
    else:
        header = f"No results were found for <b>\"{esc(pattern)}\"</b>"
    items = []
    for h in hits:
        items.append(
            f"<li><a href=\"{esc(content_url(h.book.name, h.path, root))}\">{esc(h.title)}</a>"
            f"<cite>{safe_snippet(h.snippet)}</cite>"
            f"<div class=\"book-title\">from {esc(h.book.title)}</div>"
            f"<div class=\"informations\">{h.word_count} words</div></li>"
        )
    hint = ""
    if not pattern.strip():
        hint = "<p class=\"sp-empty\">Nothing was searched: type some words in the search box.</p>"
    elif not hits and total:
        hint = f"<p class=\"sp-empty\">There are {total:,} results; this page is past the last one.</p>"
    top = _pager(selection, pattern, total, start, page_length, root, "Result pages")
    bottom = _pager(selection, pattern, total, start, page_length, root, "Result pages, again")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>Search: {esc(pattern)}</title>"
        f"<link rel=\"icon\" href=\"{esc(quote(root, safe='/'))}/favicon.ico\">"
        f"<script>{_FRAMED_JS}</script><style>{_STYLE}</style></head>\n<body>\n"
        f"{_toolbar(books, selection, pattern, root, options)}\n<main>\n"
        f"<h1 class=\"header\">{header}</h1>\n{hint}{top}\n"
        f"<div class=\"results\"><ul>{''.join(items)}</ul></div>\n{bottom}\n</main>\n</body></html>\n"
    )


def search_response(request: Request, options: Options, books: Sequence[Book], pattern: str, total: int,
                    start: int, page_length: int, hits: Sequence[Hit]) -> Response:
    """The result page as a response, with its Content-Security-Policy (SEARCH_CSP)."""
    body = search_page(books, selection_of(request), pattern, total, start, page_length, hits,
                       root_of(request), options)
    resp = text_response(request, body, "text/html; charset=utf-8")
    resp.headers["Content-Security-Policy"] = SEARCH_CSP
    return resp
