"""The search results page (libzim/serve/searchpage.py): kiwix's result markup under a
toolbar (library link, the book, a labelled query box keeping the book selection), paging
at the top and at the bottom, everything echoed escaped, its Content-Security-Policy.

Expected values come from the fixtures (search_fixtures' PAGES_A: "frobnitz" is on 15
pages), never from the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import warnings
from html.parser import HTMLParser

import pytest

warnings.filterwarnings("ignore", message="Using `httpx`")
from starlette.testclient import TestClient  # noqa: E402

from libzim.serve import create_app  # noqa: E402

from search_fixtures import *  # noqa: E402,F401,F403
from search_fixtures import PAGES_A, pages_with  # noqa: E402
from test_serve import FRA, HOSTILE_TITLE, fra_path  # noqa: E402,F401

A = "a"  # zim_a_path is .../a.zim
FROBNITZ = len(pages_with(PAGES_A, "frobnitz"))  # 15


class Tree(HTMLParser):
    """The page's start tags in order (tag, attributes) and the text inside each <main>/<h1>/<nav>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.texts: dict[str, list[str]] = {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "link", "input", "br", "img"):
            self.open.append(tag)
            self.texts.setdefault(tag, []).append("") if tag in ("h1", "nav", "title", "label") else None

    def handle_endtag(self, tag):
        if tag in self.open:
            while self.open and self.open.pop() != tag:
                pass

    def handle_data(self, data):
        for t in ("h1", "nav", "title", "label"):
            if t in self.open:
                self.texts[t][-1] += data

    def all(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


@pytest.fixture(scope="module")
def client(zim_a_path, fra_path):  # noqa: F811
    with TestClient(create_app([zim_a_path, fra_path], threads=2)) as c:
        yield c


@pytest.fixture(scope="module")
def rooted(zim_a_path):
    with TestClient(create_app([zim_a_path], threads=1, root="/lib")) as c:
        yield c


def test_toolbar(client):
    r = client.get("/search", params={"books.name": A, "pattern": "frobnitz"})
    assert r.status_code == 200
    t = Tree(r.text)
    assert t.all("html") == [{"lang": "en"}]
    assert len(t.all("main")) == 1 and len(t.all("h1")) == 1
    assert t.texts["h1"] == [f'Results 1-{FROBNITZ if FROBNITZ < 25 else 25} of {FROBNITZ} for "frobnitz"']
    assert {"class": "sp-btn sp-library", "href": "/"} in t.all("a")  # back to the library
    book = [a for a in t.all("a") if a.get("href") == f"/content/{A}/"]
    assert len(book) == 1 and "Search fixture A" in r.text  # the book, linked to its main page
    (form,) = t.all("form", role="search")
    assert form["method"] == "get" and form["action"] == "/search"
    assert t.all("input", type="hidden") == [{"type": "hidden", "name": "books.name", "value": A}]
    (box,) = t.all("input", name="pattern")
    assert box["value"] == "frobnitz" and box["type"] == "search"
    (label,) = t.all("label")
    assert label["for"] == box["id"] and t.texts["label"] == ["Search Search fixture A"]
    # kiwix's result markup stays: <a href> first in each item, the book and word count lines.
    assert len(re.findall(rf'<li><a href="/content/{A}/[^"]+">', r.text)) == FROBNITZ
    assert r.text.count('<div class="book-title">from Search fixture A</div>') == FROBNITZ


def test_the_selection_is_kept_as_the_request_gave_it(client):
    t = Tree(client.get("/search", params={"content": A, "pattern": "frobnitz"}).text)
    assert t.all("input", type="hidden") == [{"type": "hidden", "name": "content", "value": A}]
    r = client.get("/search", params=[("books.name", A), ("books.name", FRA), ("pattern", "quorvex")])
    t = Tree(r.text)
    assert [i["value"] for i in t.all("input", type="hidden")] == [A, FRA]
    assert "2 books" in r.text and not [a for a in t.all("a") if (a.get("href") or "").endswith(f"/{A}/")]
    # No book named: none written out (the next search covers the library again).
    t = Tree(client.get("/search", params={"pattern": "frobnitz"}).text)
    assert t.all("input", type="hidden") == []
    t = Tree(client.get("/search", params={"books.filter.lang": "eng", "pattern": "frobnitz"}).text)
    assert t.all("input", type="hidden") == [{"type": "hidden", "name": "books.filter.lang", "value": "eng"}]


def test_query_and_titles_are_escaped(client):
    evil = "<img src=x onerror=alert(1)> \"q\" & 'x'"
    r = client.get("/search", params={"books.name": FRA, "pattern": evil})
    assert r.status_code == 200
    assert "<img src=x" not in r.text and "<script>alert" not in r.text
    t = Tree(r.text)
    assert t.all("input", name="pattern")[0]["value"] == evil  # echoed, as text
    assert not t.all("img")
    assert t.texts["title"] == [f"Search: {evil}"]
    assert t.texts["h1"] == [f'No results were found for "{evil}"']
    assert t.texts["label"] == [f"Search {HOSTILE_TITLE}"]  # the book's title, as text
    assert html.escape(HOSTILE_TITLE, quote=True) in r.text
    # Hostile selection values too.
    r = client.get("/search", params={"books.filter.lang": '"><script>alert(2)</script>', "pattern": "x"})
    assert "<script>alert(2)" not in r.text


def _navs(text: str) -> list[str]:
    return re.findall(r'<nav class="pagination"[^>]*>(.*?)</nav>', text, re.S)


def test_paging_top_and_bottom(client):
    q = {"books.name": A, "pattern": "frobnitz", "pageLength": 4}
    r = client.get("/search", params={**q, "start": 4})
    navs = _navs(r.text)
    assert len(navs) == 2 and navs[0] == navs[1]
    assert r.text.index(navs[0]) < r.text.index('<div class="results">') < r.text.rindex(navs[1])
    nav = navs[0]
    assert '<b aria-current="page">2</b>' in nav
    prev = f'href="/search?pattern=frobnitz&amp;books.name={A}&amp;start=0&amp;pageLength=4" rel="prev"'
    nxt = f'href="/search?pattern=frobnitz&amp;books.name={A}&amp;start=8&amp;pageLength=4" rel="next"'
    assert prev in nav and nxt in nav
    pages = (FROBNITZ + 3) // 4
    assert re.findall(r">(\d+)</[ab]>", nav) == [str(p) for p in range(1, pages + 1)]
    assert len(set(re.findall(r'aria-label="([^"]+)"', r.text[r.text.index("<main>"):]))) == 2  # told apart
    first = _navs(client.get("/search", params=q).text)[0]
    assert 'rel="prev"' not in first and 'rel="next"' in first and '<b aria-current="page">1</b>' in first
    last = _navs(client.get("/search", params={**q, "start": (pages - 1) * 4}).text)[0]
    assert 'rel="next"' not in last and 'rel="prev"' in last
    # One page of results: no paging.
    assert _navs(client.get("/search", params={"books.name": A, "pattern": "frobnitz"}).text) == []
    # Past the end: the real total, a way back, no current page.
    past = client.get("/search", params={**q, "start": 40})
    assert f"There are {FROBNITZ} results" in past.text
    nav = _navs(past.text)[0]
    assert "aria-current" not in nav and f"start={(pages - 1) * 4}&amp;pageLength=4\" rel=\"prev\"" in nav


def test_library_link_and_paging_under_the_root(rooted):
    r = rooted.get("/lib/search", params={"books.name": A, "pattern": "frobnitz", "pageLength": 4})
    assert r.status_code == 200
    t = Tree(r.text)
    assert {"class": "sp-btn sp-library", "href": "/lib/"} in t.all("a")
    assert t.all("form", role="search")[0]["action"] == "/lib/search"
    assert t.all("link", rel="icon")[0]["href"] == "/lib/favicon.ico"
    hrefs = [a["href"] or "" for a in t.all("a")]
    assert all(h.startswith("/lib/") for h in hrefs), hrefs
    assert sum(h.startswith("/lib/search?") for h in hrefs) == 2 * 4  # pages 2-4 and next, top and bottom
    assert sum(h.startswith(f"/lib/content/{A}/") for h in hrefs) == 4 + 1  # the results and the book


def test_empty_pattern_page(client):
    for params in ({"books.name": A}, {"books.name": A, "pattern": "  "}):
        r = client.get("/search", params=params)
        assert r.status_code == 200, params
        t = Tree(r.text)
        assert t.texts["h1"][0].startswith("No results were found for")
        assert "Nothing was searched" in r.text and _navs(r.text) == []
        assert t.all("input", name="pattern")[0]["value"] == params.get("pattern", "")
        assert {"class": "sp-btn sp-library", "href": "/"} in t.all("a")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_content_security_policy(client):
    r = client.get("/search", params={"books.name": A, "pattern": "frobnitz"})
    csp = r.headers["content-security-policy"]
    rules = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    assert rules["default-src"] == ["'none'"] and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", r.text, re.S)
    assert len(scripts) == 1 and scripts[0][0] == ""  # one inline script, no src
    assert rules["script-src"] == [_hash(scripts[0][1])]
    styles = re.findall(r"<style>(.*?)</style>", r.text, re.S)
    assert rules["style-src"] == [_hash(s) for s in styles]
    assert not re.search(r"\son\w+=", r.text)  # no inline event handlers (the CSP would refuse them)
    assert rules["form-action"] == ["'self'"] and rules["frame-ancestors"] == ["'self'"]
    assert client.get("/search", params={"books.name": A}).headers["content-security-policy"] == csp


def test_options_remove_the_library_link_and_the_box(zim_a_path):
    with TestClient(create_app([zim_a_path], threads=1, search_bar=False, library_button=False)) as c:
        r = c.get("/search", params={"books.name": A, "pattern": "frobnitz"})
        t = Tree(r.text)
        assert r.status_code == 200 and not t.all("form") and not t.all("a", href="/")
        assert 'class="sp-btn sp-book"' in r.text  # the book stays


def test_rss_is_not_the_page(client):
    r = client.get("/search", params={"books.name": A, "pattern": "frobnitz", "format": "xml"})
    assert r.headers["content-type"].startswith("application/rss+xml") and "content-security-policy" not in r.headers
