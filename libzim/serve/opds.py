"""The OPDS documents of ``/catalog/v2/...`` (and the legacy ``/catalog/...``), as
the newest kiwix-serve writes them: the navigation root, the acquisition feeds
(complete and partial entries), one complete entry, the category and language
lists, the OpenSearch descriptions. Every value is escaped here; ``root`` is the
mount point (``--urlRootLocation``) that every link starts with."""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Sequence
from urllib.parse import quote

from .library import Book
from .pages import esc

__all__ = ["ACQUISITION", "ENTRY", "NAVIGATION", "OPENSEARCH", "categories_feed", "download_url", "entries_feed",
           "entry_document", "languages_feed", "root_feed", "searchdescription"]

ACQUISITION = "application/atom+xml;profile=opds-catalog;kind=acquisition;charset=utf-8"
NAVIGATION = "application/atom+xml;profile=opds-catalog;kind=navigation;charset=utf-8"
ENTRY = "application/atom+xml;type=entry;profile=opds-catalog;charset=utf-8"
OPENSEARCH = "application/opensearchdescription+xml"
_ACQ = "application/atom+xml;profile=opds-catalog;kind=acquisition"
_NAV = "application/atom+xml;profile=opds-catalog;kind=navigation"
_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_date(date: str) -> str:
    try:
        d = datetime.date.fromisoformat(date.strip()[:10])
    except ValueError:
        return "1970-01-01T00:00:00Z"
    return f"{d.isoformat()}T00:00:00Z"


def feed_uuid(*parts: str) -> str:
    """A stable id for a feed of this library (kiwix: a UUID made from the library id)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "/".join(parts)))


def _q(root: str) -> str:
    return esc(quote(root, safe="/"))


def download_url(book: str, root: str = "") -> str:
    """The URL ``zim serve --downloads`` serves a book's .zim file at."""
    return f"{quote(root, safe='/')}/download/{quote(book, safe='')}.zim"


def _links(b: Book, root: str, content_root: str | None, downloads: bool) -> str:
    out = []
    sizes = list(b.illustration_sizes) or ([48] if b.favicon else [])
    for size in sizes:
        out.append(f'    <link rel="http://opds-spec.org/image/thumbnail" '
                   f'href="{_q(root)}/catalog/v2/illustration/{esc(quote(b.uuid, safe=""))}/?size={size}" '
                   f'type="image/png;width={size};height={size};scale=1"/>\n')
    if content_root is not None:
        out.append(f'    <link type="text/html" href="{esc(content_root)}/content/{esc(quote(b.name, safe=""))}" />\n')
    if downloads and b.file is not None:
        out.append(f'    <link rel="http://opds-spec.org/acquisition/open-access" type="application/x-zim" '
                   f'href="{esc(download_url(b.name, root))}" length="{b.size}" />\n')
    elif b.url:
        out.append(f'    <link rel="http://opds-spec.org/acquisition/open-access" type="application/x-zim" '
                   f'href="{esc(b.url)}" length="{b.size}" />\n')
    return "".join(out)


def entry(b: Book, root: str, content_root: str | None, downloads: bool = False) -> str:
    """One complete ``<entry>`` (what Kiwix clients read of a book)."""
    return (
        "  <entry>\n"
        f"    <id>urn:uuid:{esc(b.uuid)}</id>\n    <title>{esc(b.title)}</title>\n"
        f"    <updated>{_iso_date(b.date)}</updated>\n    <summary>{esc(b.description)}</summary>\n"
        f"    <language>{esc(b.language)}</language>\n    <name>{esc(b.meta_name or b.name)}</name>\n"
        f"    <flavour>{esc(b.flavour)}</flavour>\n    <category>{esc(b.category)}</category>\n"
        f"    <tags>{esc(b.tags)}</tags>\n    <articleCount>{b.article_count}</articleCount>\n"
        f"    <mediaCount>{b.media_count}</mediaCount>\n{_links(b, root, content_root, downloads)}"
        f"    <author>\n      <name>{esc(b.creator)}</name>\n    </author>\n"
        f"    <publisher>\n      <name>{esc(b.publisher)}</name>\n    </publisher>\n"
        f"    <dc:issued>{_iso_date(b.date)}</dc:issued>\n  </entry>\n"
    )


def _partial(b: Book, root: str) -> str:
    return (
        "  <entry>\n"
        f"    <id>urn:uuid:{esc(b.uuid)}</id>\n    <title>{esc(b.title)}</title>\n"
        f"    <updated>{_iso_date(b.date)}</updated>\n"
        f'    <link rel="alternate" href="{_q(root)}/catalog/v2/entry/{esc(quote(b.uuid, safe=""))}" '
        'type="application/atom+xml;type=entry;profile=opds-catalog"/>\n  </entry>\n'
    )


def entries_feed(books: Sequence[Book], library_id: str, total: int, start: int, query: str, root: str,
                 content_root: str | None, partial: bool = False, downloads: bool = False,
                 endpoint: str = "/catalog/v2") -> str:
    """An acquisition feed (``entries``, ``partial_entries``, legacy ``/catalog/search``):
    ``query`` is the request's query string (a filtered feed says so, with its counts)."""
    kind = "/partial_entries" if partial else "/entries"
    self_url = f"{quote(root, safe='/')}{endpoint}{kind}" + (f"?{query}" if query else "")
    title = f"Filtered Entries ({esc(query)})" if query else "All Entries"
    counts = (f"  <totalResults>{total}</totalResults>\n  <startIndex>{start}</startIndex>\n"
              f"  <itemsPerPage>{len(books)}</itemsPerPage>\n") if query else ""
    body = "".join(_partial(b, root) if partial else entry(b, root, content_root, downloads) for b in books)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:dc="http://purl.org/dc/terms/"\n'
        '      xmlns:opds="https://specs.opds.io/opds-1.2"\n'
        '      xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">\n'
        f"  <id>{feed_uuid(library_id, kind, query)}</id>\n"
        f'  <link rel="self" href="{esc(self_url)}" type="{_ACQ}"/>\n'
        f'  <link rel="start" href="{_q(root)}/catalog/v2/root.xml" type="{_NAV}"/>\n'
        f'  <link rel="up" href="{_q(root)}/catalog/v2/root.xml" type="{_NAV}"/>\n'
        f"  <title>{title}</title>\n  <updated>{_now()}</updated>\n{counts}{body}</feed>\n"
    )


def entry_document(b: Book, root: str, content_root: str | None, downloads: bool = False) -> str:
    """``/catalog/v2/entry/UUID``: one complete entry as its own document."""
    text = entry(b, root, content_root, downloads).replace(
        "  <entry>\n", '<entry xmlns="http://www.w3.org/2005/Atom"\n       xmlns:dc="http://purl.org/dc/terms/"\n'
                       '       xmlns:opds="http://opds-spec.org/2010/catalog">\n', 1)
    return _HEAD + text.replace("\n  ", "\n").rstrip() + "\n"


def _nav_entry(title: str, href: str, kind: str, entry_id: str, text: str, extra: str = "") -> str:
    return (f"  <entry>\n    <title>{esc(title)}</title>\n{extra}"
            f'    <link rel="subsection" href="{esc(href)}" type="{kind}"/>\n'
            f"    <updated>{_now()}</updated>\n    <id>{entry_id}</id>\n"
            + (f'    <content type="text">{esc(text)}</content>\n' if text else "") + "  </entry>\n")


def root_feed(library_id: str, root: str) -> str:
    """``/catalog/v2/root.xml``: the navigation feed listing the others."""
    ep = quote(root, safe="/") + "/catalog/v2"
    rows = [("All entries", "/entries", _ACQ, "entries", "All entries from this catalog."),
            ("All entries (partial)", "/partial_entries", _ACQ, "partial_entries",
             "All entries from this catalog in partial format."),
            ("List of categories", "/categories", _NAV, "categories", "List of all categories in this catalog."),
            ("List of languages", "/languages", _NAV, "languages", "List of all languages in this catalog.")]
    entries = "".join(_nav_entry(t, ep + h, k, feed_uuid(library_id, i), c) for t, h, k, i, c in rows)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:opds="https://specs.opds.io/opds-1.2">\n'
        f"  <id>{feed_uuid(library_id)}</id>\n"
        f'  <link rel="self" href="{esc(ep)}/root.xml" type="{_NAV}"/>\n'
        f'  <link rel="start" href="{esc(ep)}/root.xml" type="{_NAV}"/>\n'
        f'  <link rel="search" href="{esc(ep)}/searchdescription.xml" type="{OPENSEARCH}"/>\n'
        f"  <title>OPDS Catalog Root</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
    )


def categories_feed(categories: Sequence[str], library_id: str, root: str) -> str:
    """``/catalog/v2/categories``: one navigation entry per category."""
    ep = quote(root, safe="/") + "/catalog/v2"
    entries = "".join(_nav_entry(c, f"{ep}/entries?category={quote(c, safe='')}", _ACQ,
                                 feed_uuid(library_id, "categories", c), f"All entries with category of '{c}'.")
                      for c in categories)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:opds="https://specs.opds.io/opds-1.2">\n'
        f"  <id>{feed_uuid(library_id, 'categories')}</id>\n"
        f'  <link rel="self" href="{esc(ep)}/categories" type="{_NAV}"/>\n'
        f'  <link rel="start" href="{esc(ep)}/root.xml" type="{_NAV}"/>\n'
        f"  <title>List of categories</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
    )


def languages_feed(languages: Sequence[tuple[str, int]], library_id: str, root: str) -> str:
    """``/catalog/v2/languages``: one navigation entry per language code, with its book
    count (the title is the code: kiwix writes the language's own name, from ICU)."""
    ep = quote(root, safe="/") + "/catalog/v2"
    entries = "".join(_nav_entry(code, f"{ep}/entries?lang={quote(code, safe='')}", _ACQ,
                                 feed_uuid(library_id, "languages", code), "",
                                 f"    <dc:language>{esc(code)}</dc:language>\n    <thr:count>{n}</thr:count>\n")
                      for code, n in languages)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:dc="http://purl.org/dc/terms/"\n'
        '      xmlns:opds="https://specs.opds.io/opds-1.2"\n'
        '      xmlns:thr="http://purl.org/syndication/thread/1.0">\n'
        f"  <id>{feed_uuid(library_id, 'languages')}</id>\n"
        f'  <link rel="self" href="{esc(ep)}/languages" type="{_NAV}"/>\n'
        f'  <link rel="start" href="{esc(ep)}/root.xml" type="{_NAV}"/>\n'
        f"  <title>List of languages</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
    )


def searchdescription(root: str, what: str) -> str:
    """An OpenSearch description: of the catalog (``what`` "catalog") or of the
    full-text search (``what`` "search")."""
    r = quote(root, safe="/")
    if what == "catalog":
        template = (f"{r}/catalog/v2/entries?q={{searchTerms?}}&lang={{language?}}&name={{k:name?}}"
                    "&tag={k:tag?}&maxsize={k:maxsize?}&count={count?}&start={startIndex?}")
        name, desc, kind = "Zim catalog search", "Search zim files in the catalog.", _ACQ
    else:
        template = (f"{r}/search?pattern={{searchTerms}}&books.name={{k:name?}}&format=xml"
                    "&start={startIndex?}&pageLength={count?}")
        name, desc, kind = "Fulltext search", "Search the content of the books.", "application/rss+xml"
    return (
        _HEAD + '<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/">\n'
        f"  <ShortName>{name}</ShortName>\n  <Description>{desc}</Description>\n"
        f'  <Url type="{kind}"\n       xmlns:atom="http://www.w3.org/2005/Atom"\n'
        '       xmlns:k="http://kiwix.org/opensearchextension/1.0"\n       indexOffset="0"\n'
        f'       template="{esc(template)}"/>\n</OpenSearchDescription>\n'
    )
