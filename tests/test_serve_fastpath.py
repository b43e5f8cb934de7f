"""zim serve's short request path (issue 42): the fast dispatcher's answers are Starlette's,
byte for byte; kept answers (content, suggestions) are the worker's and follow the library;
the access log's lines are uvicorn's.

The reference for every request is the same app with the fast path taken out and no
answers kept: the router and the workers answer it, as before the change."""

from __future__ import annotations

import gzip
import io
import logging
import random
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
from starlette.testclient import TestClient  # noqa: E402

from libzim.serve import Library, create_app  # noqa: E402
from libzim.serve.core import AnswerCache, library_generation  # noqa: E402
from libzim.serve.fastpath import FastPath, checked_routes  # noqa: E402

from corpus import write_png  # noqa: E402
from libzim import writer  # noqa: E402
from search_fixtures import *  # noqa: E402,F401,F403
from writer_support import TextItem  # noqa: E402

A = "a"  # zim_a_path is .../a.zim
G = "g"  # big_path: entries above the gzip threshold, the kept-answer bound and the streaming one

# Compressible text of known sizes: gzipped when asked (above 1,400 bytes), kept (under 256 KiB),
# not kept (over it), streamed (over 1 MiB).
WORDS = " ".join(f"mot{i} <b>{i * 7919 % 1000}</b>" for i in range(200_000))
PAGE = f"<html><head><title>Big</title></head><body><p>{WORDS[:20_000]}</p></body></html>"
STYLE = "p { color: red; }\n" * 20_000  # 360 KB: over the kept bound; its gzip under it
SCRIPT = random.Random(42).randbytes(750_000).hex()  # 1.5 MB, over the streaming bound; its gzip over the kept one


@pytest.fixture(scope="module")
def big_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fastpath") / "g.zim"
    no_front = {writer.Hint.FRONT_ARTICLE: False}
    with writer.Creator(out).config_indexing(True, "eng") as c:
        c.set_mainpath("page.html")
        c.add_item(TextItem("page.html", "Big page", PAGE))
        c.add_item(TextItem("page2.html", "Big page two", PAGE.replace("mot", "word")))
        c.add_item(TextItem("style.css", "", STYLE, "text/css", hints=no_front))
        c.add_item(TextItem("script.js", "", SCRIPT, "application/javascript", hints=no_front))
        c.add_item(TextItem("doc.pdf", "", "%PDF-1.4 " * 400, "application/pdf", hints=no_front))
        c.add_item(TextItem("pic.svg", "", "<svg xmlns='http://www.w3.org/2000/svg'>" + " " * 3000 + "</svg>",
                            "image/svg+xml", hints=no_front))
        c.add_redirection("old.html", "Old", "page.html", {})
        for k, v in (("Title", "Big"), ("Language", "eng"), ("Name", "big"), ("Description", "Big pages")):
            c.add_metadata(k, v)
        c.add_illustration(48, write_png(out.with_suffix(".png")).read_bytes())
    return out


def _without_fast_path(app):
    """The app as Starlette alone answers it: FastPath taken out of the middleware."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FastPath]
    app.middleware_stack = None
    return app


def _normal(headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A multipart answer's boundary (random per response) replaced by a fixed one."""
    boundary = None
    for k, v in headers:
        m = re.match(rb"multipart/byteranges; boundary=(\w+)", v) if k.lower() == b"content-type" else None
        if m:
            boundary = m.group(1)
    if boundary is None:
        return headers, body
    return ([(k, v.replace(boundary, b"BOUNDARY")) for k, v in headers], body.replace(boundary, b"BOUNDARY"))


REQUESTS: list[tuple[str, str, dict[str, str]]] = [
    ("GET", f"/content/{A}/topic00.html", {}),
    ("GET", f"/content/{A}/topic00.html", {"Accept-Encoding": "gzip"}),
    ("GET", f"/content/{A}/topic01.html", {"Accept-Encoding": "gzip;q=0"}),
    ("HEAD", f"/content/{A}/topic00.html", {"Accept-Encoding": "gzip"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=0-9"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=0-9,20-29"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=900000-"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=0-9", "If-Range": '"nope"'}),
    ("GET", f"/content/{A}/shared.html", {}),
    ("GET", f"/content/{A}/", {}),
    ("GET", f"/content/{A}", {}),
    ("GET", "/content/", {}),
    ("GET", "/content/nobook/x.html", {}),
    ("HEAD", "/content/nobook/x.html", {}),
    ("GET", f"/content/{A}/no-such-page.html", {}),
    ("GET", f"/content/{A}/a%0Ab", {}),
    ("GET", f"/content/{A}/caf%C3%A9%20x.html", {}),
    ("GET", f"/content/{A}/%zz", {}),  # bad percent-encodings: Guard's 400, or a path with U+FFFD
    ("GET", f"/content/{A}/%C3", {}),
    ("GET", f"/content/{A}/topic00.html%", {}),
    ("GET", f"/content/{A}%2Ftopic00.html", {}),
    ("GET", f"/content/{A}/topic00.html?x=1&y=%C3", {"Accept-Encoding": "gzip"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=0-9", "Accept-Encoding": "gzip"}),
    ("HEAD", f"/content/{A}/topic00.html", {"Range": "bytes=5-"}),
    ("GET", f"/content/{A}/topic00.html", {"Range": "bytes=x"}),
    ("GET", "/content//topic00.html", {}),
    ("GET", f"/raw/{A}/meta/", {}),
    ("GET", f"/suggest?content={A}&term=%C3", {}),
    ("GET", f"/suggest?content={A}&content={A}&term=top", {"Accept-Encoding": "gzip"}),
    ("GET", "/skin/a/b", {}),
    ("HEAD", "/skin/viewer.js", {}),
    ("GET", f"/raw/{A}/content/topic00.html", {}),
    ("GET", f"/raw/{A}/content/topic00.html", {"Accept-Encoding": "gzip"}),
    ("GET", f"/raw/{A}/meta/Title", {}),
    ("GET", f"/raw/{A}/meta/Nope", {}),
    ("GET", f"/raw/{A}/meta/Title/x", {}),
    ("GET", f"/raw/{A}/other/x", {}),
    ("GET", f"/raw/{A}", {}),
    ("GET", f"/suggest?content={A}&term=top", {}),
    ("GET", f"/suggest?content={A}&term=top&count=3&start=1", {}),
    ("GET", f"/suggest?content={A}&term=", {}),
    ("GET", f"/suggest?content={A}&term=top&count=x", {}),
    ("GET", "/suggest?content=nobook&term=top", {}),
    ("GET", "/suggest?term=top", {}),
    ("HEAD", f"/suggest?content={A}&term=top", {}),
    ("GET", "/skin/viewer.js", {}),
    ("GET", "/skin/viewer.css", {"Accept-Encoding": "gzip"}),
    ("GET", "/skin/nope.js", {}),
    ("GET", "/skin/", {}),
    ("GET", "/skin/library.css", {}),  # the library page's, routed before the viewer's /skin/{name}
    ("GET", "/skin/library.js", {"Accept-Encoding": "gzip"}),
    ("GET", "/search?content=a&pattern=topic", {}),
    ("GET", "/", {}),
]
BIG_REQUESTS: list[tuple[str, str, dict[str, str]]] = [
    (m, f"/content/{G}/{p}", h)
    for p in ("page.html", "style.css", "script.js", "doc.pdf", "pic.svg", "old.html", "page2.html")
    for m, h in (("GET", {}), ("GET", {"Accept-Encoding": "gzip"}), ("GET", {}), ("HEAD", {"Accept-Encoding": "gzip"}),
                 ("GET", {"Accept-Encoding": "gzip", "Range": "bytes=10-20"}), ("GET", {"Accept-Encoding": "gzip"}),
                 ("GET", {"Range": "bytes=0-4,-5"}), ("GET", {"Accept-Encoding": "deflate, gzip;q=0"}))
] + [
    ("GET", f"/raw/{G}/content/page.html", {"Accept-Encoding": "gzip"}),
    ("GET", f"/raw/{G}/content/page.html", {}),
    ("GET", f"/raw/{G}/content/old.html", {}),
    ("GET", f"/content/{G}", {}),
    ("GET", f"/suggest?content={G}&term=big", {}),
    ("GET", f"/suggest?content={G}&term=big", {"Accept-Encoding": "gzip"}),
]


def _same_state(a, b) -> None:
    """Both apps' generated pages tagged alike (their ETag names the server instance and its
    library: two apps differ there by design)."""
    b.state.server.feed_id = a.state.server.feed_id
    b.state.server.library._etag_generation = library_generation(a.state.server.library)


@pytest.mark.parametrize("options", [{}, {"root": "/wiki"}, {"block_external": True}])
def test_fast_path_answers_as_starlette(zim_a_path, big_path, options):
    """Every request, asked twice (the second from the kept answers), gets the reference's
    status, headers (names, values, order) and body; the kept answers' gzip goes only to
    a client that asks for it, never with a range or to HEAD as a body."""
    fast = create_app([zim_a_path, big_path], threads=2, **options)
    assert set(checked_routes(fast.router.routes)) == {"content", "book_root", "raw", "meta", "suggest", "skin/viewer.js",
                                                       "skin/viewer.css"}
    slow = _without_fast_path(create_app([zim_a_path, big_path], threads=2, answer_cache=0, **options))
    _same_state(fast, slow)
    root = options.get("root", "")
    etag = None
    tab = [("GET", f"/content/{A}/topic00.html", {"Sec-Fetch-Dest": "document"}),
           ("GET", f"/content/{G}/page.html", {"Sec-Fetch-Dest": "document", "Accept-Encoding": "gzip"})]
    with TestClient(fast) as f, TestClient(slow) as s:
        for c in (f, s):  # httpx asks for gzip by default: a request here asks only when it says so
            del c.headers["accept-encoding"]
        for method, url, headers in REQUESTS + BIG_REQUESTS + tab:
            for _ in range(2):
                a = f.request(method, root + url, headers=headers, follow_redirects=False)
                b = s.request(method, root + url, headers=headers, follow_redirects=False)
                assert a.status_code == b.status_code, (method, url)
                assert _normal(a.headers.raw, a.content) == _normal(b.headers.raw, b.content), (method, url)
            if url.endswith("topic00.html") and not headers and a.status_code == 200:
                etag = a.headers["etag"]
        assert etag is not None
        gz = etag[:-1] + '.gz"'
        for h in ({"If-None-Match": etag}, {"If-None-Match": etag, "Accept-Encoding": "gzip"},
                  {"If-None-Match": gz}, {"If-None-Match": f'W/"x", {gz}', "Range": "bytes=0-3"}, {"If-None-Match": "*"}):
            a = f.get(root + f"/content/{A}/topic00.html", headers=h)
            b = s.get(root + f"/content/{A}/topic00.html", headers=h)
            assert a.status_code == b.status_code == 304
            assert a.headers.raw == b.headers.raw
        answers = fast.state.server.answers
        assert answers.hits > 0  # the second asks came from the kept answers
        kept = {k[1]: v[0][1] for k, v in answers._items.items() if k[0] == G}
        assert {"page.html", "page2.html", "pic.svg", "old.html", "style.css"} <= set(kept)
        assert kept["page.html"][0] == PAGE.encode() and kept["page.html"][3] is not None  # both codings
        assert kept["style.css"][0] is None  # over the bound as it is: its gzip alone, which fits
        assert gzip.decompress(kept["style.css"][3]) == STYLE.encode()
        assert len(gzip.compress(SCRIPT.encode())) > answers.max_item and "script.js" not in kept  # neither fits
        assert 0 < answers.size <= answers.max_bytes
        plain = f.get(root + f"/content/{G}/page.html")  # after gzip was kept: the plain bytes
        assert "content-encoding" not in plain.headers and plain.text == PAGE
        packed = f.get(root + f"/content/{G}/page.html", headers={"Accept-Encoding": "gzip"})
        assert packed.headers["content-encoding"] == "gzip" and packed.text == PAGE


def test_a_route_before_content_turns_its_shape_off(zim_a_path):
    """A route module listed before content's that claims /content/... keeps it: the fast
    path leaves that shape to the router."""
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    app = create_app([zim_a_path], threads=1)
    routes = [Route("/content/{book}/{path:path}", lambda r: PlainTextResponse("mine")), *app.router.routes]
    shapes = checked_routes(routes)
    assert "content" not in shapes and "suggest" in shapes


def test_answer_cache_bounds():
    c = AnswerCache(1000, max_item=600)
    c.put("a", 1, 400)
    c.put("b", 2, 400)
    assert c.get("a") == 1  # now the most recent
    c.put("c", 3, 400)  # over 1000: the least recently used ("b") goes
    assert c.get("b") is None and c.get("a") == 1 and c.get("c") == 3
    assert c.size == 800
    c.put("d", 4, 700)  # over max_item: not kept
    assert c.get("d") is None and c.size == 800
    c.put("a", 5, 100)  # replaced: its size too
    assert c.get("a") == 5 and c.size == 500
    assert AnswerCache(0).max_bytes == 0
    z = AnswerCache(0)
    z.put("x", 1, 1)
    assert z.get("x") is None


def test_kept_content_follows_the_library(zim_a_path, zim_b_path, tmp_path):
    """A kept answer is used for the Book it came from only: the same name served from
    another archive (a new library) answers with the new archive's content."""
    link = tmp_path / "x.zim"
    link.symlink_to(zim_a_path)
    app = create_app(Library([link]), threads=1)
    with TestClient(app) as c:
        first = c.get("/content/x/shared.html")
        assert first.status_code == 200
        again = c.get("/content/x/shared.html")
        assert again.content == first.content and app.state.server.answers.hits >= 1
        link.unlink()
        link.symlink_to(zim_b_path)
        app.state.server.library = Library([link])
        after = c.get("/content/x/shared.html")
        expected = TestClient(create_app([zim_b_path], threads=1)).get("/content/b/shared.html")
        assert after.status_code == expected.status_code == 200
        assert after.content == expected.content != first.content
        assert after.headers["etag"] == expected.headers["etag"] != first.headers["etag"]


def test_kept_suggestions_follow_the_library(zim_a_path, zim_b_path, tmp_path):
    link = tmp_path / "x.zim"
    link.symlink_to(zim_a_path)
    app = create_app(Library([link]), threads=1)
    server = app.state.server
    with TestClient(app) as c:
        first = c.get("/suggest?content=x&term=t")
        assert first.status_code == 200 and first.json()
        hits = server.suggestions.hits
        assert c.get("/suggest?content=x&term=t").content == first.content
        assert server.suggestions.hits == hits + 1
        two = c.get("/suggest?content=x&term=t&count=2").json()  # its own key, not count=10's answer
        assert [r for r in two if r.get("kind") == "path"] == [r for r in first.json() if r.get("kind") == "path"][:2]
        link.unlink()
        link.symlink_to(zim_b_path)
        server.library = Library([link])
        after = c.get("/suggest?content=x&term=t")
        want = TestClient(create_app([zim_b_path], threads=1)).get("/suggest?content=b&term=t").json()
        assert [(r.get("value"), r.get("path")) for r in after.json()] == \
            [(r.get("value"), r.get("path")) for r in want]
        assert after.content != first.content
        assert after.headers["etag"] != first.headers["etag"]  # the new library's state


def _uvicorn_access_logger(stream, colors: bool, name: str) -> logging.Logger:
    from uvicorn.logging import AccessFormatter

    logger = logging.getLogger(f"test.access.{name}.{colors}")
    logger.handlers = []
    logger.propagate = False
    logger.setLevel(logging.INFO)
    h = logging.StreamHandler(stream)
    h.setFormatter(AccessFormatter('%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s',
                                   use_colors=colors))
    logger.addHandler(h)
    return logger


@pytest.mark.parametrize("colors", [False, True])
def test_access_log_lines_are_uvicorns(colors):
    """The same calls through logging and through AccessLog write the same text."""
    from libzim.serve.protocol import AccessLog

    calls = [("127.0.0.1:5000", "GET", "/content/a/x.html?q=%C3%A9", "1.1", 200),
             ("[::1]:7", "HEAD", "/suggest?term=a b", "1.1", 304),
             ("127.0.0.1:5000", "GET", "/x", "1.0", 404), ("127.0.0.1:1", "GET", "/y", "1.1", 599)]
    ref, ours = io.StringIO(), io.StringIO()
    plain = _uvicorn_access_logger(ref, colors, "plain")
    fast_logger = _uvicorn_access_logger(ours, colors, "fast")
    log = AccessLog(fast_logger)
    assert log.handler is not None
    for args in calls:
        plain.info('%s - "%s %s HTTP/%s" %d', *args)
        log.info('%s - "%s %s HTTP/%s" %d', *args)
    log._flush()
    assert ours.getvalue() == ref.getvalue()
    assert ref.getvalue().count("\n") == len(calls)


def test_access_log_leaves_other_setups_to_logging():
    from libzim.serve.protocol import AccessLog

    stream = io.StringIO()
    logger = _uvicorn_access_logger(stream, False, "other")
    logger.handlers[0].setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    assert AccessLog(logger).handler is None  # a time stamp: every line through logging
    logger.handlers[0].setFormatter(logging.Formatter("%(message)s"))
    logger.addFilter(lambda r: True)
    assert AccessLog(logger).handler is None


class _Writes:
    """A transport recording its writes."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_head_goes_out_with_the_body():
    from libzim.serve.protocol import ONE_WRITE_MAX, _HeadWithBody

    t = _Writes()
    w = _HeadWithBody(t)
    w.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # not held: the client waits for it
    w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    assert t.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    w.write(b"hi")
    w.write(b"more")  # a stream's next chunks: as they come
    assert t.writes[1:] == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi", b"more"]
    assert not w.is_closing()  # the rest is the transport's

    t = _Writes()
    w = _HeadWithBody(t)
    big = b"x" * (ONE_WRITE_MAX + 1)
    w.write(b"HEAD\r\n\r\n")
    w.write(big)  # not copied to join it
    assert t.writes == [b"HEAD\r\n\r\n", big]

    t = _Writes()
    w = _HeadWithBody(t)
    w.write(b"HTTP/1.1 200 OK\r\n\r\n")
    w.close()  # an app that failed after starting its response: the head still goes first
    assert t.writes == [b"HTTP/1.1 200 OK\r\n\r\n"] and t.closed


def test_live_server_answers_and_logs_as_uvicorn(zim_a_path, big_path, tmp_path):
    """zim serve (httptools, its head-with-body writes, its access log): keep-alive GET, HEAD,
    304, a streamed answer, HTTP/1.0 (connection closed after the answer), each answered whole,
    and one access line per request in uvicorn's words."""
    import http.client
    import socket
    import subprocess
    import time

    from conftest import child_python, free_port

    pytest.importorskip("httptools", reason="httptools is not installed (the serve extra installs it)")
    port = free_port()
    out_f = open(tmp_path / "stdout", "w+b")
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "serve", str(zim_a_path), str(big_path),
                             "--address", "127.0.0.1", "--port", str(port), "--threads", "2", "--http", "httptools"],
                            stdout=out_f, stderr=subprocess.STDOUT, **child_python())
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        asked = []

        def ask(method: str, url: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
            c.request(method, url, headers=headers or {})
            r = c.getresponse()
            r.body = r.read()
            asked.append((method, url, r.status))
            return r

        for _ in range(2):  # the second from the kept answers
            r = ask("GET", f"/content/{G}/page.html")
            assert r.status == 200 and r.body == PAGE.encode()
            etag = r.getheader("etag")
            r = ask("HEAD", f"/content/{G}/page.html")
            assert r.status == 200 and r.body == b"" and r.getheader("content-length") == str(len(PAGE))
            r = ask("GET", f"/content/{G}/page.html", {"If-None-Match": etag})
            assert r.status == 304 and r.body == b""
            r = ask("GET", f"/content/{G}/page.html", {"Accept-Encoding": "gzip"})
            assert r.getheader("content-encoding") == "gzip" and gzip.decompress(r.body) == PAGE.encode()
            r = ask("GET", f"/content/{G}/script.js")
            assert r.status == 200 and r.body == SCRIPT.encode()
            r = ask("GET", f"/suggest?content={G}&term=big")
            assert r.status == 200 and b"Big page" in r.body
            r = ask("GET", f"/content/{G}/nothing-here")
            assert r.status == 404
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"GET /content/{G}/page.html HTTP/1.0\r\n\r\n".encode())
            got = b""
            while chunk := s.recv(1 << 16):  # the server closes after the answer
                got += chunk
        asked.append(("GET", f"/content/{G}/page.html", 200))
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close" in head.lower() and body == PAGE.encode()
        c.close()
    finally:
        proc.terminate()
        proc.wait(30)
        out_f.seek(0)
        log = out_f.read().decode("utf-8", "replace")
        out_f.close()
    lines = [line for line in log.splitlines() if " - \"" in line]
    reasons = {200: "OK", 304: "Not Modified", 404: "Not Found"}
    want = [(m, u, "1.0" if i == len(asked) - 1 else "1.1", s) for i, (m, u, s) in enumerate(asked)]
    assert len(lines) == len(want), log
    for line, (m, u, v, s) in zip(lines, want):
        assert re.fullmatch(rf'INFO: +127\.0\.0\.1:\d+ - "{m} {re.escape(u)} HTTP/{v}" {s} {reasons[s]}', line), line


def test_kept_answers_skip_the_handler_only_when_nothing_else_is_asked(zim_a_path, big_path, monkeypatch):
    """content.send_kept answers a plain GET of a kept entry itself (no Request, no Response);
    anything it does not take (a condition, a range, HEAD, a redirect, an unknown or
    never-asked path) reaches the handler, and every answer is the reference's."""
    from libzim.serve import content as content_module

    fast = create_app([zim_a_path, big_path], threads=2)
    slow = _without_fast_path(create_app([zim_a_path, big_path], threads=2, answer_cache=0))
    handled = []
    real = content_module._content

    async def counting(server, request, name, path, raw=False):
        if server is fast.state.server:  # the reference app's calls are not counted
            handled.append(path)
        return await real(server, request, name, path, raw)

    monkeypatch.setattr(content_module, "_content", counting)
    page = f"/content/{G}/page.html"
    kept = [  # (headers, whether send_kept answers it on the second ask)
        ({}, True), ({"Accept-Encoding": "gzip"}, True), ({"Accept-Encoding": "gzip;q=0"}, True),
        ({"Accept-Encoding": ""}, True), ({"Accept-Encoding": "br, GZIP"}, True),
        ({"If-None-Match": '"x"'}, False), ({"Range": "bytes=0-9"}, False), ({"If-Range": '"x"'}, False),
    ]
    with TestClient(fast) as f, TestClient(slow) as s:
        for c in (f, s):
            del c.headers["accept-encoding"]
        for headers, direct in kept:
            f.get(page, headers=headers)  # the first gzip ask makes the gzip kept beside the content
            handled.clear()
            a, b = f.get(page, headers=headers), s.get(page, headers=headers)
            assert (a.status_code, a.headers.raw, a.content) == (b.status_code, b.headers.raw, b.content), headers
            assert handled == ([] if direct else ["page.html"]), headers
        for method, url in (("HEAD", page), ("GET", f"/raw/{G}/content/old.html"), ("GET", f"/content/{G}/nope.html")):
            f.request(method, url, follow_redirects=False)
            handled.clear()
            a = f.request(method, url, follow_redirects=False)
            b = s.request(method, url, follow_redirects=False)
            assert (a.status_code, a.headers.raw, a.content) == (b.status_code, b.headers.raw, b.content), url
            assert len(handled) == 1, url  # not taken by send_kept


@pytest.fixture(scope="module")
def titles_path(tmp_path_factory) -> Path:
    """Forty articles whose titles share a prefix: a suggestion answer of 40 is ~4 KB of JSON."""
    out = tmp_path_factory.mktemp("fastpath") / "t.zim"
    with writer.Creator(out).config_indexing(True, "eng") as c:
        c.set_mainpath("kept00.html")
        for i in range(40):
            c.add_item(TextItem(f"kept{i:02}.html", f"Kept suggestion number {i:02} with a long title",
                                f"<html><body><p>Kept suggestion {i}</p></body></html>"))
        for k, v in (("Title", "Titles"), ("Language", "eng"), ("Name", "titles")):
            c.add_metadata(k, v)
    return out


def test_a_kept_suggestion_keeps_its_gzip(titles_path, monkeypatch):
    """A kept suggestion answer is gzipped once, the first time a client takes gzip, and
    the same bytes go to every later one; a client without gzip still gets the JSON."""
    from libzim.serve import core as core_module
    from libzim.serve import search as search_module

    made = []
    real = core_module.gzip_bytes

    def counting(body):
        made.append(len(body))
        return real(body)

    monkeypatch.setattr(search_module, "gzip_bytes", counting, raising=False)
    monkeypatch.setattr(core_module, "gzip_bytes", counting)
    url = "/suggest?content=t&term=kept&count=40"
    with TestClient(create_app([titles_path], threads=2)) as f:
        del f.headers["accept-encoding"]
        plain = f.get(url)  # kept, not gzipped
        assert plain.status_code == 200 and "content-encoding" not in plain.headers and len(plain.content) > 1400
        assert made == []
        first = f.get(url, headers={"Accept-Encoding": "gzip"})
        again = [f.get(url, headers={"Accept-Encoding": "gzip"}) for _ in range(3)]
        assert made == [len(plain.content)]  # once, for the kept answer
        for r in (first, *again):
            assert r.headers["content-encoding"] == "gzip" and r.content == plain.content  # httpx decodes it
        assert f.get(url).content == plain.content and made == [len(plain.content)]
        fresh = f.get("/suggest?content=t&term=kept&count=39", headers={"Accept-Encoding": "gzip"})
        assert fresh.headers["content-encoding"] == "gzip" and len(made) == 2  # a new answer: gzipped on its worker
        f.get("/suggest?content=t&term=kept&count=39", headers={"Accept-Encoding": "gzip"})
        assert len(made) == 2


def test_kept_suggestions_skip_the_handler_with_the_reference_bytes(titles_path, zim_a_path, monkeypatch):
    """search.send_kept answers a repeated suggestion GET itself, with the reference app's
    status, headers and body (plain and gzipped, the ETag of the server's state); HEAD,
    If-None-Match, a new query and a reload go to the handler."""
    fast = create_app([titles_path, zim_a_path], threads=2)
    slow = _without_fast_path(create_app([titles_path, zim_a_path], threads=2, answer_cache=0))
    _same_state(fast, slow)
    handled = []  # the handler looks each name up (send_kept does not): its calls show it ran
    server = fast.state.server
    real = server.book

    def counting(name, status=404):
        handled.append(name)
        return real(name, status)

    monkeypatch.setattr(server, "book", counting)
    urls = ["/suggest?content=t&term=kept&count=40", "/suggest?content=t&term=kept%20s",
            f"/suggest?content=t&books.name={A}&term=kept", "/suggest?content=t&content=t&term=Kept+suggestion"]
    with TestClient(fast) as f, TestClient(slow) as s:
        for c in (f, s):
            del c.headers["accept-encoding"]
        for url in urls:
            for headers in ({}, {"Accept-Encoding": "gzip"}, {"Accept-Encoding": "gzip;q=0"}):
                f.get(url, headers=headers)  # kept (and its gzip made) from here on
                handled.clear()
                for _ in range(2):
                    a, b = f.get(url, headers=headers), s.get(url, headers=headers)
                    assert a.status_code == b.status_code == 200, url
                    assert (a.headers.raw, a.content) == (b.headers.raw, b.content), (url, headers)
                assert handled == [], (url, headers)
        big = urls[0]
        assert len(f.get(big).content) > 1400 and f.get(big, headers={"Accept-Encoding": "gzip"}).headers[
            "content-encoding"] == "gzip"
        etag = f.get(big).headers["etag"]
        for method, headers in (("HEAD", {}), ("GET", {"If-None-Match": etag})):
            handled.clear()
            a = f.request(method, big, headers=headers)
            b = s.request(method, big, headers=headers)
            assert (a.status_code, a.headers.raw, a.content) == (b.status_code, b.headers.raw, b.content)
            assert handled == ["t"], method
