"""libzim.writer failure paths and threads: every failure ends in a clear
exception, no crash, no leaked thread, no leftover temporary file."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

from libzim import WriterError, writer
from libzim.reader import Archive
from conftest import INSTALLED, REPO_ROOT, gil_only
from gilprobe import assert_releases_gil
from writer_support import TextItem, html, leftovers, native_threads

# zimscraperlib's test for libzim's duplicate message (creator.py).
DUPLICATE_EXC_STR = re.compile(
    r"^Impossible to add(.+)"
    r"dirent\'s title to add is(.+)"
    r"existing dirent's title is(.+)",
    re.MULTILINE | re.DOTALL,
)


def many(n, prefix="p", body="<html><body>filler text %d</body></html>"):
    return [TextItem(f"{prefix}{i}", f"T{i}", body % i) for i in range(n)]


# ---- an exception inside the block (python-libzim #42) ---------------------------


@pytest.mark.parametrize("indexing", [False, True])
def test_exception_in_block_leaves_nothing(tmp_path, indexing):
    threads = native_threads()
    with pytest.raises(KeyError, match="boom"):
        with writer.Creator(tmp_path / "x.zim").config_indexing(indexing, "eng") as c:
            for item in many(300):
                c.add_item(item)
            assert leftovers(tmp_path), "libzim writes temporary files while creating"
            raise KeyError("boom")
    assert leftovers(tmp_path) == []
    assert native_threads() == threads


def test_base_exception_in_block_leaves_nothing(tmp_path):
    class Cancel(BaseException):
        pass

    with pytest.raises(Cancel):
        with writer.Creator(tmp_path / "x.zim") as c:
            c.add_item(TextItem("a", "A", "a"))
            raise Cancel()
    assert leftovers(tmp_path) == []


def run_child(lines: list[str], cwd) -> subprocess.CompletedProcess:
    here = os.path.dirname(os.path.abspath(__file__))
    # writer_support from here; libzim as the tests import it (conftest).
    paths = [here] if INSTALLED else [str(REPO_ROOT), here]
    prelude = [
        "import sys",
        f"sys.path[:0] = {paths!r}",
        "from libzim import writer",
        "from writer_support import TextItem",
    ]
    return subprocess.run([sys.executable, "-c", "\n".join(prelude + lines)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how", ["left open", "deleted", "base class left open"])
def test_unfinished_creation_at_exit(tmp_path, how):
    """A creation never finished is discarded, at the latest at interpreter
    exit, while libzim's workers still need the GIL: no crash, no file."""
    start = {
        "left open": ["c = writer.Creator('x.zim').config_indexing(True, 'eng')"],
        "deleted": ["c = writer.Creator('x.zim')"],
        "base class left open": ["from libzim._libzim import _Creator", "c = _Creator('x.zim')"],
    }[how]
    lines = start + [
        "c.__enter__()",
        "for i in range(2000):",
        "    c.add_item(TextItem(f'p{i}', f'T{i}', '<html><body>some text</body></html>' * 20))",
    ]
    if how == "deleted":
        lines += ["del c", "import gc, os", "gc.collect()", "assert os.listdir('.') == []"]
    lines += ["print('done')"]
    r = run_child(lines, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout
    assert leftovers(tmp_path) == []


# ---- duplicates -----------------------------------------------------------------


def test_duplicate_path_keeps_libzims_message(tmp_path):
    with writer.Creator(tmp_path / "d.zim") as c:
        c.add_item(TextItem("a", "First", "one"))
        with pytest.raises(RuntimeError) as exc:
            c.add_item(TextItem("a", "Second", "two"))
        assert isinstance(exc.value, WriterError)
        assert DUPLICATE_EXC_STR.match(str(exc.value))
        assert str(exc.value).startswith("Impossible to add C/a\n")
        with pytest.raises(RuntimeError) as exc:
            c.add_redirection("a", "Third", "b", {})
        assert DUPLICATE_EXC_STR.match(str(exc.value))
        # The creator stays usable.
        c.add_item(TextItem("b", "B", "bee"))
    a = Archive(tmp_path / "d.zim")
    assert bytes(a.get_entry_by_path("a").get_item().content) == b"one"
    assert a.get_entry_by_path("a").title == "First"
    assert bytes(a.get_entry_by_path("b").get_item().content) == b"bee"
    assert leftovers(tmp_path) == ["d.zim"]


def test_duplicate_metadata(tmp_path):
    with writer.Creator(tmp_path / "d.zim") as c:
        c.add_metadata("Title", "one")
        with pytest.raises(RuntimeError, match="Impossible to add"):
            c.add_metadata("Title", "two")
    assert Archive(tmp_path / "d.zim").get_metadata("Title") == b"one"


# ---- callbacks that raise ------------------------------------------------------------


class Boom(Exception):
    pass


def raising(method):
    def f(self, *a):
        raise Boom(method)
    return f


class GoodIndex(writer.IndexData):
    def has_indexdata(self):
        return True

    def get_title(self):
        return "t"

    def get_content(self):
        return "words"

    def get_keywords(self):
        return ""

    def get_wordcount(self):
        return 1


CALLBACK_FAILURES = {
    "get_path": lambda: type("I", (TextItem,), {"get_path": raising("get_path")}),
    "get_title": lambda: type("I", (TextItem,), {"get_title": raising("get_title")}),
    "get_mimetype": lambda: type("I", (TextItem,), {"get_mimetype": raising("get_mimetype")}),
    "get_hints": lambda: type("I", (TextItem,), {"get_hints": raising("get_hints")}),
    "get_contentprovider": lambda: type(
        "I", (TextItem,), {"get_contentprovider": raising("get_contentprovider")}),
    "get_size": lambda: type("I", (TextItem,), {"get_contentprovider": lambda s: type(
        "P", (writer.StringProvider,), {"get_size": raising("get_size")})(s.content)}),
    "feed": lambda: type("I", (TextItem,), {"get_contentprovider": lambda s: type(
        "P", (writer.StringProvider,), {"gen_blob": raising("feed")})(s.content)}),
    "get_indexdata": lambda: type("I", (TextItem,), {"get_indexdata": raising("get_indexdata")}),
    "has_indexdata": lambda: type("I", (TextItem,), {"get_indexdata": lambda s: type(
        "D", (GoodIndex,), {"has_indexdata": raising("has_indexdata")})()}),
    "get_content": lambda: type("I", (TextItem,), {"get_indexdata": lambda s: type(
        "D", (GoodIndex,), {"get_content": raising("get_content")})()}),
}


@pytest.mark.parametrize("method", CALLBACK_FAILURES)
def test_callback_exception_is_the_cause(tmp_path, method):
    threads = native_threads()
    bad = CALLBACK_FAILURES[method]()
    with pytest.raises(WriterError) as exc:
        with writer.Creator(tmp_path / "c.zim").config_indexing(True, "eng") as c:
            c.add_item(bad("bad.html", "Bad", html("text")))
            for item in many(50):
                c.add_item(item)
    cause = exc.value.__cause__
    assert isinstance(cause, Boom) and cause.args == (method,), repr(exc.value)
    assert isinstance(exc.value, RuntimeError)
    assert "\n" not in str(exc.value)
    assert leftovers(tmp_path) == []
    assert native_threads() == threads


def test_callback_failure_reaches_the_next_call_or_the_end(tmp_path):
    # A worker's failure surfaces at a later add_item or at the end of the
    # block; either way the creation is abandoned and the file never appears.
    bad = CALLBACK_FAILURES["feed"]()
    raised_at = None
    try:
        with writer.Creator(tmp_path / "c.zim").config_nbworkers(1) as c:
            c.add_item(bad("bad", "Bad", "x" * 100))
            for n, item in enumerate(many(2000)):
                raised_at = n
                c.add_item(item)
            raised_at = "end"
    except WriterError as e:
        assert isinstance(e.__cause__, Boom)
    else:
        pytest.fail("no error")
    assert raised_at is not None
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("declared, fed", [(100, b"short"), (3, b"too long")])
def test_size_mismatch(tmp_path, declared, fed):
    class P(writer.StringProvider):
        def get_size(self):
            return declared

    class I(TextItem):
        def get_contentprovider(self):
            return P(self.content)

    with pytest.raises(WriterError, match="get_size") as exc:
        with writer.Creator(tmp_path / "s.zim") as c:
            c.add_item(I("m", "M", fed, "application/octet-stream"))
            for item in many(20):
                c.add_item(item)
    assert "'m'" in str(exc.value)
    assert leftovers(tmp_path) == []


def test_wrong_types_from_callbacks(tmp_path):
    class NotStr(TextItem):
        def get_title(self):
            return b"bytes title"

    class NoProvider(TextItem):
        def get_contentprovider(self):
            return None

    class NotBlob(TextItem):
        def get_contentprovider(self):
            p = writer.StringProvider(self.content)
            p.feed = lambda: b"raw bytes"
            return p

    # A title that is not a str is asked for .encode(), as python-libzim does.
    for cls, cause in ((NotStr, AttributeError), (NoProvider, RuntimeError), (NotBlob, TypeError)):
        with pytest.raises(WriterError) as exc:
            with writer.Creator(tmp_path / "t.zim") as c:
                c.add_item(cls("a", "A", "content"))
        assert isinstance(exc.value.__cause__, cause), (cls, exc.value)
        assert leftovers(tmp_path) == []


def test_invalid_arguments(tmp_path):
    with writer.Creator(tmp_path / "i.zim") as c:
        with pytest.raises(ValueError, match="NUL"):
            c.add_redirection("a\0b", "t", "x", {})
        with pytest.raises(TypeError):
            c.add_metadata("Title", 3)
        with pytest.raises(TypeError):
            c.add_illustration(48, "not bytes")
        with pytest.raises(TypeError):
            c.add_redirection("a", "t", "x", [])
        c.add_item(TextItem("ok", "OK", "fine"))
    assert bytes(Archive(tmp_path / "i.zim").get_entry_by_path("ok").get_item().content) == b"fine"


def test_nul_in_item_path_is_refused(tmp_path):
    with pytest.raises(WriterError) as exc:
        with writer.Creator(tmp_path / "n.zim") as c:
            c.add_item(TextItem("a\0b", "A", "x"))
    assert isinstance(exc.value.__cause__, ValueError)
    assert "NUL" in str(exc.value.__cause__)
    assert leftovers(tmp_path) == []


# ---- destinations -----------------------------------------------------------------


def test_unwritable_destination(tmp_path):
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError, match="Unable to write ZIM file"):
        writer.Creator(tmp_path / "missing" / "x.zim")
    # The directory disappears between Creator() and the block.
    gone = tmp_path / "gone"
    gone.mkdir()
    c = writer.Creator(gone / "x.zim")
    gone.rmdir()
    with pytest.raises(WriterError, match="x.zim"):
        with c:
            pytest.fail("the block must not run")
    assert leftovers(tmp_path) == ["file"]


def test_creator_cannot_be_entered_twice(tmp_path):
    c = writer.Creator(tmp_path / "a.zim")
    with c:
        with pytest.raises(RuntimeError, match="already started"):
            c.__enter__()
    with pytest.raises(RuntimeError, match="already finished"):
        c.__enter__()
    assert Archive(tmp_path / "a.zim").entry_count == 0


def test_fault_injected_in_native_calls(tmp_path):
    from libzim import _libzim

    for call in ("add_item", "add_metadata", "add_redirection", "add_illustration"):
        with pytest.raises(WriterError):
            with writer.Creator(tmp_path / "f.zim") as c:
                _libzim._fault_inject(1)
                try:
                    {
                        "add_item": lambda: c.add_item(TextItem("a", "A", "a")),
                        "add_metadata": lambda: c.add_metadata("Title", "t"),
                        "add_redirection": lambda: c.add_redirection("r", "R", "a", {}),
                        "add_illustration": lambda: c.add_illustration(48, b"png"),
                    }[call]()
                finally:
                    _libzim._fault_inject(0)
        assert leftovers(tmp_path) == []


# ---- threads ---------------------------------------------------------------------


def entry_set(path):
    a = Archive(path)
    out = set()
    for i in range(a.entry_count):
        e = a._get_entry_by_id(i)
        out.add((e.path, e.title, bytes(e.get_item().content)))
    return out


def test_add_item_from_several_threads(tmp_path):
    items = [TextItem(f"t{k}/{i}", f"Title {k} {i}", html(f"thread {k} item {i}"))
             for k in range(4) for i in range(250)]
    with writer.Creator(tmp_path / "one.zim").config_indexing(True, "eng") as c:
        for it in items:
            c.add_item(it)
    barrier = threading.Barrier(4)
    errors = []
    with writer.Creator(tmp_path / "many.zim").config_indexing(True, "eng") as c:
        def work(k):
            try:
                barrier.wait()
                for it in items[k::4]:
                    c.add_item(it)
            except BaseException as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert errors == []
    assert entry_set(tmp_path / "many.zim") == entry_set(tmp_path / "one.zim")
    assert len(entry_set(tmp_path / "many.zim")) == 1000


def test_items_are_released_during_the_write(tmp_path):
    n = 3000
    finalized = []
    with writer.Creator(tmp_path / "w.zim").config_indexing(True, "eng") \
            .config_clustersize(16 * 1024).config_nbworkers(2) as c:
        for i in range(n):
            item = TextItem(f"p{i}", f"T{i}", html(f"text {i}" * 20))
            weakref.finalize(item, finalized.append, i)
            c.add_item(item)
            del item
        # libzim drops items as their clusters are written and indexed; give
        # its workers a bounded while to catch up with the last ones.
        deadline = time.monotonic() + 30
        while len(finalized) < n // 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        during = len(finalized)
    assert during >= n // 2, f"only {during} of {n} items released before the end"
    assert len(finalized) == n


# ---- the GIL while libzim works ----------------------------------------------------


@gil_only
def test_gil_released_while_finishing(tmp_path):
    """Finishing (the last clusters, listings, Xapian indexes, checksum) runs
    without the GIL: measured on the real work, not stretched by the test
    delay, since 1,500 delayed add_item calls would take minutes."""
    made = []

    def creator_with_items():
        c = writer.Creator(tmp_path / f"g{len(made)}.zim").config_indexing(True, "eng")
        c.__enter__()
        for i in range(1500):
            c.add_item(TextItem(f"p{i}", f"Title {i}", html(" ".join(
                f"w{(i * 7 + k) % 5000}" for k in range(200)))))
        made.append(c)
        return c

    assert_releases_gil("finish", lambda c: c.__exit__(None, None, None),
                        calls=2, setup=creator_with_items, delay_us=0)
    assert Archive(made[0].filename).entry_count == 1500


