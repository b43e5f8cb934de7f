"""zim serve's reading pages: the viewer (/viewer#BOOK/PATH), /nojs, /catch/external.

What a browser does with them (following the frame, type-ahead, catching external
links) is tests/browser_serve.py's; here: statuses, types, security headers,
escaping, the toolbar's parts the options keep, and content left byte-exact.
Expected texts come from the archive written here, never from the server.
"""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message="Using `httpx`")
from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Mount  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from corpus import write_png  # noqa: E402
from libzim import writer  # noqa: E402
from libzim.serve import create_app  # noqa: E402
from libzim.serve.viewer import PAGE_CSP, VIEWER_CSP, linkable, viewer_url  # noqa: E402

from search_fixtures import zim_noindex_path  # noqa: E402,F401
from writer_support import TextItem  # noqa: E402

READER = "reader"  # the book of reader.zim
READER_TITLE = "Reader's <book> & \"co\""
EXTERNAL = "https://example.org/outside?x=1&y=<2>"
STYLE = "body { color: #123; }"
IN_A_TAB = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}  # what a browser sends for a tab


def page(title: str, body: str) -> str:
    return f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>" \
           f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"


# path -> (title, HTML). "velocar" is in every article's body; the titles start with distinct words.
ARTICLES = {
    "index.html": ("Welcome reader", page("Welcome reader",
        '<p>Start at <a id="to-first" href="A/first.html">the first article</a> or '
        '<a id="to-second" href="A/second.html#part2">the second, part 2</a>.</p>'
        f'<p><a id="external" href="{html.escape(EXTERNAL)}">An outside site</a> · '
        '<a id="external-blank" href="https://example.net/new" target="_blank">in a new tab</a> · '
        '<a id="mail" href="mailto:someone@example.org">mail</a> · '
        '<a id="external-local" href="http://localhost:2/elsewhere">another server</a> · '
        '<a id="library-link" href="../../">the library</a></p><p>velocar</p>')),
    "A/first.html": ("Alpha first article", page("Alpha first article",
        '<p>velocar one. <a id="back-home" href="../index.html">home</a> '
        '<a id="to-second-2" href="second.html">second</a></p>')),
    "A/second.html": ("Beta second article", page("Beta second article",
        '<p>velocar two</p>' + "<p>filler</p>" * 60 + '<h2 id="part2">Part 2</h2><p>the end</p>')),
} | {f"A/more{i}.html": (f"Gamma more {i}", page(f"Gamma more {i}", f"<p>velocar more{i}</p>")) for i in range(8)}


@pytest.fixture(scope="module")
def reader_path(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("viewer")
    out = d / "reader.zim"
    png = write_png(d / "illus.png").read_bytes()
    with writer.Creator(out).config_indexing(True, "eng") as c:
        c.set_mainpath("index.html")
        for path, (title, text) in ARTICLES.items():
            c.add_item(TextItem(path, title, text))
        c.add_item(TextItem("style.css", "", STYLE, "text/css", hints={}))
        for k, v in (("Title", READER_TITLE), ("Language", "eng"), ("Description", "A <i>book</i> to read"),
                     ("Creator", "us"), ("Publisher", "us"), ("Date", "2026-01-01"), ("Name", "reader")):
            c.add_metadata(k, v)
        c.add_illustration(48, png)
    return out


@pytest.fixture(scope="module")
def app(reader_path, zim_noindex_path):
    return create_app([reader_path, zim_noindex_path], threads=2)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, raise_server_exceptions=True) as c:
        yield c


def viewer_text(reader_path, **options) -> str:
    with TestClient(create_app([reader_path], threads=1, **options)) as c:
        return c.get("/viewer").text


# -- the viewer -------------------------------------------------------------------


def test_viewer_page(client):
    r = client.get("/viewer")
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["content-security-policy"] == VIEWER_CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    t = r.text
    for part in ('id="zv-library"', 'id="zv-home"', 'id="zv-q"', 'id="zv-random"', 'id="zv-frame"',
                 'name="zv-frame"', 'role="combobox"', 'data-block-external="0"', 'data-root=""'):
        assert part in t, part
    # The toolbar's links and search target the frame by name: history moves the frame.
    assert t.count('target="zv-frame"') == 3
    # One script, from a file (the CSP has no 'unsafe-inline'), none inline.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", t, re.S)
    assert len(scripts) == 1 and scripts[0][1] == "" and 'src="/skin/viewer.js?v=' in scripts[0][0]
    assert "style=" not in t and "<style" not in t  # style-src 'self' allows no inline styles
    assert 'href="/nojs"' in t  # the way out for browsers without JavaScript


def test_viewer_csp_allows_no_more_than_needed():
    parts = dict(p.strip().split(" ", 1) for p in VIEWER_CSP.split(";"))
    assert parts["default-src"] == "'none'"
    for name in ("script-src", "style-src", "connect-src", "frame-src", "form-action", "img-src"):
        assert parts[name] == "'self'", name
    assert "unsafe" not in VIEWER_CSP and "*" not in VIEWER_CSP and "data:" not in VIEWER_CSP
    assert parts["base-uri"] == "'none'" and parts["object-src"] == "'none'"
    assert "script-src" not in PAGE_CSP and "'none'" in PAGE_CSP


@pytest.mark.parametrize("opts, absent, present", [
    ({"search_bar": False}, ['id="zv-q"', 'id="zv-search"', 'id="zv-suggestions"'],
     ['id="zv-library"', 'id="zv-home"', 'id="zv-random"']),
    ({"library_button": False}, ['id="zv-library"'], ['id="zv-q"', 'id="zv-home"', 'id="zv-random"']),
    ({"search_bar": False, "library_button": False}, ['id="zv-q"', 'id="zv-library"'],
     ['id="zv-home"', 'id="zv-random"', 'id="zv-frame"']),
])
def test_toolbar_parts_hidden_by_the_options(reader_path, opts, absent, present):
    t = viewer_text(reader_path, **opts)
    for part in absent:
        assert part not in t, part
    for part in present:
        assert part in t, part


def test_block_external_setting(reader_path, client):
    assert 'data-block-external="0"' in client.get("/viewer").text
    assert 'data-block-external="1"' in viewer_text(reader_path, block_external=True)


def test_assets(client):
    t = client.get("/viewer").text
    for name, mimetype in (("viewer.js", "application/javascript; charset=utf-8"),
                           ("viewer.css", "text/css; charset=utf-8")):
        m = re.search(rf'"(/skin/{name}\?v=[0-9a-f]+)"', t)
        assert m, name
        r = client.get(m.group(1))
        assert r.status_code == 200 and r.headers["content-type"] == mimetype and len(r.content) > 1000
        assert "immutable" in r.headers["cache-control"]
        etag = r.headers["etag"]
        assert client.get(m.group(1), headers={"If-None-Match": etag}).status_code == 304
        h = client.head(m.group(1))
        assert h.status_code == 200 and h.content == b""
    assert client.get("/skin/other.js").status_code == 404


def test_viewer_under_a_mount_point(reader_path):
    outer = Starlette(routes=[Mount("/lib", app=create_app([reader_path], threads=1))])
    with TestClient(outer) as c:
        t = c.get("/lib/viewer").text
        assert 'data-root="/lib"' in t and 'src="/lib/skin/viewer.js?v=' in t and 'href="/lib/nojs"' in t
        assert c.get(re.search(r'src="(/lib/skin/viewer\.js[^"]*)"', t).group(1)).status_code == 200
        assert 'action="/lib/search"' in c.get("/lib/nojs").text


def test_viewer_url():
    assert viewer_url("b k", "A/x y#z.html", "/r") == "/r/viewer#b%20k/A/x%20y%23z.html"
    assert viewer_url("a/b", "") == "/viewer#a%2Fb/"


def test_content_stays_byte_exact(client):
    for path, (_, text) in ARTICLES.items():
        r = client.get(f"/content/{READER}/{path}")
        assert r.status_code == 200 and r.content == text.encode(), path


# -- -b and /content/ opened outside the viewer ---------------------------------------


@pytest.fixture(scope="module")
def blocking(reader_path):
    with TestClient(create_app([reader_path], threads=1, block_external=True)) as c:
        yield c


def test_blocked_article_in_a_tab_goes_to_the_viewer(blocking):
    for path in ARTICLES:
        for method in ("GET", "HEAD"):
            r = blocking.request(method, f"/content/{READER}/{path}", headers=IN_A_TAB, follow_redirects=False)
            assert r.status_code == 302 and r.headers["location"] == f"/viewer#{READER}/{path}", (method, path)
            assert r.content == b"" and "Sec-Fetch-Dest" in r.headers["vary"]
    r = blocking.get(f"/content/{READER}/A/first.html?a=1&b=%3C", headers=IN_A_TAB, follow_redirects=False)
    assert r.headers["location"] == f"/viewer#{READER}/A/first.html?a=1&b=%3C"
    # kiwix-serve 3.3's URL, the book's root and /raw/ end there too
    for url in (f"/{READER}/A/first.html", f"/content/{READER}", f"/raw/{READER}/content/A/first.html"):
        r = blocking.get(url, headers=IN_A_TAB)
        assert r.status_code == 200 and r.url.path == "/viewer", url
    # even when the browser has the page cached (If-None-Match): no 304 into the tab
    etag = blocking.get(f"/content/{READER}/index.html").headers["etag"]
    r = blocking.get(f"/content/{READER}/index.html", headers=IN_A_TAB | {"If-None-Match": etag},
                     follow_redirects=False)
    assert r.status_code == 302


def test_blocked_article_in_the_frame_stays_byte_exact(blocking):
    # The viewer's frame (Sec-Fetch-Dest: iframe), a script's fetch (empty) and programs
    # that send no such header (curl, Kiwix apps) get the bytes as the archive has them.
    for dest in ({"Sec-Fetch-Dest": "iframe"}, {"Sec-Fetch-Dest": "empty"}, {}):
        for path, (_, text) in ARTICLES.items():
            r = blocking.get(f"/content/{READER}/{path}", headers=dest, follow_redirects=False)
            assert r.status_code == 200 and r.content == text.encode(), (dest, path)
            assert "Sec-Fetch-Dest" in r.headers["vary"]  # no cache may give a tab the frame's answer
            assert r.headers["content-security-policy"].endswith(" form-action 'self';")


def test_blocked_non_document_in_a_tab_is_served(blocking):
    r = blocking.get(f"/content/{READER}/style.css", headers=IN_A_TAB, follow_redirects=False)
    assert r.status_code == 200 and r.content == STYLE.encode()


def test_unblocked_article_in_a_tab_is_served(client):
    for path, (_, text) in ARTICLES.items():
        r = client.get(f"/content/{READER}/{path}", headers=IN_A_TAB, follow_redirects=False)
        assert r.status_code == 200 and r.content == text.encode(), path
        assert "Sec-Fetch-Dest" not in r.headers.get("vary", "")
        assert "form-action" not in r.headers["content-security-policy"]  # kiwix-serve's policy, as it is


def test_blocked_article_under_a_mount_point(reader_path):
    with TestClient(create_app([reader_path], threads=1, block_external=True, root="/wiki")) as c:
        r = c.get(f"/wiki/content/{READER}/A/first.html", headers=IN_A_TAB, follow_redirects=False)
        assert r.status_code == 302 and r.headers["location"] == f"/wiki/viewer#{READER}/A/first.html"


def test_blocked_viewer_says_why_it_needs_javascript(reader_path):
    t = viewer_text(reader_path, block_external=True)
    assert "without JavaScript articles do not open here" in t
    assert "without JavaScript articles do not open here" not in viewer_text(reader_path)


# -- /nojs ---------------------------------------------------------------------------


def test_nojs_library(client):
    r = client.get("/nojs")
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["content-security-policy"] == PAGE_CSP
    t = r.text
    assert "<script" not in t
    assert html.escape(READER_TITLE) in t and READER_TITLE not in t
    assert "A &lt;i&gt;book&lt;/i&gt; to read" in t
    assert f'href="/content/{READER}/"' in t and 'href="/content/a-noindex/"' in t
    assert "2 books" in t and f"{len(ARTICLES)} articles" in t
    assert re.search(r'<img src="/catalog/v2/illustration/[0-9a-f-]{36}\?size=48"', t)
    # The full-text form offers the indexed book only.
    form = t[t.index('action="/search"'):]
    assert f'<option value="{READER}">' in form and '<option value="a-noindex">' not in form


def test_nojs_filters(client):
    t = client.get("/nojs", params={"q": "to read"}).text
    assert f'href="/content/{READER}/"' in t and 'href="/content/a-noindex/"' not in t and "1 of 2 books" in t
    t = client.get("/nojs", params={"lang": "xyz"}).text
    assert 'href="/content/' not in t and "0 of 2 books" in t
    mark = "<zz9 onload=x>"
    t = client.get("/nojs", params={"q": mark, "lang": mark}).text
    assert "<zz9" not in t and html.escape(mark) in t
    assert client.get("/nojs", params={"q": "x" * 1001}).status_code == 400


# -- /catch/external --------------------------------------------------------------


def test_catch_external(client):
    r = client.get("/catch/external", params={"source": EXTERNAL})
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["content-security-policy"] == PAGE_CSP and r.headers["referrer-policy"] == "no-referrer"
    t = r.text
    assert "<script" not in t and "<2>" not in t
    assert f'id="zv-follow" href="{html.escape(EXTERNAL)}" rel="noopener noreferrer"' in t
    assert f"<code class=\"zv-url\">{html.escape(EXTERNAL)}</code>" in t


@pytest.mark.parametrize("source", [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>", "vbscript:x", "http:alert(1)", "//evil.example/x",
    "https://example.org/\nx", "mailto:a@example.org", "file:///etc/passwd",
])
def test_catch_external_links_only_web_addresses(client, source):
    r = client.get("/catch/external", params={"source": source})
    assert r.status_code == 200
    assert 'id="zv-follow"' not in r.text and "not a web address" in r.text
    assert html.escape(source) in r.text and "<script>" not in r.text


def test_linkable():
    assert linkable("http://example.org") and linkable("HTTPS://example.org/a?b#c")
    assert not linkable("https://") and not linkable("https://[::1") and not linkable("")


def test_catch_external_bad_requests(client):
    assert client.get("/catch/external").status_code == 404  # kiwix-serve: 404 without a source
    assert client.get("/catch/external?source=").status_code == 404
    assert client.get("/catch/external", params={"source": "https://x.org/" + "a" * 5000}).status_code == 400
    assert client.get("/catch/other").status_code == 404


def test_favicon_is_the_one_books_illustration_else_a_small_default(reader_path, client):
    # Issue 39: every page made the browser fetch /favicon.ico, which was a 404.
    png = write_png(reader_path.parent / "again.png").read_bytes()  # the fixture's illustration
    with TestClient(create_app([reader_path], threads=1)) as one:
        r = one.get("/favicon.ico")
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"
        assert r.content == png
        etag = r.headers["etag"]
        assert one.get("/favicon.ico", headers={"If-None-Match": etag}).status_code == 304
    r = client.get("/favicon.ico")  # two books: the default
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.content.startswith(b"\x89PNG\r\n\x1a\n") and r.content != png
    assert r.content[16:24] == (32).to_bytes(4, "big") * 2  # IHDR: 32 x 32
    # The pages link it under the root, where a root-prefixed server serves it.
    with TestClient(create_app([reader_path], threads=1, root="/wiki")) as rooted:
        assert '<link rel="icon" href="/wiki/favicon.ico">' in rooted.get("/wiki/").text
        assert '<link rel="icon" href="/wiki/favicon.ico">' in rooted.get("/wiki/viewer").text
        assert rooted.get("/wiki/favicon.ico").content == png
