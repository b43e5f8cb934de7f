"""zim serve's library page (``/``, ``/nojs``: libzim.serve.librarypage) and its two files.

The books are written here (Book values, no archive, for counts and paging; the search
fixtures' archives for content and download links), and every expected count, order and
text is computed from those definitions, never read back from the server. What a browser
makes of the page (layout at 1280 and 390 px, axe-core) is tests/browser_serve.py's.
"""

from __future__ import annotations

import gzip
import html
import re
import warnings
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlsplit

import pytest

warnings.filterwarnings("ignore", message="Using `httpx`")
from starlette.testclient import TestClient  # noqa: E402

from libzim.serve import Library, create_app  # noqa: E402
from libzim.serve.bookquery import BookRecord  # noqa: E402
from libzim.serve.core import Options  # noqa: E402
from libzim.serve.library import Book  # noqa: E402
from libzim.serve.librarypage import LIBRARY_CSP, PAGE_SIZE, human_size  # noqa: E402
from libzim.serve.viewer import PAGE_CSP  # noqa: E402

from search_fixtures import zim_a_path, zim_noindex_path  # noqa: E402,F401

N = 120  # three pages of 50
HOSTILE = "<script>alert(1)</script>\"'&"
LANGS = ["fra", "eng", "deu"]  # book i: LANGS[i % 3]
OWN_NAMES = {"fra": "français", "eng": "English", "deu": "Deutsch"}  # ICU's names, written out by hand


def _title(i: int) -> str:
    return f"Tome {i:03d}" if i != 7 else f"Tome 007 {HOSTILE}"


def make_books(n: int = N) -> list[Book]:
    return [Book(name=f"book{i}", title=_title(i), uuid=f"00000000-0000-4000-8000-{i:012d}",
                 description=f"About thing{i}" + (f" {HOSTILE}" if i == 7 else ""),
                 language=LANGS[i % 3], article_count=1000 + i, size=(i + 1) * 1_500_000,
                 tags=("even;_hidden" if i % 2 == 0 else "odd") + (f";{HOSTILE}" if i == 7 else ""),
                 category="wikipedia" if i % 4 == 0 else "wiktionary", illustration_sizes=(48,))
            for i in reversed(range(n))]  # library order: not the title order the page shows


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Library(books=make_books()), threads=2)) as c:
        yield c


def names(text: str) -> list[str]:
    return re.findall(r'<li class="book" data-name="([^"]*)"', text)


def count_line(text: str) -> str:
    return html.unescape(re.search(r'<p class="lp-count">(.*?)</p>', text).group(1))


class Page(HTMLParser):
    """The page's elements: ids, labels, controls, links, landmarks, scripts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def all(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]


def links(text: str) -> list[str]:
    p = Page(text)
    return [a["href"] for a in p.all("a")] + [f["action"] for f in p.all("form")] + \
        [i["src"] for i in p.all("img")] + [s["src"] for s in p.all("script")] + [x["href"] for x in p.all("link")]


# -- counts, order, paging ----------------------------------------------------------


def test_first_page(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    by_title = [f"book{i}" for i in sorted(range(N), key=lambda i: _title(i).casefold())]
    assert names(r.text) == by_title[:PAGE_SIZE]
    assert count_line(r.text) == f"{N} books · page 1 of 3"


def test_paging_keeps_the_filters(client):
    by_title = [f"book{i}" for i in sorted(range(N), key=lambda i: _title(i).casefold())]
    t2 = client.get("/?page=2").text
    assert names(t2) == by_title[50:100]
    t3 = client.get("/?page=3").text
    assert names(t3) == by_title[100:] and len(names(t3)) == N - 100
    assert client.get("/?page=99").text == t3  # past the last page: the last page
    for bad in ("0", "-1", "x", "1.5"):
        assert client.get(f"/?page={bad}").status_code == 400, bad
    nav = t2[t2.index('<nav class="lp-pages"'):]
    assert re.search(r'<a href="/\?page=3" aria-current="page">', t3)
    assert '<a href="/" rel="prev">Previous</a>' in nav
    assert 'href="/?page=3" rel="next"' in nav
    # filtered: every paging link carries the filter
    deu = [i for i in range(N) if LANGS[i % 3] == "deu"]
    t = client.get("/?lang=deu&category=wiktionary").text
    want = [i for i in deu if i % 4 != 0]
    assert count_line(t) == f"{len(want)} of {N} books"  # one page: no page number
    t = client.get("/?lang=fra").text
    fra = [i for i in range(N) if i % 3 == 0]
    assert len(fra) <= PAGE_SIZE and "lp-pages" not in t and count_line(t) == f"{len(fra)} of {N} books"
    t = client.get("/?category=wiktionary&page=2").text
    hrefs = [h for h in links(t) if "page=" in h]
    assert hrefs and all(dict(parse_qsl(urlsplit(h).query))["category"] == "wiktionary" for h in hrefs)
    assert re.search(r'aria-current="page"', t) and t.count('aria-current="page"') == 1


def test_filters(client):
    t = client.get("/", params={"lang": "eng"}).text
    assert sorted(names(t)) == sorted(f"book{i}" for i in range(N) if LANGS[i % 3] == "eng")
    t = client.get("/", params={"category": "wikipedia"}).text
    assert sorted(names(t)) == sorted(f"book{i}" for i in range(N) if i % 4 == 0)
    t = client.get("/", params={"tag": "odd", "page": "2"}).text
    odd = sorted((i for i in range(N) if i % 2), key=lambda i: _title(i).casefold())
    assert names(t) == [f"book{i}" for i in odd[50:]]
    assert count_line(t) == f"{len(odd)} of {N} books · page 2 of 2"
    assert '<input type="hidden" name="tag" value="odd">' in t  # the form keeps the tag
    t = client.get("/", params={"q": "thing42"}).text  # words, as the catalog's q
    assert names(t) == ["book42"] and count_line(t) == f"1 of {N} books"
    t = client.get("/", params={"lang": "xyz"}).text
    assert names(t) == [] and count_line(t) == f"0 of {N} books" and "No book matches" in t
    assert '<option value="xyz" selected>xyz</option>' in t
    assert client.get("/", params={"q": "x" * 1001}).status_code == 400


def test_the_selects_name_languages_in_themselves(client):
    t = client.get("/", params={"lang": "fra"}).text
    for code, own in OWN_NAMES.items():
        n = sum(1 for i in range(N) if LANGS[i % 3] == code)
        sel = " selected" if code == "fra" else ""
        assert f'<option value="{code}"{sel}>{own} ({n})</option>' in t
    assert '<option value="wikipedia">wikipedia</option>' in t and '<option value="wiktionary">' in t
    assert "<bdi>français</bdi> · 1,000 articles" in t  # book0's tile: language by its own name


def test_tile_facts():
    assert human_size(999) == "999 bytes" and human_size(1) == "1 byte"
    assert human_size(1_500_000) == "1.5 MB" and human_size(12_345_678_901) == "12 GB"
    with TestClient(create_app(Library(books=make_books(3)), threads=1)) as c:
        t = c.get("/").text
    tile = t[t.index('data-name="book1"'):].split("</li>", 1)[0]
    assert 'href="/content/book1/"' in tile and ">Tome 001<" in tile and "About thing1" in tile
    assert "<bdi>English</bdi> · 1,001 articles · 3.0 MB" in tile
    assert '<img src="/catalog/v2/illustration/00000000-0000-4000-8000-000000000001?size=48"' in tile
    assert 'loading="lazy"' in tile and 'alt=""' in tile
    assert 'href="/?tag=odd"' in tile and "_hidden" not in t  # hidden tags stay hidden
    assert "download" not in tile.lower()  # downloads off, no URL


# -- escaping -------------------------------------------------------------------------


def test_hostile_metadata_and_queries_are_escaped(client):
    for url in ("/", "/nojs"):
        t = client.get(url, params={"q": "Tome 007"}).text
        assert "book7" in names(t)
        assert HOSTILE not in t and "<script>alert" not in t
        assert html.escape(HOSTILE) in t  # title, description and tag shown as text
    mark = '"><zz9 onload=x>'
    for name in ("q", "lang", "category", "tag"):
        for url in ("/", "/nojs"):
            r = client.get(url, params={name: mark})
            assert r.status_code in (200, 400), (url, name)
            assert "<zz9" not in r.text and 'onload=x>' not in r.text.replace(html.escape(mark), "")


# -- links under a root, remote books, downloads -------------------------------------------


def test_every_link_under_the_root():
    with TestClient(create_app(Library(books=make_books()), threads=1, root="/my lib")) as c:
        for url in ("/my%20lib/", "/my%20lib/nojs", "/my%20lib/?category=wikipedia&page=2"):
            r = c.get(url)
            assert r.status_code == 200, url
            found = links(r.text)
            assert len(found) > 50
            assert all(h.startswith("/my%20lib/") for h in found), [h for h in found if not h.startswith("/my%20lib/")]
        t = c.get("/my%20lib/?page=2").text
        assert 'data-root="/my%20lib"' in t and 'href="/my%20lib/?page=3" rel="next"' in t
        css = re.search(r'href="(/my%20lib/skin/library\.css\?v=[0-9a-f]+)"', t).group(1)
        assert c.get(css).status_code == 200


def _remote(i: int, url: str) -> BookRecord:
    return BookRecord(uuid=f"11111111-0000-4000-8000-{i:012d}", name=f"remote{i}", title=f"Remote {i}",
                      description="Far away", language="eng", size=2_000_000, url=url)


def test_remote_books(zim_a_path):
    def app(catalog_only: bool) -> TestClient:
        lib = Library([zim_a_path])
        lib.remote = [_remote(1, "https://download.example.org/remote1.zim"),  # type: ignore[attr-defined]
                      _remote(2, "javascript:alert(1)")]
        return TestClient(create_app(lib, threads=1, options=Options(catalog_only=catalog_only)))

    with app(True) as c:
        t = c.get("/").text
        assert names(t) == ["remote1", "remote2", "a"]  # by title: "Remote 1", "Remote 2", "Search fixture A"
        assert count_line(t) == "3 books"
        tile = t[t.index('data-name="remote1"'):].split("</li>", 1)[0]
        assert "<h2>Remote 1</h2>" in tile and "/content/" not in tile and "download only" in tile
        assert '<a href="https://download.example.org/remote1.zim" download>Download' in tile and "(2.0 MB)" in tile
        bad = t[t.index('data-name="remote2"'):].split("</li>", 1)[0]
        assert "javascript:" not in bad and "<a " not in bad  # not a web address: not linked
        assert "/content/a/" not in t  # --catalogOnly: the catalog links no content, nor does the page
        # the "search inside a book" form offers local books only
        assert '<option value="remote1">' not in t
    with app(False) as c:
        t = c.get("/").text
        assert names(t) == ["a"] and count_line(t) == "1 book" and 'href="/content/a/"' in t


def test_downloads_on_and_off(zim_a_path):
    for downloads in (True, False):
        with TestClient(create_app([zim_a_path], threads=1, downloads=downloads)) as c:
            for url in ("/", "/nojs"):
                t = c.get(url).text
                assert ('<a href="/download/a.zim" download>Download' in t) is downloads, (url, downloads)
            if downloads:
                assert c.head("/download/a.zim").status_code == 200


# -- /nojs, the security headers, the files -----------------------------------------------------


def test_nojs_runs_no_script(client):
    r = client.get("/nojs", params={"page": "2"})
    assert r.status_code == 200 and r.headers["content-security-policy"] == PAGE_CSP
    t = r.text
    assert "<script" not in t
    assert not [a for _, attrs in Page(t).tags for a in attrs if a.startswith("on")]  # no event handler either
    assert '<form id="lp-filters" class="lp-filters" method="get" action="/nojs"' in t
    assert all(h.startswith("/nojs") for h in links(t) if "page=" in h)
    assert 'href="/content/' in t and "/viewer" not in t
    assert 'href="/">The library with JavaScript</a>' in t


def test_library_csp_and_headers(client):
    r = client.get("/")
    assert r.headers["content-security-policy"] == LIBRARY_CSP
    parts = dict(p.strip().split(" ", 1) for p in LIBRARY_CSP.split(";"))
    assert parts["default-src"] == "'none'" and parts["script-src"] == "'self'" and parts["style-src"] == "'self'"
    assert "unsafe" not in LIBRARY_CSP and "*" not in LIBRARY_CSP and "data:" not in LIBRARY_CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", r.text, re.S)
    assert len(scripts) == 1 and scripts[0][1] == "" and "defer" in scripts[0][0]
    assert "style=" not in r.text and "<style" not in r.text  # nothing inline: the CSP allows none


def test_assets_cached_for_good(client):
    t = client.get("/").text
    for name, mimetype in (("library.css", "text/css; charset=utf-8"),
                           ("library.js", "application/javascript; charset=utf-8")):
        url = re.search(rf'"(/skin/{re.escape(name)}\?v=[0-9a-f]{{12}})"', t).group(1)
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200 and plain.headers["content-type"] == mimetype and len(plain.content) > 1000
        assert plain.headers["cache-control"] == "max-age=31536000, public, immutable"
        etag = plain.headers["etag"]
        assert client.get(url, headers={"If-None-Match": etag}).status_code == 304
        packed = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert packed.headers["content-encoding"] == "gzip" and packed.headers["etag"] != etag
        assert packed.content == plain.content  # httpx decodes: the same file
        h = client.head(url)
        assert h.status_code == 200 and h.content == b"" and int(h.headers["content-length"]) > 0
    css = client.get(re.search(r'"(/skin/library\.css[^"]*)"', t).group(1)).text
    assert "@media (max-width:640px)" in css and "grid-template-columns:1fr" in css  # one column on a phone
    assert client.get("/skin/viewer.css").status_code == 200  # the viewer's files are still the viewer's


def test_page_etag_and_head(client):
    r = client.get("/?lang=fra")
    etag = r.headers["etag"]
    assert client.get("/?lang=fra", headers={"If-None-Match": etag}).status_code == 304
    h = client.head("/?lang=fra", headers={"Accept-Encoding": "identity"})
    g = client.get("/?lang=fra", headers={"Accept-Encoding": "identity"})
    assert h.status_code == 200 and h.content == b""
    assert h.headers["content-length"] == g.headers["content-length"] == str(len(g.content))
    assert h.headers["content-security-policy"] == LIBRARY_CSP
    with TestClient(create_app(Library(books=make_books(5)), threads=1)) as other:
        assert other.get("/?lang=fra").headers["etag"] != etag  # another library, another tag
        assert other.get("/?lang=fra", headers={"If-None-Match": etag}).status_code == 200


def test_custom_index_still_wins(zim_a_path):
    page = "<!DOCTYPE html><title>Mine</title><p>custom</p>"
    with TestClient(create_app([zim_a_path], threads=1, options=Options(custom_index=page))) as c:
        assert c.get("/").text == page
        assert "lp-count" in c.get("/nojs").text


# -- what the accessibility checks read ----------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/nojs", "/?lang=xyz", "/?tag=odd&page=2"])
def test_markup_for_assistive_technology(client, url):
    t = client.get(url).text
    p = Page(t)
    assert p.all("html")[0]["lang"] == "en"
    assert len(p.all("main")) == 1 and len(p.all("h1")) == 1 and p.all("header") and p.all("footer")
    ids = [a["id"] for _, a in p.tags if "id" in a]
    assert len(ids) == len(set(ids)), ids
    labelled = {a["for"] for a in p.all("label")}
    controls = [a for t_, a in p.tags if t_ in ("select", "input") and a.get("type") != "hidden"]
    assert controls and all(c.get("id") in labelled for c in controls), controls
    for img in p.all("img"):
        assert img.get("alt") == ""  # the title says what the book is
    if 'aria-current' in t:
        assert t.count('aria-current="page"') == 1


def test_weight_of_a_thousand_books():
    with TestClient(create_app(Library(books=make_books(1000)), threads=1)) as c:
        r = c.get("/", headers={"Accept-Encoding": "identity"})
        assert len(names(r.text)) == PAGE_SIZE and count_line(r.text) == "1,000 books · page 1 of 20"
        raw = len(r.content)
        assert raw < 60_000 and len(gzip.compress(r.content)) < 10_000, raw  # tools/library_page_check.py: the numbers
