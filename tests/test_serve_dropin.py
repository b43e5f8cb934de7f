"""zim serve as a drop-in for kiwix-serve: its command line, library files, reloading.

The archives are written here (libzim.writer); each test's expectation comes
from what it wrote (titles, paths, library files), never from the server.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message="Using `httpx`")
from starlette.testclient import TestClient  # noqa: E402

from libzim import writer  # noqa: E402
from libzim.serve import create_app  # noqa: E402
from libzim.serve.library import date_alias  # noqa: E402
from libzim.serve.libraryfile import LibraryFileError, Reloader, Source, read_library_file  # noqa: E402

from conftest import child_python  # noqa: E402
from conftest import free_port as _free_port, http_get as _get  # noqa: E402
from writer_support import TextItem  # noqa: E402

BIG = random.Random(30).randbytes(4 << 20)  # streamed in chunks (above 1 MiB)


def make_zim(path: Path, title: str, words: str = "alpha", big: bool = False) -> Path:
    """A small indexed archive: main page index.html, pages p0..p2 holding ``words``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with writer.Creator(path).config_indexing(True, "eng") as c:
        c.set_mainpath("index.html")
        c.add_item(TextItem("index.html", title, f"<html><head><title>{title}</title></head><body>home</body></html>"))
        for i in range(3):
            c.add_item(TextItem(f"p{i}.html", f"{title} page {i}",
                                f"<html><head><title>{title} {i}</title></head><body>{words} {i}</body></html>"))
        if big:
            c.add_item(TextItem("big.bin", "", BIG, "application/octet-stream",
                                hints={writer.Hint.FRONT_ARTICLE: False}))
        for k, v in (("Title", title), ("Language", "eng"), ("Name", title.lower().replace(" ", "_"))):
            c.add_metadata(k, v)
    return path


def library_xml(path: Path, books: list[dict[str, str]]) -> Path:
    """A kiwix-manage library file listing ``books`` (attribute dicts, values escaped)."""
    from xml.sax.saxutils import quoteattr
    rows = "".join("  <book " + " ".join(f"{k}={quoteattr(v)}" for k, v in b.items()) + "/>\n" for b in books)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<library version="20110515">\n{rows}</library>\n')
    return path


@pytest.fixture(scope="module")
def shelf(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("shelf")
    make_zim(d / "books" / "alpha_en_all_2024-01.zim", "Alpha Book", "zebrafish")
    make_zim(d / "books" / "beta.zim", "Beta Book", "quokka", big=True)
    (d / "books" / "not_a_zim.zim").write_bytes(b"this is no archive" * 100)
    (d / "secret.txt").write_text("top secret")
    return d


# -- the library file --------------------------------------------------------

def test_library_file_relative_paths_and_metadata(shelf, tmp_path):
    lib = library_xml(shelf / "lib1.xml", [
        {"id": "aaaa-1", "path": "books/alpha_en_all_2024-01.zim", "title": "Alpha (from the file)",
         "description": "As the file says", "language": "eng,fra", "tags": "x;_category:tests",
         "articleCount": "7", "size": "12", "name": "alpha_en_all"},
        {"id": "gone", "path": "books/missing.zim", "title": "Remote"},
    ])
    books = read_library_file(lib)
    assert [b["path"] for b in books] == [str(shelf / "books/alpha_en_all_2024-01.zim"),
                                          str(shelf / "books/missing.zim")]
    library = Source(library_files=[str(lib)]).load()
    assert list(library.books) == ["alpha_en_all_2024-01"]  # the missing file is skipped
    b = library.books["alpha_en_all_2024-01"]
    assert (b.title, b.description, b.language, b.uuid, b.category, b.article_count, b.size, b.meta_name) == (
        "Alpha (from the file)", "As the file says", "eng,fra", "aaaa-1", "tests", 7, 12 << 10, "alpha_en_all")
    with TestClient(create_app(library)) as c:
        feed = c.get("/catalog/v2/entries").text
        assert "Alpha (from the file)" in feed and "Remote" not in feed
        assert c.get("/content/alpha_en_all_2024-01/p1.html").status_code == 200


def test_several_library_files_merge(shelf):
    one = library_xml(shelf / "one.xml", [{"id": "1", "path": "books/beta.zim", "title": "First beta"}])
    two = library_xml(shelf / "two.xml", [{"id": "2", "path": "books/beta.zim", "title": "Second beta"},
                                          {"id": "3", "path": str(shelf / "books/alpha_en_all_2024-01.zim")}])
    library = Source(library_files=[str(one), str(two)]).load()
    assert sorted(library.books) == ["alpha_en_all_2024-01", "beta"]
    assert library.books["beta"].title == "First beta"  # the first of two books with one name, as kiwix-serve


@pytest.mark.parametrize("text,defect", [
    ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
     '<library><book path="&lol2;"/></library>', "DTD"),
    ('<!DOCTYPE library SYSTEM "file:///etc/passwd"><library/>', "DTD"),
    ('<library><book path="a.zim"></library>', "malformed"),
    ("", "malformed"),
    ("<catalog><book path='a.zim'/></catalog>", "not a kiwix library"),
    ("\x00\xff garbage", "malformed"),
])
def test_hostile_library_files_are_one_line_errors(tmp_path, text, defect):
    f = tmp_path / "library.xml"
    f.write_bytes(text.encode("latin-1"))
    with pytest.raises(LibraryFileError) as e:
        read_library_file(f)
    msg = str(e.value)
    assert str(f) in msg and defect in msg and "\n" not in msg


def test_hostile_library_values(shelf, tmp_path):
    # Huge counts are ignored (the archive's own stay); a path out of the folder to a
    # file that is no ZIM archive never becomes a book (fails naming it; -k skips it).
    lib = library_xml(tmp_path / "lib.xml", [
        {"id": "big", "path": str(shelf / "books/beta.zim"), "articleCount": "9" * 40, "mediaCount": "-5",
         "size": "1e99", "title": "<script>alert(1)</script>"},
        {"id": "evil", "path": "../../" * 20 + str(shelf / "secret.txt").lstrip("/")},
    ])
    with pytest.raises(Exception) as e:
        Source(library_files=[str(lib)]).load()
    assert "secret.txt" in str(e.value)
    library = Source(library_files=[str(lib)], skip_invalid=True).load()
    assert list(library.books) == ["beta"]
    b = library.books["beta"]
    assert not b.complete  # known by the file alone until its archive is first opened
    a = b.archive
    assert b.article_count == a.article_count and b.size == (shelf / "books/beta.zim").stat().st_size
    with TestClient(create_app(library)) as c:
        assert "<script>alert" not in c.get("/catalog/v2/entries").text
        for url in ("/content/secret/", "/content/secret.txt/", "/raw/secret/content/x"):
            assert c.get(url).status_code == 404
            assert "top secret" not in c.get(url).text


def test_library_file_too_big_or_too_many_books(tmp_path, monkeypatch):
    from libzim.serve import libraryfile
    monkeypatch.setattr(libraryfile, "MAX_BOOKS", 3)
    f = library_xml(tmp_path / "l.xml", [{"path": f"{i}.zim"} for i in range(4)])
    with pytest.raises(LibraryFileError, match="more than 3 books"):
        read_library_file(f)
    monkeypatch.setattr(libraryfile, "MAX_FILE_BYTES", 100)
    with pytest.raises(LibraryFileError, match="larger than"):
        read_library_file(f)


def test_date_aliases(shelf):
    assert date_alias("wikipedia_en_all_maxi_2024-01") == "wikipedia_en_all_maxi"
    assert date_alias("beta") is None and date_alias("_2024-01") is None
    paths = [str(shelf / "books/alpha_en_all_2024-01.zim"), str(shelf / "books/beta.zim")]
    with TestClient(create_app(Source(archives=paths, date_aliases=True).load())) as c:
        r = c.get("/content/alpha_en_all/", follow_redirects=False)
        assert r.status_code == 302 and r.headers["location"] == "/content/alpha_en_all/index.html"
        assert "zebrafish 1" in c.get("/content/alpha_en_all/p1.html").text
        assert c.get("/content/alpha_en_all_2024-01/p1.html").status_code == 200
    with TestClient(create_app(Source(archives=paths).load())) as c:
        assert c.get("/content/alpha_en_all/p1.html").status_code == 404


def test_skip_invalid_archives(shelf):
    paths = [str(shelf / "books/not_a_zim.zim"), str(shelf / "books/beta.zim")]
    with pytest.raises(Exception) as e:
        Source(archives=paths).load()
    assert "not_a_zim.zim" in str(e.value)
    assert list(Source(archives=paths, skip_invalid=True).load().books) == ["beta"]


# -- reloading ---------------------------------------------------------------

def test_reload_keeps_unchanged_books_and_survives_a_bad_file(shelf, tmp_path):
    lib = library_xml(tmp_path / "lib.xml", [{"id": "b", "path": str(shelf / "books/beta.zim")}])
    app = create_app(Source(library_files=[str(lib)]).load())
    server = app.state.server
    reloader = server.reloader
    assert isinstance(reloader, Reloader)
    old = server.library
    beta = old.books["beta"]
    with TestClient(app) as c:
        assert c.get("/content/alpha_en_all_2024-01/p0.html").status_code == 404
        library_xml(lib, [{"id": "b", "path": str(shelf / "books/beta.zim")},
                          {"id": "a", "path": str(shelf / "books/alpha_en_all_2024-01.zim")}])
        assert reloader.reload_now()
        assert server.library is not old
        assert server.library.books["beta"].archive is beta.archive  # not reopened
        assert "zebrafish 0" in c.get("/content/alpha_en_all_2024-01/p0.html").text
        lib.write_text("<library><book")  # malformed: the old library stays
        assert not reloader.reload_now()
        assert sorted(server.library.books) == ["alpha_en_all_2024-01", "beta"]
        library_xml(lib, [{"id": "a", "path": str(shelf / "books/alpha_en_all_2024-01.zim")}])
        assert reloader.reload_now()
        assert c.get("/content/beta/p0.html").status_code == 404
        # A request that holds the removed book still reads it: its archive is not closed.
        assert bytes(beta.archive.get_entry_by_path("p0.html").get_item().content).count(b"quokka 0") == 1


def test_replaced_file_is_reopened(tmp_path):
    path = make_zim(tmp_path / "books" / "gamma.zim", "Gamma One", "first")
    lib = library_xml(tmp_path / "lib.xml", [{"id": "g", "path": "books/gamma.zim"}])
    app = create_app(Source(library_files=[str(lib)]).load())
    with TestClient(app) as c:
        assert "first 1" in c.get("/content/gamma/p1.html").text
        new = make_zim(tmp_path / "new" / "gamma.zim", "Gamma Two", "second")
        os.replace(new, path)  # what a download of the next release does
        assert app.state.server.reloader.reload_now()
        assert "second 1" in c.get("/content/gamma/p1.html").text


# -- the command line --------------------------------------------------------

class Live:
    """``zim serve ARGS`` in a child process, its output in files (a full pipe would block it)."""

    def __init__(self, args: list[str], tmp: Path) -> None:
        self.port = _free_port()
        self.err_path = tmp / f"stderr-{self.port}"
        self.err = open(self.err_path, "w+b")
        argv = [a.replace("PORT", str(self.port)) for a in args]
        self.proc = subprocess.Popen([sys.executable, "-m", "libzim", "serve", *argv], stdout=self.err,
                                     stderr=subprocess.STDOUT, **child_python())
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_up(self, path: str = "/") -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(self.base + path, timeout=5)
                return
            except OSError:
                assert self.proc.poll() is None, self.log()
                assert time.monotonic() < deadline, "server did not start: " + self.log()
                time.sleep(0.2)

    def log(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait_log(self, pattern: str, count: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(re.findall(pattern, self.log())) < count:
            assert self.proc.poll() is None and time.monotonic() < deadline, f"no {pattern!r} in: " + self.log()
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.err.close()


def test_kiwix_serve_documented_invocation(shelf, tmp_path):
    # The systemd unit's / Docker image's command line, unchanged but the program name
    # (and the port, which a test cannot take: 80); bound to 127.0.0.1 (our default).
    lib = library_xml(tmp_path / "library.xml", [{"id": "b", "path": str(shelf / "books/beta.zim")}])
    live = Live(["--library", str(lib), "--monitorLibrary", "--port", "PORT", "--urlRootLocation", "/wiki", "-b"],
                tmp_path)
    try:
        live.wait_up()
        assert "note: listening on 127.0.0.1 only" in live.log()
        status, body = _get(live.base + "/wiki/")
        assert status == 200 and b"Beta Book" in body
        status, body = _get(live.base + "/wiki/content/beta/p2.html")
        assert status == 200 and b"quokka 2" in body
        status, _ = _get(live.base + "/content/beta/p2.html")
        assert status == 404  # outside the root location
        status, body = _get(live.base + "/wiki/content/nothing/x")
        assert status == 404 and b'href="/wiki/"' in body  # the error page links under the root
        # --monitorLibrary: the file changes, the new book appears.
        time.sleep(1.1)  # a new modification time, even on coarse clocks
        library_xml(lib, [{"id": "b", "path": str(shelf / "books/beta.zim")},
                          {"id": "a", "path": str(shelf / "books/alpha_en_all_2024-01.zim")}])
        live.wait_log("library reloaded")
        status, body = _get(live.base + "/wiki/content/alpha_en_all_2024-01/p0.html")
        assert status == 200 and b"zebrafish 0" in body
    finally:
        live.stop()


def test_sighup_reload_finishes_requests_in_flight(shelf, tmp_path):
    lib = library_xml(tmp_path / "library.xml", [{"id": "b", "path": str(shelf / "books/beta.zim")}])
    live = Live(["-l", str(lib), "-p", "PORT"], tmp_path)
    try:
        live.wait_up()
        with socket.create_connection(("127.0.0.1", live.port), timeout=30) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            s.sendall(b"GET /content/beta/big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            first = s.recv(4096)
            assert first.startswith(b"HTTP/1.1 200"), first[:200]
            library_xml(lib, [{"id": "a", "path": str(shelf / "books/alpha_en_all_2024-01.zim")}])
            live.proc.send_signal(signal.SIGHUP)
            live.wait_log("library reloaded")
            status, _ = _get(live.base + "/content/beta/p0.html")
            assert status == 404  # gone for new requests ...
            chunks = [first]
            while True:
                b = s.recv(1 << 16)
                if not b:
                    break
                chunks.append(b)
        body = b"".join(chunks).split(b"\r\n\r\n", 1)[1]
        assert body == BIG  # ... the one under way finished, whole
        status, body = _get(live.base + "/content/alpha_en_all_2024-01/p0.html")
        assert status == 200 and b"zebrafish 0" in body
    finally:
        live.stop()


def test_kiwix_options_in_help():
    r = subprocess.run([sys.executable, "-m", "libzim", "serve", "--help"], capture_output=True, text=True,
                       timeout=60, **child_python())
    assert r.returncode == 0
    for opt in ("-i", "--address", "-p", "--port", "-t", "--threads", "-l", "--library", "-M", "--monitorLibrary",
                "-r", "--urlRootLocation", "-b", "--blockexternal", "-m", "--nolibrarybutton", "-n", "--nosearchbar",
                "-z", "--nodatealiases", "-c", "--customIndex", "-s", "--searchLimit", "-k", "--skipInvalid",
                "-L", "--ipConnectionLimit", "-v", "--verbose", "-a", "--attachToProcess", "-d", "--daemon",
                "--catalogOnly", "--contentServerURL", "-V", "--version", "-h"):
        assert re.search(rf"(^|[\s,]){re.escape(opt)}([\s,=]|$)", r.stdout, re.M), opt


def test_daemon_is_refused_naming_what_to_use(shelf):
    r = subprocess.run([sys.executable, "-m", "libzim", "serve", "-d", str(shelf / "books/beta.zim")],
                       capture_output=True, text=True, timeout=60, **child_python())
    assert r.returncode == 2 and "systemd" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_version_and_usage_errors(shelf):
    r = subprocess.run([sys.executable, "-m", "libzim", "serve", "-V"], capture_output=True, text=True,
                       timeout=60, **child_python())
    assert r.returncode == 0 and "libzim" in r.stdout
    for argv, word in ((["-M", str(shelf / "books/beta.zim")], "--library"), ([], "--library"),
                       (["-s", "-1", str(shelf / "books/beta.zim")], "--searchLimit")):
        r = subprocess.run([sys.executable, "-m", "libzim", "serve", *argv], capture_output=True, text=True,
                           timeout=60, **child_python())
        assert r.returncode == 2 and word in r.stderr, (argv, r.stderr)
    r = subprocess.run([sys.executable, "-m", "libzim", "serve", str(shelf / "books/not_a_zim.zim")],
                       capture_output=True, text=True, timeout=60, **child_python())
    assert r.returncode == 1 and "not_a_zim.zim" in r.stderr.strip().splitlines()[-1]


def test_address_words():
    from libzim.cli.serve import ADDRESS_WORDS
    assert ADDRESS_WORDS == {"all": "", "ipv4": "0.0.0.0", "ipv6": "::"}  # uvicorn: "" is every interface


def test_custom_index_search_limit_and_attach(shelf, tmp_path):
    index = tmp_path / "welcome.html"
    index.write_text("<html><body>Welcome, custom</body></html>")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    live = Live([str(shelf / "books/beta.zim"), str(shelf / "books/alpha_en_all_2024-01.zim"), "-c", str(index),
                 "-s", "1", "-k", "-a", str(sleeper.pid), "-p", "PORT", "-z"], tmp_path)
    try:
        live.wait_up()
        assert _get(live.base + "/") == (200, index.read_bytes())
        status, body = _get(live.base + "/search?pattern=quokka&books.name=beta&books.name=alpha_en_all_2024-01")
        assert status == 400 and b"1" in body
        status, body = _get(live.base + "/search?pattern=quokka&books.name=beta")
        assert status == 200 and b"p1.html" in body
        assert _get(live.base + "/content/alpha_en_all/p0.html")[0] == 200  # -z
        sleeper.kill()
        sleeper.wait(30)
        live.proc.wait(30)  # -a: the watched process ended, so does the server
        assert "ended (-a)" in live.log()
    finally:
        sleeper.kill()
        live.stop()
