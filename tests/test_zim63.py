"""ZIM 6.3 archives: what libzim 9 writes (python-libzim 3.13.1, today's scrapers).

ZIM 6.3 drops the header's full title table (its position is all ones) and
keeps only the front-article title listing. libzim 8.1.1's title_index check
predates that and failed every such valid archive; the binding checks the
listing instead. The archive is written here by python-libzim 3.13.1 from
PyPI, which tools/bootstrap.sh installs into its own venv.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import child_python
from libzim.reader import Archive

ORACLE_VENV = Path(
    os.environ.get("LIBZIM_C_ORACLE_VENV")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "libzim-c" / "python-libzim-3.13.1"
)
ORACLE_PYTHON = ORACLE_VENV / "bin" / "python"

TITLES = ["Aardvark notes", "Beekeeping", "Clockmaking", "Dunes", "Estuaries", "Ferns"]

WRITER = textwrap.dedent("""
    import sys
    from libzim.writer import Creator, Hint, Item, StringProvider

    class Page(Item):
        def __init__(self, path, title):
            self.path, self.title = path, title
        def get_path(self): return self.path
        def get_title(self): return self.title
        def get_mimetype(self): return "text/html"
        def get_contentprovider(self):
            return StringProvider(f"<html><head><title>{self.title}</title></head>"
                                  f"<body><p>{self.title} gleepnar</p></body></html>")
        def get_hints(self): return {Hint.FRONT_ARTICLE: True}

    titles = sys.argv[2:]
    with Creator(sys.argv[1]).config_indexing(True, "eng") as c:
        c.set_mainpath("page0")
        # Added in reverse title order: the listing must sort them.
        for i, title in reversed(list(enumerate(titles))):
            c.add_item(Page(f"page{i}", title))
        for name, value in (("Title", "ZIM 6.3 test"), ("Language", "eng"),
                            ("Creator", "libzim-c"), ("Description", "test")):
            c.add_metadata(name, value)
    """)


@pytest.fixture(scope="module")
def zim63(tmp_path_factory) -> Path:
    if not ORACLE_PYTHON.exists():
        pytest.fail(f"python-libzim 3.13.1 not found at {ORACLE_VENV}: run tools/bootstrap.sh")
    out = tmp_path_factory.mktemp("zim63") / "v63.zim"
    # -I: the reference's own libzim, not this checkout's.
    subprocess.run([str(ORACLE_PYTHON), "-I", "-c", WRITER, str(out), *TITLES],
                   check=True, cwd=out.parent, timeout=300, capture_output=True)
    return out


def header(data: bytes) -> dict:
    major, minor = struct.unpack_from("<HH", data, 4)
    entries, clusters, path_ptr, title_ptr, cluster_ptr = struct.unpack_from("<IIQQQ", data, 24)
    return dict(major=major, minor=minor, entries=entries, path_ptr=path_ptr,
                title_ptr=title_ptr, cluster_ptr=cluster_ptr)


def listing_span(data: bytes, name: bytes = b"Xlisting/titleOrdered/v1") -> tuple[int, int]:
    """(offset, size) of a title listing's bytes, read from the format itself."""
    h = header(data)
    for i in range(h["entries"]):
        (pos,) = struct.unpack_from("<Q", data, h["path_ptr"] + 8 * i)
        mime, _, ns = struct.unpack_from("<HBc", data, pos)
        if mime >= 0xFFFD:
            continue
        cluster, blob = struct.unpack_from("<II", data, pos + 8)
        path = data[pos + 16:data.index(b"\0", pos + 16)]
        if ns + path != name:
            continue
        (cpos,) = struct.unpack_from("<Q", data, h["cluster_ptr"] + 8 * cluster)
        assert data[cpos] & 0x0F <= 1, "the listing is stored uncompressed"
        fmt = "<Q" if data[cpos] & 0x10 else "<I"
        width = struct.calcsize(fmt)
        start, end = (struct.unpack_from(fmt, data, cpos + 1 + width * k)[0] for k in (blob, blob + 1))
        return cpos + 1 + start, end - start
    raise AssertionError(f"{name!r} not found")


def test_fixture_is_zim_6_3_without_a_full_title_table(zim63):
    h = header(zim63.read_bytes())
    assert (h["major"], h["minor"]) == (6, 3)
    assert h["title_ptr"] == 2**64 - 1


def test_reads_and_validates(zim63):
    with Archive(zim63) as a:
        assert [e.title for e in a.iter_by_title()] == sorted(TITLES)
        assert a.get_entry_by_title("Dunes").path == f"page{TITLES.index('Dunes')}"
        assert a.check() is True
        assert a.validate() == []
        assert a.validate(["title_index"]) == []


def test_cli_check_passes(zim63):
    proc = subprocess.run([sys.executable, "-m", "libzim", "check", str(zim63)],
                          capture_output=True, text=True, timeout=120, **child_python())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("damage", ["unsorted", "out-of-range"])
def test_broken_listing_still_fails(zim63, tmp_path, damage):
    data = bytearray(zim63.read_bytes())
    offset, size = listing_span(bytes(data))
    assert size == 4 * len(TITLES)
    ids = list(struct.unpack_from(f"<{len(TITLES)}I", data, offset))
    if damage == "unsorted":
        ids[0], ids[1] = ids[1], ids[0]
    else:
        ids[2] = header(data)["entries"] + 5
    struct.pack_into(f"<{len(TITLES)}I", data, offset, *ids)
    path = tmp_path / "broken.zim"
    path.write_bytes(bytes(data))
    with Archive(path) as a:
        assert a.validate(["title_index"]) == ["title_index"]


NO_FRONT_WRITER = textwrap.dedent("""
    import sys
    from libzim.writer import Creator, Hint, Item, StringProvider

    class Page(Item):
        def __init__(self, path):
            self.path = path
        def get_path(self): return self.path
        def get_title(self): return self.path
        def get_mimetype(self): return "text/html"
        def get_contentprovider(self): return StringProvider("<html><body>x</body></html>")
        def get_hints(self): return {Hint.FRONT_ARTICLE: False}

    with Creator(sys.argv[1]) as c:
        for path in ("a.html", "b.html"):
            c.add_item(Page(path))
    """)


def test_no_front_article_in_a_v1_listing(tmp_path):
    # python-libzim 3.13.1 on this file: article_count 0 and KeyError("Cannot find
    # valid random entry (no front entry at all)"); the libzim 8/9.2.3 writers'
    # v0 listing counts the same items as articles (test_dropin.py).
    out = tmp_path / "no_front.zim"
    subprocess.run([str(ORACLE_PYTHON), "-I", "-c", NO_FRONT_WRITER, str(out)],
                   check=True, cwd=tmp_path, timeout=300, capture_output=True)
    with Archive(out) as a:
        assert a.article_count == 0
        with pytest.raises(KeyError, match="no front entry"):
            a.get_random_entry()
