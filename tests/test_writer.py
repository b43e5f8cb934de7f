"""libzim.writer round trips: written here, read back with our reader and with
Debian's zim-tools (zimcheck, zimdump), which share no code with the writer
binding."""
from __future__ import annotations

import datetime
import hashlib
import inspect
import pathlib
import weakref

import pytest

from libzim import NotSupportedError, WriterError, writer
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher
from writer_support import (
    METADATA,
    PiecesProvider,
    TextItem,
    WordsIndex,
    add_required_metadata,
    html,
    leftovers,
    png,
    zimcheck,
    zimdump_list,
)

BINARY = bytes(range(256)) * 64 + b"\x00tail"


class ChunkedItem(TextItem):
    """Feeds its content (a list of parts) in pieces through gen_blob."""

    def get_contentprovider(self):
        return PiecesProvider(self.content)


class FileItem(TextItem):
    def get_contentprovider(self):
        return writer.FileProvider(self.content)


class CustomIndexItem(TextItem):
    def get_indexdata(self):
        return WordsIndex(self.title, "quokka wallaby " + self.title, "marsupial", (48.85, 2.35))


class NotIndexedItem(TextItem):
    def get_indexdata(self):
        return None


def write_sample(path, compression="zstd", workers=2, big_file=None):
    with writer.Creator(path).config_indexing(True, "eng").config_compression(
        compression
    ).config_nbworkers(workers) as c:
        add_required_metadata(c)
        c.add_metadata("Tags", b"_category:test;bytes")
        c.add_metadata("Source", "str metadata \u00e9\u00e8")
        c.add_metadata("X-Json", '{"a": 1}', mimetype="application/json")
        c.add_item(TextItem("home.html", "Home page", html("welcome aardvark home", "Home")))
        c.add_item(TextItem("unicode/\u00e9t\u00e9.html", "\u00c9t\u00e9 caf\u00e9", html("caf\u00e9 summer")))
        c.add_item(TextItem("data.bin", "", BINARY, mimetype="application/octet-stream", hints={}))
        c.add_item(TextItem("raw.txt", "Raw", b"uncompressed text", "text/plain",
                            {writer.Hint.COMPRESS: False}))
        c.add_item(ChunkedItem("chunked.html", "Chunked", [b"<html><body>", b"pangolin",
                                                            b"</body></html>"]))
        c.add_item(CustomIndexItem("custom.html", "Custom index", html("aardvark")))
        c.add_item(NotIndexedItem("hidden.html", "Hidden", html("okapi")))
        for i in range(40):
            c.add_item(TextItem(f"articles/a{i:03}.html", f"Article number {i}",
                                html(f"article body {i} lemur" + " filler" * i)))
        if big_file is not None:
            c.add_item(FileItem("big.bin", "Big", str(big_file), "application/octet-stream", {}))
        c.add_redirection("redirect.html", "Redirect to home", "home.html",
                          {writer.Hint.FRONT_ARTICLE: True})
        c.add_redirection(path="r2", title="Second redirect", targetPath="articles/a001.html",
                          hints={})
        c.set_mainpath("home.html")
    return path


@pytest.fixture(scope="module", params=["zstd", "none"])
def sample(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"writer_{request.param}")
    big = d / "big.source"
    big.write_bytes(hashlib.sha256(b"seed").digest() * (3 * 1024 * 1024 // 32 + 7))
    path = write_sample(d / "sample.zim", compression=request.param, big_file=big)
    return path, big


def content(archive, path):
    return bytes(archive.get_entry_by_path(path).get_item().content)


def test_round_trip_content(sample):
    path, big = sample
    a = Archive(path)
    assert content(a, "home.html") == html("welcome aardvark home", "Home").encode()
    assert content(a, "unicode/\u00e9t\u00e9.html") == html("caf\u00e9 summer").encode()
    assert a.get_entry_by_path("unicode/\u00e9t\u00e9.html").title == "\u00c9t\u00e9 caf\u00e9"
    assert content(a, "data.bin") == BINARY
    assert content(a, "raw.txt") == b"uncompressed text"
    assert content(a, "chunked.html") == b"<html><body>pangolin</body></html>"
    assert content(a, "big.bin") == big.read_bytes()  # FileProvider: several 1 MiB chunks
    for i in (0, 17, 39):
        assert content(a, f"articles/a{i:03}.html") == html(
            f"article body {i} lemur" + " filler" * i).encode()
    item = a.get_entry_by_path("data.bin").get_item()
    assert item.mimetype == "application/octet-stream"
    assert a.get_entry_by_path("articles/a005.html").get_item().mimetype == "text/html"
    # 7 single items + 40 articles + big.bin, and 2 redirects.
    assert a.entry_count == 50
    assert a.main_entry.get_item().path == "home.html"


def test_round_trip_redirects(sample):
    a = Archive(sample[0])
    r = a.get_entry_by_path("redirect.html")
    assert r.is_redirect and r.title == "Redirect to home"
    assert r.get_redirect_entry().path == "home.html"
    assert a.get_entry_by_path("r2").get_redirect_entry().path == "articles/a001.html"


def test_round_trip_metadata(sample):
    a = Archive(sample[0])
    for name, value in METADATA.items():
        assert a.get_metadata(name) == value.encode()
    assert a.get_metadata("Date") == b"2024-05-17"
    assert a.get_metadata("Tags") == b"_category:test;bytes"
    assert a.get_metadata("Source") == "str metadata \u00e9\u00e8".encode()
    assert a.get_metadata_item("X-Json").mimetype == "application/json"
    assert a.get_metadata_item("Title").mimetype == "text/plain;charset=UTF-8"
    with pytest.warns(DeprecationWarning, match="use get_illustration_infos"):
        assert a.get_illustration_sizes() == {48}
    assert bytes(a.get_illustration_item(48).content) == png(48)


def test_round_trip_indexes(sample):
    a = Archive(sample[0])
    assert a.has_fulltext_index and a.has_title_index
    s = Searcher(a)

    def hits(q):
        return sorted(r.path for r in s.search(q).get_results(0, 100, include_snippets=False))

    assert hits("lemur") == [f"articles/a{i:03}.html" for i in range(40)]
    assert hits("pangolin") == ["chunked.html"]
    # Custom IndexData: its words are indexed instead of the content's.
    assert hits("quokka") == ["custom.html"]
    assert "custom.html" not in hits("aardvark")
    assert hits("aardvark") == ["home.html"]
    # get_indexdata returning None: not in the full-text index.
    assert hits("okapi") == []
    titles = [r.path for r in SuggestionSearcher(a).suggest("article number").get_results(0, 100)]
    assert sorted(titles) == [f"articles/a{i:03}.html" for i in range(40)]


def test_zim_tools_accept_the_archive(sample):
    path = sample[0]
    check = zimcheck(path)
    assert check.returncode == 0, check.stdout + check.stderr
    listed = zimdump_list(path)
    for p in ("home.html", "data.bin", "redirect.html", "big.bin", "articles/a039.html"):
        assert p in listed
    assert len([p for p in listed if p.startswith("articles/")]) == 40


def test_both_compressions_read_back_identically(tmp_path):
    a = Archive(write_sample(tmp_path / "z.zim", "zstd", workers=1))
    b = Archive(write_sample(tmp_path / "n.zim", writer.Compression.none, workers=3))
    for e in range(a.entry_count):
        pa = a._get_entry_by_id(e).path
        assert content(a, pa) == content(b, pa) if not a.get_entry_by_path(pa).is_redirect else True
    # Uncompressed clusters make the archive larger.
    assert b.filesize > a.filesize


# ---- API: python-libzim 3.13.1's names and behaviour ---------------------------


def test_module_names():
    assert writer.__all__ == ["Creator", "Compression", "Blob", "Hint", "Item", "ContentProvider",
                              "FileProvider", "StringProvider", "IndexData"]
    assert [m.name for m in writer.Compression] == ["none", "zstd"]
    assert [m.name for m in writer.Hint] == ["COMPRESS", "FRONT_ARTICLE"]


def test_parameter_names():
    def params(f):
        return [p for p in inspect.signature(f).parameters if p != "self"]

    C = writer.Creator
    assert params(C.add_redirection) == ["path", "title", "targetPath", "hints"]
    assert params(C.add_alias) == ["path", "title", "targetPath", "hints"]
    assert params(C.add_metadata) == ["name", "content", "mimetype"]
    assert inspect.signature(C.add_metadata).parameters["mimetype"].default == (
        "text/plain;charset=UTF-8")
    assert params(C.add_item) == ["writer_item"]
    assert params(C.add_illustration) == ["size", "content"]
    assert params(C.config_indexing) == ["indexing", "language"]
    assert params(C.config_nbworkers) == ["nbWorkers"]
    assert params(C.set_mainpath) == ["mainPath"]
    assert params(C.config_clustersize) == ["size"]


def test_creator_attributes(tmp_path):
    c = writer.Creator(str(tmp_path / "a.zim"))
    assert c.filename == tmp_path / "a.zim" and isinstance(c.filename, pathlib.Path)
    assert repr(c) == f"Creator(filename={tmp_path / 'a.zim'})"
    assert c._started is False
    assert c.config_verbose(False) is c
    assert c.config_compression("ZSTD") is c
    assert c.config_compression(writer.Compression.none) is c
    with pytest.raises(AttributeError):
        c.config_compression("lzma")
    assert c.config_clustersize(1024 * 1024) is c
    assert c.config_nbworkers(2) is c
    assert c.config_indexing(False, "eng") is c
    with c as entered:
        assert entered is c and c._started is True
        assert c.set_mainpath("x") is c
        for call in (lambda: c.config_verbose(True), lambda: c.config_nbworkers(1),
                     lambda: c.config_indexing(True, "fra"), lambda: c.config_clustersize(10),
                     lambda: c.config_compression("none")):
            with pytest.raises(RuntimeError, match="Creator started"):
                call()
        c.add_item(TextItem("x", "X", "x"))
    assert c._started is False
    assert (tmp_path / "a.zim").is_file()


def test_calls_outside_the_block_raise(tmp_path):
    c = writer.Creator(tmp_path / "a.zim")
    for call in (lambda: c.add_item(TextItem("x", "X", "x")),
                 lambda: c.add_metadata("Title", "t"),
                 lambda: c.add_redirection("a", "A", "b", {})):
        with pytest.raises(RuntimeError, match="Creator not started"):
            call()
    with pytest.raises(TypeError, match="must not be None"):
        c.add_item(None)
    # Any object may be an item (python-libzim calls its methods): not started first.
    with pytest.raises(RuntimeError, match="Creator not started"):
        c.add_item("not an item")


def test_add_alias(tmp_path):
    from libzim.version import get_libzim_version

    with writer.Creator(tmp_path / "a.zim") as c:
        c.add_item(TextItem("x", "X", "x"))
        if get_libzim_version().startswith("8."):  # Creator::addAlias came with libzim 9.0
            with pytest.raises(NotSupportedError, match=get_libzim_version()) as exc:
                c.add_alias("y", "Y", "x", {})
            assert isinstance(exc.value, NotImplementedError)
            with pytest.raises(NotSupportedError):
                c.add_alias(path="y", title="Y", targetPath="x", hints={})
            aliased = False
        else:
            c.add_alias(path="y", title="Y", targetPath="x", hints={})
            aliased = True
    a = Archive(tmp_path / "a.zim")
    assert a.has_entry_by_path("y") is aliased
    if aliased:
        assert bytes(a.get_entry_by_path("y").get_item().content) == b"x"
    c = writer.Creator(tmp_path / "b.zim")
    with pytest.raises(RuntimeError, match="Creator not started"):
        c.add_alias("y", "Y", "x", {})


def test_subclassed_creator_calls_the_base_directly(tmp_path):
    class MyCreator(writer.Creator):
        def __init__(self, filename, extra):
            super().__init__(filename=filename)
            self.extra = extra

        def __enter__(self):
            super().__enter__()
            return self

        def __exit__(self, *exc):
            super().__exit__(None, None, None)

    c = MyCreator(tmp_path / "s.zim", extra=5)
    assert c.extra == 5 and c.__dict__ == {"extra": 5}
    with c:
        c.add_item(TextItem("x", "X", "x"))
    assert content(Archive(tmp_path / "s.zim"), "x") == b"x"


def test_metadata_types(tmp_path):
    with writer.Creator(tmp_path / "m.zim") as c:
        c.add_metadata("Date", datetime.datetime(2021, 2, 3, 4, 5))
        c.add_metadata("Str", "\u00e9")
        c.add_metadata("Bytes", b"\xff\x00")
        c.add_metadata(name="Kw", content="v", mimetype="text/x-kw")
        with pytest.raises(TypeError):
            c.add_metadata("Int", 5)
    a = Archive(tmp_path / "m.zim")
    assert a.get_metadata("Date") == b"2021-02-03"
    assert a.get_metadata("Str") == "\u00e9".encode()
    assert a.get_metadata("Bytes") == b"\xff\x00"
    assert a.get_metadata_item("Kw").mimetype == "text/x-kw"


def test_blob():
    assert writer.Blob("h\u00e9").size() == 3
    assert writer.Blob(b"abc").size() == 3
    assert writer.Blob(b"abc").ref_content == b"abc"
    for bad in (bytearray(b"x"), None, 3):
        with pytest.raises(TypeError):
            writer.Blob(bad)


def test_base_classes():
    item = writer.Item()
    assert item.__dict__ == {"_blob": None}
    assert not hasattr(item, "get_indexdata")
    weakref.ref(item)
    for name in ("get_path", "get_title", "get_mimetype", "get_contentprovider", "get_hints"):
        with pytest.raises(NotImplementedError):
            getattr(item, name)()
    p = writer.ContentProvider()
    assert p.generator is None
    with pytest.raises(NotImplementedError):
        p.get_size()
    with pytest.raises(NotImplementedError):
        p.feed()
    d = writer.IndexData()
    assert d.has_indexdata() is False and d.get_geoposition() is None
    assert repr(TextItem("p", "T", "")) == "TextItem(path=p, title=T)"


def test_index_data_subclass_without_base_init(tmp_path):
    class Bare(writer.IndexData):
        def __init__(self):  # no super().__init__()
            self.n = 1

        def has_indexdata(self):
            return True

        def get_title(self):
            return "bare"

        def get_content(self):
            return "wombat"

        def get_keywords(self):
            return ""

        def get_wordcount(self):
            return 1

    class I(TextItem):
        def get_indexdata(self):
            return Bare()

    with writer.Creator(tmp_path / "b.zim").config_indexing(True, "eng") as c:
        c.add_item(I("x.html", "X", html("nothing")))
    hits = Searcher(Archive(tmp_path / "b.zim")).search("wombat").get_estimated_matches()
    assert hits == 1


def test_file_provider_subclass_with_attributes(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"z" * 5000)

    class Tracked(writer.FileProvider):
        def __init__(self, filepath, tag):
            super().__init__(filepath)
            self.tag = tag

    class I(TextItem):
        def get_contentprovider(self):
            return Tracked(self.content, tag="t")

    with writer.Creator(tmp_path / "f.zim") as c:
        c.add_item(I("f", "F", src, "application/octet-stream"))
    assert content(Archive(tmp_path / "f.zim"), "f") == b"z" * 5000


def test_provider_overriding_feed(tmp_path):
    class Feeder(writer.ContentProvider):
        def __init__(self):
            super().__init__()
            self.parts = [b"one ", b"two", b""]

        def get_size(self):
            return 7

        def feed(self):
            return writer.Blob(self.parts.pop(0))

    class I(TextItem):
        def get_contentprovider(self):
            return Feeder()

    with writer.Creator(tmp_path / "f.zim") as c:
        c.add_item(I("f", "F", None, "text/plain"))
    assert content(Archive(tmp_path / "f.zim"), "f") == b"one two"
    assert leftovers(tmp_path) == ["f.zim"]


def test_hints_only_hint_keys_count_for_items(tmp_path):
    with writer.Creator(tmp_path / "h.zim") as c:
        c.add_item(TextItem("a", "A", "a", hints={writer.Hint.FRONT_ARTICLE: 1, "junk": 5}))
        c.add_item(TextItem("b", "B", "b", hints={writer.Hint.FRONT_ARTICLE: 0}))
    a = Archive(tmp_path / "h.zim")
    assert a.article_count == 1  # only "a" is a front article


def test_writer_error_is_a_runtime_error():
    assert issubclass(WriterError, RuntimeError)


def test_100k_items_memory_stays_bounded(tmp_path):
    """Items (and their providers) are released as libzim drops them: a
    scraper's memory does not grow with the archive."""
    n = 100_000
    alive = {"now": 0, "max": 0}

    def released():
        alive["now"] -= 1

    class Small(writer.Item):
        def __init__(self, i):
            super().__init__()
            self.i = i

        def get_path(self):
            return f"e/{self.i}"

        def get_title(self):
            return ""

        def get_mimetype(self):
            return "text/plain"

        def get_contentprovider(self):
            return writer.StringProvider(b"%d" % self.i)

        def get_hints(self):
            return {}

    with writer.Creator(tmp_path / "100k.zim").config_nbworkers(1) as c:
        for i in range(n):
            item = Small(i)
            weakref.finalize(item, released)
            alive["now"] += 1
            c.add_item(item)
            del item
            alive["max"] = max(alive["max"], alive["now"])
    assert alive["now"] == 0
    assert alive["max"] < n // 10, alive
    a = Archive(tmp_path / "100k.zim")
    assert a.entry_count == n
    for i in (0, 4321, n - 1):
        assert content(a, f"e/{i}") == b"%d" % i


def test_fed_bytes_live_until_libzim_is_done(tmp_path):
    """feed() returns fresh Blobs it keeps no reference to, and other Python
    code allocates meanwhile: libzim must still read each blob's own bytes
    (python-libzim had a use-after-free here)."""
    chunks = [hashlib.sha512(b"%d" % i).digest() * 4096 for i in range(12)]  # 256 KiB each

    class Fresh(writer.ContentProvider):
        def __init__(self):
            super().__init__()
            self.i = 0

        def get_size(self):
            return sum(map(len, chunks))

        def feed(self):
            if self.i == len(chunks):
                return writer.Blob(b"")
            data = bytes(bytearray(chunks[self.i]))  # a new object, referenced only by the Blob
            self.i += 1
            junk = [bytes(len(data)) for _ in range(3)]  # reuse of freed memory shows up
            del junk
            return writer.Blob(data)

    class I(TextItem):
        def get_contentprovider(self):
            return Fresh()

    with writer.Creator(tmp_path / "f.zim").config_nbworkers(2) as c:
        for k in range(4):
            c.add_item(I(f"f{k}", "F", None, "application/octet-stream"))
    a = Archive(tmp_path / "f.zim")
    for k in range(4):
        assert content(a, f"f{k}") == b"".join(chunks)
