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

__all__ = ["ACQUISITION", "ENTRY", "NAVIGATION", "OPENSEARCH", "categories_feed", "download_url", "entries_feed",
           "entry_document", "languages_feed", "legacy_feed", "root_feed", "searchdescription", "xesc"]

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


def xesc(text: object) -> str:
    """Escape as kiwix's templates do ({{value}}: &, <, >, both quotes; ' as &apos;)."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def _q(root: str) -> str:
    return xesc(quote(root, safe="/"))


def download_url(book: str, root: str = "") -> str:
    """The URL ``zim serve --downloads`` serves a book's .zim file at."""
    return f"{quote(root, safe='/')}/download/{quote(book, safe='')}.zim"


def _acquisition(b: Book, root: str, downloads: bool) -> str:
    if downloads and b.file is not None:
        href, size = download_url(b.name, root), b.size
    elif b.url:
        href, size = b.url, b.size
    else:
        return ""
    return (f'    <link rel="http://opds-spec.org/acquisition/open-access" type="application/x-zim" '
            f'href="{xesc(href)}" length="{size}" />\n')


def entry(b: Book, root: str, content_root: str | None, downloads: bool = False) -> str:
    """One complete ``<entry>`` (what Kiwix clients read of a book), as kiwix's
    catalog_v2_entry.xml template writes it (its blank-line quirks included).

    Kept on the book (``Book.rendered``, replaced when its fields change): a mirror's
    Kiwix clients fetch every entry of a 10,000-book catalog at once, and writing them
    was most of that request's CPU. The key is all the entry depends on beside the book;
    a server has one or two of those, and a book keeps at most four."""
    memo = b.rendered  # this dict, even if a change replaces it meanwhile (see Book.rendered)
    key = ("opds", root, content_root, downloads)
    text = memo.get(key)
    if text is None:
        text = _entry(b, root, content_root, downloads)
        if len(memo) < 4:
            memo[key] = text
    return text


def _entry(b: Book, root: str, content_root: str | None, downloads: bool) -> str:
    sizes = list(b.illustration_sizes) or ([48] if b.favicon else [])
    icons = "".join(f'<link rel="http://opds-spec.org/image/thumbnail"\n'
                    f'          href="{_q(root)}/catalog/v2/illustration/{quote(b.uuid, safe="")}/?size={size}"\n'
                    f'          type="image/png;width={size};height={size};scale=1"/>\n    ' for size in sizes)
    content = (f'<link type="text/html" href="{xesc(content_root)}/content/{quote(b.name, safe="")}" />\n'
               if content_root is not None else "")
    return (
        "  <entry>\n"
        f"    <id>urn:uuid:{xesc(b.uuid)}</id>\n    <title>{xesc(b.title)}</title>\n"
        f"    <updated>{_iso_date(b.date)}</updated>\n    <summary>{xesc(b.description)}</summary>\n"
        f"    <language>{xesc(b.language)}</language>\n    <name>{xesc(b.meta_name or b.name)}</name>\n"
        f"    <flavour>{xesc(b.flavour)}</flavour>\n    <category>{xesc(b.category)}</category>\n"
        f"    <tags>{xesc(b.tags)}</tags>\n    <articleCount>{b.article_count}</articleCount>\n"
        f"    <mediaCount>{b.media_count}</mediaCount>\n    {icons}{content}"
        f"    <author>\n      <name>{xesc(b.creator)}</name>\n    </author>\n"
        f"    <publisher>\n      <name>{xesc(b.publisher)}</name>\n    </publisher>\n"
        f"    <dc:issued>{_iso_date(b.date)}</dc:issued>\n{_acquisition(b, root, downloads)}  </entry>\n"
    )


def _partial(b: Book, root: str) -> str:
    return (
        "  <entry>\n"
        f"    <id>urn:uuid:{xesc(b.uuid)}</id>\n    <title>{xesc(b.title)}</title>\n"
        f"    <updated>{_iso_date(b.date)}</updated>\n"
        f'    <link rel="alternate"\n          href="{_q(root)}/catalog/v2/entry/{quote(b.uuid, safe="")}"\n'
        '          type="application/atom+xml;type=entry;profile=opds-catalog"/>\n  </entry>\n'
    )


def _link(rel: str, href: str, kind: str) -> str:
    return f'  <link rel="{rel}"\n        href="{xesc(href)}"\n        type="{kind}"/>\n'


def entries_feed(books: Sequence[Book], library_id: str, total: int, start: int, query: str, root: str,
                 content_root: str | None, partial: bool = False, downloads: bool = False) -> str:
    """An acquisition feed (``entries``, ``partial_entries``): ``query`` is the request's
    query string (a filtered feed says so, with its counts)."""
    kind = "/partial_entries" if partial else "/entries"
    ep = quote(root, safe="/") + "/catalog/v2"
    title = f"Filtered Entries ({xesc(query)})" if query else "All Entries"
    counts = (f"  <totalResults>{total}</totalResults>\n  <startIndex>{start}</startIndex>\n"
              f"  <itemsPerPage>{len(books)}</itemsPerPage>\n") if query else "\n"  # kiwix's blank line
    body = "".join(_partial(b, root) if partial else entry(b, root, content_root, downloads) for b in books)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:dc="http://purl.org/dc/terms/"\n'
        '      xmlns:opds="https://specs.opds.io/opds-1.2"\n'
        '      xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">\n'
        f"  <id>{feed_uuid(library_id, kind, query)}</id>\n\n"
        + _link("self", ep + kind + (f"?{query}" if query else ""), _ACQ)
        + _link("start", ep + "/root.xml", _NAV) + _link("up", ep + "/root.xml", _NAV)
        + f"\n  <title>{title}</title>\n  <updated>{_now()}</updated>\n{counts}{body}</feed>\n"
    )


def legacy_feed(books: Sequence[Book], library_id: str, total: int, start: int, query: str | None, root: str,
                content_root: str | None, downloads: bool = False) -> str:
    """The legacy OPDS feed (``/catalog/root.xml``: ``query`` None; ``/catalog/search``),
    as kiwix's catalog_entries.xml writes it (no XML declaration)."""
    filtered = query is not None
    head = (f"  <title>Filtered zims ({xesc(query)})</title>\n" if filtered else "  <title>All zims</title>\n")
    counts = (f"  <totalResults>{total}</totalResults>\n  <startIndex>{start}</startIndex>\n"
              f"  <itemsPerPage>{len(books)}</itemsPerPage>\n") if filtered else "\n"  # kiwix's blank line
    return (
        '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:dc="http://purl.org/dc/terms/"\n'
        '      xmlns:opds="http://opds-spec.org/2010/catalog">\n'
        f"  <id>{feed_uuid(library_id, 'legacy', query or '')}</id>\n{head}  <updated>{_now()}</updated>\n{counts}"
        '  <link rel="self" href="" type="application/atom+xml" />\n'
        '  <link rel="search" type="application/opensearchdescription+xml" '
        f'href="{_q(root)}/catalog/searchdescription.xml" />\n'
        + "".join(entry(b, root, content_root, downloads) for b in books) + "</feed>\n"
    )


def entry_document(b: Book, root: str, content_root: str | None, downloads: bool = False) -> str:
    """``/catalog/v2/entry/UUID``: one complete entry as its own document. kiwix writes the
    feed's entry as it is, whose ``dc:`` prefix is then unbound (not namespace-well-formed
    XML); ours declares the Atom and Dublin Core namespaces on it, the rest byte for byte."""
    return _HEAD + entry(b, root, content_root, downloads).replace(
        "  <entry>\n", '  <entry xmlns="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/terms/">\n', 1)


def _nav_entry(title: str, href: str, kind: str, entry_id: str, text: str, extra: str = "") -> str:
    return (f"  <entry>\n    <title>{xesc(title)}</title>\n{extra}"
            f'    <link rel="subsection"\n          href="{xesc(href)}"\n          type="{kind}"/>\n'
            f"    <updated>{_now()}</updated>\n    <id>{entry_id}</id>\n"
            + (f'    <content type="text">{xesc(text)}</content>\n' if text else "") + "  </entry>\n")


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
        + _link("self", ep + "/root.xml", _NAV) + _link("start", ep + "/root.xml", _NAV)
        + _link("search", ep + "/searchdescription.xml", OPENSEARCH)
        + f"  <title>OPDS Catalog Root</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
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
        + _link("self", ep + "/categories", _NAV) + _link("start", ep + "/root.xml", _NAV)
        + f"  <title>List of categories</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
    )


def languages_feed(languages: Sequence[tuple[str, str, int]], library_id: str, root: str) -> str:
    """``/catalog/v2/languages``: one navigation entry per language (code, its own
    name, book count)."""
    ep = quote(root, safe="/") + "/catalog/v2"
    entries = "".join(_nav_entry(name, f"{ep}/entries?lang={quote(code, safe=',')}", _ACQ,
                                 feed_uuid(library_id, "languages", code), "",
                                 f"    <dc:language>{xesc(code)}</dc:language>\n    <thr:count>{n}</thr:count>\n")
                      for code, name, n in languages)
    return (
        _HEAD + '<feed xmlns="http://www.w3.org/2005/Atom"\n      xmlns:dc="http://purl.org/dc/terms/"\n'
        '      xmlns:opds="https://specs.opds.io/opds-1.2"\n'
        '      xmlns:thr="http://purl.org/syndication/thread/1.0">\n'
        f"  <id>{feed_uuid(library_id, 'languages')}</id>\n"
        + _link("self", ep + "/languages", _NAV) + _link("start", ep + "/root.xml", _NAV)
        + f"  <title>List of languages</title>\n  <updated>{_now()}</updated>\n\n{entries}</feed>\n"
    )


def searchdescription(root: str, what: str) -> str:
    """An OpenSearch description: of the catalog (``what`` "catalog"), of the legacy
    catalog ("legacy") or of the full-text search ("search"). The template's ``&`` are
    written as kiwix writes them (unescaped: clients read the template as text)."""
    r = quote(root, safe="/")
    if what == "catalog":
        template = (f"{r}/catalog/v2/entries?q={{searchTerms?}}&lang={{language?}}&name={{k:name?}}"
                    "&tag={k:tag?}&maxsize={k:maxsize?}&count={count?}&start={startIndex?}")
        name, desc, kind = "Zim catalog search", "Search zim files in the catalog.", _ACQ
    elif what == "legacy":
        template = (f"{r}/catalog/search?q={{searchTerms?}}&lang={{language?}}&name={{k:name?}}"
                    "&tag={k:tag?}&notag={k:notag?}&maxsize={k:maxsize?}&count={count?}&start={startIndex?}")
        name, desc, kind = "Zim catalog search", "Search zim files in the catalog.", "application/atom+xml;profile=opds-catalog"
    else:
        template = (f"{r}/search?pattern={{searchTerms}}&books.name={{k:name?}}&format=xml"
                    "&start={startIndex?}&pageLength={count?}")
        name, desc, kind = "Fulltext search", "Search the content of the books.", "application/rss+xml"
    return (
        _HEAD + '<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/">\n'
        f"  <ShortName>{name}</ShortName>\n  <Description>{desc}</Description>\n"
        f'  <Url type="{kind}"\n       xmlns:atom="http://www.w3.org/2005/Atom"\n'
        '       xmlns:k="http://kiwix.org/opensearchextension/1.0"\n       indexOffset="0"\n'
        f'       template="{xesc(template) if what == "search" else template.replace(chr(34), "%22")}"/>\n'
        "</OpenSearchDescription>\n"
    )
