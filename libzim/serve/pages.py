"""The pages and documents the server writes: plain Python strings, every
value from a request or an archive escaped here (html.escape / XML / JSON),
in the shapes kiwix-serve 3.3.0 writes."""

from __future__ import annotations

import html
import json
import re
from typing import Sequence
from urllib.parse import quote, urlencode

from .library import Book

__all__ = ["error_page", "plural", "search_rss", "suggest_json", "esc",
           "content_url", "safe_snippet"]


def esc(text: object) -> str:
    """Escape for HTML text and attribute values (XML too: &, <, >, both quotes)."""
    return html.escape(str(text), quote=True)


def content_url(book: str, path: str = "", root: str = "") -> str:
    """The URL of an entry; every path segment percent-encoded; ``root``: where the app is mounted."""
    return f"{quote(root, safe='/')}/content/{quote(book, safe='')}/{quote(path, safe='/')}"


_B = re.compile(r"(</?b>)")


def safe_snippet(snippet: str) -> str:
    """A snippet as HTML: the highlight tags (<b>, </b>) kept, all other text
    escaped (unescaped first, so text that came escaped is not escaped twice)."""
    parts = _B.split(snippet)
    return "".join(p if p in ("<b>", "</b>") else esc(html.unescape(p)) for p in parts)


# Only error pages are written here now (the library, search and viewer pages have
# their own modules and styles): one rule is all they need.
_STYLE = "body{font-family:sans-serif;margin:0 auto;max-width:60em;padding:1em}"


def _page(title: str, body: str, root: str = "") -> str:
    # The icon's link: under a root prefix the browser's own /favicon.ico is outside the server.
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><link rel=\"icon\" href=\"{esc(quote(root, safe='/'))}/favicon.ico\">"
        f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def error_page(status: int, title: str, message: str, root: str = "") -> str:
    """The HTML page of an error response: title and message, escaped, and a
    link to the library under ``root`` (status is the caller's to send)."""
    home = esc(quote(root, safe="/") + "/")
    return _page(title, f"<h1>{esc(title)}</h1>\n<p class=\"message\">{esc(message)}</p>\n"
                        f"<p><a href=\"{home}\">Go to the library</a></p>", root)


def plural(n: int, noun: str) -> str:
    """``1 book``, ``2 books``, ``1,024 articles``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class Hit:
    """One search result, as the pages show it."""

    __slots__ = ("book", "path", "title", "snippet", "word_count")

    def __init__(self, book: Book, path: str, title: str, snippet: str, word_count: int) -> None:
        self.book, self.path, self.title, self.snippet, self.word_count = book, path, title, snippet, word_count


def _search_link(names: Sequence[str], pattern: str, start: int, page_length: int, fmt: str | None = None,
                 root: str = "") -> str:
    q: list[tuple[str, str]] = [("pattern", pattern)]
    q += [("books.name", n) for n in names]
    if fmt:
        q.append(("format", fmt))
    q += [("start", str(start)), ("pageLength", str(page_length))]
    return quote(root, safe="/") + "/search?" + urlencode(q)


def search_rss(names: Sequence[str], pattern: str, total: int, start: int, page_length: int,
               hits: Sequence[Hit], root: str = "") -> str:
    """The result page as RSS 2.0 with OpenSearch fields (``format=xml``);
    each item names its book, as kiwix-serve's do not."""
    items = []
    for h in hits:
        items.append(
            f"    <item>\n      <title>{esc(h.title)}</title>\n"
            f"      <link>{esc(content_url(h.book.name, h.path, root))}</link>\n"
            f"      <description>{esc(safe_snippet(h.snippet))}</description>\n"
            f"      <book>\n        <title>{esc(h.book.title)}</title>\n        <name>{esc(h.book.name)}</name>\n"
            f"      </book>\n      <wordCount>{h.word_count}</wordCount>\n    </item>\n"
        )
    link = _search_link(names, pattern, start, page_length, "xml", root)
    return (
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<rss version=\"2.0\"\n     xmlns:opensearch=\"http://a9.com/-/spec/opensearch/1.1/\"\n"
        "     xmlns:atom=\"http://www.w3.org/2005/Atom\">\n  <channel>\n"
        f"    <title>Search: {esc(pattern)}</title>\n    <link>{esc(link)}</link>\n"
        f"    <description>Search result for {esc(pattern)}</description>\n"
        f"    <opensearch:totalResults>{total}</opensearch:totalResults>\n"
        f"    <opensearch:startIndex>{start}</opensearch:startIndex>\n"
        f"    <opensearch:itemsPerPage>{page_length}</opensearch:itemsPerPage>\n"
        "    <atom:link rel=\"search\" type=\"application/opensearchdescription+xml\" "
        f"href=\"{esc(quote(root, safe='/'))}/search/searchdescription.xml\"/>\n"
        f"    <opensearch:Query role=\"request\" searchTerms=\"{esc(pattern)}\" startIndex=\"{start}\" "
        f"count=\"{page_length}\"/>\n"
        f"{''.join(items)}  </channel>\n</rss>\n"
    )


def suggest_json(items: Sequence[dict[str, str]], term: str, fulltext: bool = True) -> str:
    """kiwix-serve's /suggest list: the titles (kind "path"), then the
    full-text search of the term (kind "pattern") when ``fulltext``. Labels are HTML-escaped as
    kiwix's are; the JSON is ASCII with <, >, & as \\u escapes, so no
    consumer that pastes it into HTML can be tricked. Compact (no indent):
    ``indent`` makes json use its pure-Python encoder, which cost a third of
    the event loop's time per /suggest request."""
    out = [dict(it) for it in items]
    if fulltext:  # kiwix-serve offers the full-text search only for a book that has an index
        out.append({"value": term + " ", "label": f"containing '{term}'...", "kind": "pattern"})
    for it in out:
        it["label"] = esc(it["label"])
    text = json.dumps(out, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
