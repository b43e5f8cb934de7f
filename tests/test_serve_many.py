"""``zim serve`` on 1,500 archives with RLIMIT_NOFILE lowered to 256 in its process:
it starts, answers every book's content and search, keeps its descriptors within
its caches' bound, opens nothing for the catalog, and answers a book whose file
went or is damaged with an error page for that book only.

The 1,500 archives are tools/library_books.py's: 20 archives written by
libzim.writer (40 indexed articles each, a word of their own), each copied under
75 names with an id of its own (the header's UUID replaced, the MD5 checksum
recomputed: whole valid archives). So each book's answers are its base's, which
the test knows (book i holds base i % 20's word), and its content's ETag is made
from its own UUID: 1,500 distinct ETags for one path show that no request was
served from another book's archive.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import child_python, free_port

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import library_books  # noqa: E402 - tools/, on sys.path by conftest

N = 1500
BASES = 20
NOFILE = 256
PER_BOOK_TIMEOUT = 30


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    return library_books.build(N, BASES, tmp_path_factory.mktemp("many"))


def _get(url: str, timeout: float = PER_BOOK_TIMEOUT) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, headers with lower-case names)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read(), {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, e.read(), {k.lower(): v for k, v in e.headers.items()}


def _limit_files() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, hard))


class Server:
    def __init__(self, args: list[str], tmp: Path) -> None:
        self.port = free_port()
        self.log_path = tmp / f"serve-{self.port}.log"
        self.log_file = open(self.log_path, "w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "libzim", "serve", "--port", str(self.port), "--no-access-log", "-t", "4",
             "--book-cache", str(tmp / "bookinfo.json"), *args],
            stdout=self.log_file, stderr=subprocess.STDOUT, preexec_fn=_limit_files,
            **child_python(XDG_CACHE_HOME=str(tmp / "xdg")))
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(self.base + "/catalog/v2/root.xml", 5)
                break
            except OSError:
                assert self.proc.poll() is None, "zim serve stopped: " + self.log()
                assert time.monotonic() < deadline, "zim serve did not start: " + self.log()
                time.sleep(0.2)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def zim_fds(self) -> int:
        """Descriptors open on .zim files (archives, their native copies, Xapian's)."""
        n = 0
        for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
            try:
                n += os.readlink(f"/proc/{self.proc.pid}/fd/{fd}").endswith(".zim")
            except OSError:  # closed meanwhile
                pass
        return n

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.log_file.close()


def _check_book(base: str, i: int) -> str:
    """Book i's article and search; returns its content's ETag."""
    name, k = f"book{i:05d}", i % BASES
    word = library_books.base_word(k)
    status, body, headers = _get(f"{base}/content/{name}/a3.html")
    assert status == 200, (name, status, body[:200])
    assert f"{word} shared text number 3 of base {k}".encode() in body, name
    status, body, _ = _get(f"{base}/search?books.name={name}&pattern={word}&format=xml&pageLength=5")
    assert status == 200, (name, status, body[:200])
    text = body.decode()
    assert re.search(r"<opensearch:totalResults>40</opensearch:totalResults>", text), (name, text[:500])
    links = re.findall(r"<link>[^<]*/content/([^/<]+)/a[0-9]+\.html</link>", text)
    assert links and set(links) == {name}, (name, links)
    return headers["etag"]


def test_1500_books_under_256_descriptors(many, tmp_path):
    server = Server(["--library", str(many)], tmp_path)
    try:
        assert server.proc.poll() is None
        log = server.log()
        m = re.search(r"at most (\d+) archives, (\d+) books' searchers and (\d+) suggestion searchers", log)
        assert m, log
        archives, searchers, suggesters = map(int, m.groups())
        assert (archives, searchers, suggesters) == (NOFILE // 8, NOFILE // 32, NOFILE // 32)
        assert server.zim_fds() == 0  # nothing opened to start

        # The catalog of every book opens no archive.
        status, body, _ = _get(server.base + "/catalog/v2/entries?count=-1")
        assert status == 200 and body.count(b"<entry>") == N
        status, body, _ = _get(server.base + "/")
        assert status == 200
        assert server.zim_fds() == 0

        # Every book read and searched, by 4 clients at once.
        with ThreadPoolExecutor(4) as pool:
            etags = list(pool.map(lambda i: _check_book(server.base, i), range(N)))
        assert len(set(etags)) == N  # each answered from its own archive (its own UUID)
        # Descriptors on archives: what the caches may hold (2 per archive, 3 per
        # searcher or suggestion searcher with its archive's), once the requests ended.
        bound = 2 * archives + 3 * searchers + 3 * suggesters
        assert 0 < server.zim_fds() <= bound, (server.zim_fds(), bound)

        # A suggestion and the main page of a few books (the main page is learnt on first open).
        for i in (0, 777, N - 1):
            status, body, _ = _get(f"{server.base}/suggest?content=book{i:05d}&term=Base")
            assert status == 200 and json.loads(body), i
            req = urllib.request.Request(f"{server.base}/content/book{i:05d}/")
            opener = urllib.request.build_opener(NoRedirect)
            try:
                opener.open(req, timeout=PER_BOOK_TIMEOUT)
                raise AssertionError("no redirect")
            except urllib.error.HTTPError as e:
                assert e.code == 302 and e.headers["Location"].endswith(f"/content/book{i:05d}/a0.html")

        # A book whose file is gone, one whose file is damaged: an error page each,
        # one log line each, the others still served.
        gone, damaged = many.parent / "book00011.zim", many.parent / "book00012.zim"
        os.unlink(gone)
        damaged.write_bytes(b"ZIM\x04" + b"\0" * 200)
        for _ in range(3):
            status, body, _ = _get(f"{server.base}/content/book00011/a1.html")
            assert status == 404 and b"gone" in body
            status, body, _ = _get(f"{server.base}/content/book00012/a1.html")
            assert status == 500 and b"damaged" in body
        # (their archives were evicted long ago: 1,500 books through a cache of 32)
        assert _check_book(server.base, 13)
        time.sleep(0.5)
        log = server.log()
        assert log.count("book00011: cannot open") == 1 and log.count("book00012: cannot open") == 1, log[-2000:]
        assert server.proc.poll() is None
    finally:
        server.stop()
    # uvicorn ends by raising the signal it stopped on again, after a clean shutdown
    assert server.proc.returncode in (0, -signal.SIGTERM), server.log()[-3000:]
    assert "Application shutdown complete" in server.log() and "Traceback" not in server.log()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def test_a_restart_reads_no_archive(many, tmp_path):
    # Archives given as paths are read once for their records; the record cache
    # (keyed by path, size and time) spares every later start that reading.
    from libzim.serve.bookinfo import InfoCache
    from libzim.serve.libraryfile import Source

    paths = sorted(str(p) for p in many.parent.glob("book0*.zim"))[100:400]  # (the other test spoils 11 and 12)
    cache = tmp_path / "bookinfo.json"
    first = InfoCache(cache)
    lib = Source(archives=paths, info=first).load()
    assert len(lib.books) == 300 and first.reads == 300 and len(lib.shelf.archives) == 0
    again = InfoCache(cache)
    lib2 = Source(archives=paths, info=again).load()
    assert again.reads == 0 and len(lib2.shelf.archives) == 0
    b = lib2.books["book00107"]
    assert (b.title, b.article_count, b.main_path, b.has_fulltext_index) == ("Base 7", 40, "a0.html", True)
    # A changed file is read again.
    p = Path(paths[5])
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    third = InfoCache(cache)
    Source(archives=paths, info=third).load()
    assert third.reads == 1


def test_reload_keeps_what_unchanged_books_have_open(many, tmp_path):
    # A library file of 300 books, 10 of them opened and searched; the file is
    # rewritten without 5 of those: a reload keeps the other 5's archives and
    # searchers open (the same objects), and closes the removed ones'.
    from libzim._cache import lease_scope
    from libzim.serve.libraryfile import Source, read_library_file

    books = [b for b in read_library_file(many) if b["path"].endswith(tuple(f"book{i:05d}.zim" for i in range(200, 500)))]
    assert len(books) == 300

    def write(rows: list[dict[str, str]]) -> Path:
        from xml.sax.saxutils import quoteattr
        f = tmp_path / "lib.xml"
        f.write_text("<library>\n" + "".join(
            "<book " + " ".join(f"{k}={quoteattr(v)}" for k, v in b.items()) + "/>\n" for b in rows) + "</library>\n")
        return f

    source = Source(library_files=[str(write(books))])
    lib = source.load()
    names = [f"book{i:05d}" for i in range(200, 210)]
    with lease_scope():
        for n in names:
            lib.search((lib.books[n],), library_books.base_word(int(n[4:]) % BASES))
    opened = {n: lib.shelf.archives.peek(lib.books[n].key) for n in names}
    assert all(a is not None for a in opened.values())
    write([b for b in books if not b["path"].endswith(tuple(f"{n}.zim" for n in names[:5]))])
    new = source.load(lib)
    assert len(new.books) == 295 and new.shelf is lib.shelf
    for n in names[5:]:
        assert new.shelf.archives.peek(new.books[n].key) is opened[n] and not opened[n].closed
    for n in names[:5]:
        assert n not in new.books and opened[n].closed
    assert len(new.shelf.searchers) == 5
