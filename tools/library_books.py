#!/usr/bin/env python3
"""Libraries of many small archives, for tests/test_serve_many.py and bench/library_scale.py.

    python3 tools/library_books.py N [--bases K] [--out DIR]     # prints the library file's path

``K`` base archives (default 20) are written with libzim.writer, each with 40
indexed articles holding a word of its own (``basewordK``), its own title and name;
the N books are copies of them (book i of base i % K), each with an id of its own:
the copy's header UUID is replaced and the MD5 checksum at its end recomputed, so
every copy is a whole valid archive (``zimcheck`` passes it) whose answers are its
base's. Writing 1,500 archives with the writer would take ~8 minutes here (0.3 s
each); copying takes under a second per thousand. ``library.xml`` lists them as
kiwix-manage writes a library (id, path, title, language, counts, size in KiB).

Built once under ``~/.cache/libzim-c/library-books/N-K/`` (``--out`` elsewhere);
a complete folder is reused.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import uuid as uuidlib
from pathlib import Path
from xml.sax.saxutils import quoteattr

ARTICLES = 40
UUID_AT, CHECKSUM_POS_AT = 8, 72  # the ZIM header: magic, versions, then the UUID; checksumPos


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "libzim-c" / "library-books"


def base_word(k: int) -> str:
    """The word only base ``k``'s articles hold (letters only: one Xapian term)."""
    return "baseword" + "".join("abcdefghij"[int(c)] for c in str(k))


def write_base(path: Path, k: int) -> None:
    """Base archive ``k``: 40 indexed articles, a main page, its title and word."""
    from libzim import writer

    class Item(writer.Item):
        def __init__(self, p: str, t: str, html: str) -> None:
            super().__init__()
            self.p, self.t, self.html = p, t, html

        def get_path(self) -> str:
            return self.p

        def get_title(self) -> str:
            return self.t

        def get_mimetype(self) -> str:
            return "text/html"

        def get_contentprovider(self) -> writer.ContentProvider:
            return writer.StringProvider(self.html)

        def get_hints(self) -> dict:
            return {writer.Hint.FRONT_ARTICLE: True}

    word = base_word(k)
    tmp = path.with_suffix(".tmp")
    with writer.Creator(str(tmp)).config_indexing(True, "eng") as c:
        c.set_mainpath("a0.html")
        for i in range(ARTICLES):
            c.add_item(Item(f"a{i}.html", f"Base {k} article {i}",
                            f"<html><head><title>Base {k} article {i}</title></head><body><p>{word} shared "
                            f"text number {i} of base {k}</p></body></html>"))
        for key, value in (("Title", f"Base {k}"), ("Language", "eng"), ("Name", f"base{k}"),
                           ("Description", f"Base archive {k}"), ("Creator", "libzim-c"), ("Date", "2026-01-01")):
            c.add_metadata(key, value)
    os.replace(tmp, path)


def copy_with_id(src: bytes, dest: Path, new_uuid: bytes) -> None:
    """``src`` with its header UUID replaced and its MD5 checksum recomputed."""
    pos = int.from_bytes(src[CHECKSUM_POS_AT:CHECKSUM_POS_AT + 8], "little")
    assert src[:4] == b"ZIM\x04" and pos + 16 == len(src), "not a ZIM file with its checksum at the end"
    body = bytearray(src[:pos])
    body[UUID_AT:UUID_AT + 16] = new_uuid
    tmp = dest.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(body)
        f.write(hashlib.md5(body).digest())
    os.replace(tmp, dest)


def book_uuid(n: int, i: int) -> uuidlib.UUID:
    return uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"libzim-c/library-books/{n}/{i}")


def build(n: int, bases: int = 20, out: Path | None = None) -> Path:
    """The folder of N books (book00000.zim ...) and its library.xml; returns the file's path."""
    bases = max(1, min(bases, n))
    folder = out or cache_root() / f"{n}-{bases}"
    lib = folder / "library.xml"
    if lib.is_file():
        return lib
    (folder / "bases").mkdir(parents=True, exist_ok=True)
    data = []
    for k in range(bases):
        p = folder / "bases" / f"base{k}.zim"
        if not p.is_file():
            write_base(p, k)
        data.append(p.read_bytes())
    width = max(5, len(str(n - 1)))
    rows = []
    for i in range(n):
        dest = folder / f"book{i:0{width}d}.zim"
        u = book_uuid(n, i)
        k = i % bases
        if not dest.is_file():
            copy_with_id(data[k], dest, u.bytes)
        size_kib = (dest.stat().st_size + 1023) >> 10
        attrs = {"id": str(u), "path": dest.name, "title": f"Book {i} (base {k})", "description": f"Base archive {k}",
                 "language": "eng", "creator": "libzim-c", "publisher": "", "name": f"book{i}", "flavour": "",
                 "tags": "_ftindex:yes", "date": "2026-01-01", "articleCount": str(ARTICLES),
                 "mediaCount": "0", "size": str(size_kib)}
        rows.append("  <book " + " ".join(f"{k2}={quoteattr(v)}" for k2, v in attrs.items()) + "/>\n")
    tmp = lib.with_suffix(".tmp")
    tmp.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<library version="20110515">\n'
                   + "".join(rows) + "</library>\n")
    os.replace(tmp, lib)
    return lib


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="how many books")
    ap.add_argument("--bases", type=int, default=20, help="distinct archives written (default 20)")
    ap.add_argument("--out", type=Path, default=None, help="folder (default under ~/.cache/libzim-c/library-books)")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("n must be >= 1")
    print(build(args.n, args.bases, args.out))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
