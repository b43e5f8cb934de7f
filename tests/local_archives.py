"""Test archives built at test time, from this repository alone.

The default suite must pass on a bare clone (docs/contributing.md, "Test data"): these stand in
for the shared zim-testing-suite archives, written by our own writer
(libzim.writer over Debian's libzim) into a tmp dir. Each builder returns what
it wrote (paths, titles, mimetypes, bytes, redirects, metadata): that record,
not the binding's reading, is what the tests compare with.

The corrupt archives are the small one with one defect each, made by editing
bytes at offsets computed here from the ZIM header and the pointer tables
(https://wiki.openzim.org/wiki/ZIM_file_format), so each defect is known
exactly. What cannot be made here: xz clusters and the old namespaced
(withns) scheme, which libzim 8.1.1's writer no longer writes.
"""

from __future__ import annotations

import hashlib
import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from libzim import writer

# -- what is written ---------------------------------------------------------


def png(size: int = 48) -> bytes:
    """A small valid RGB PNG, deterministic (a gradient)."""
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + b"".join(bytes(((x * 5) & 0xFF, (y * 5) & 0xFF, 0x80)) for x in range(size))
        for y in range(size)
    )
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


@dataclass
class Written:
    """What a builder put in its archive (user entries and metadata)."""

    path: Path
    main_path: str
    items: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)  # path -> (title, mimetype, bytes)
    redirects: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (title, target path)
    metadata: dict[str, str] = field(default_factory=dict)
    illustration: bytes = b""

    @property
    def user_paths(self) -> list[str]:
        return sorted([*self.items, *self.redirects])


class _Item(writer.Item):
    def __init__(self, path: str, title: str, mimetype: str, content: bytes, front: bool):
        super().__init__()
        self._path, self._title, self._mimetype, self._content = path, title, mimetype, content
        self._hints = {writer.Hint.FRONT_ARTICLE: front, writer.Hint.COMPRESS: mimetype.startswith("text/")}

    def get_path(self) -> str:
        return self._path

    def get_title(self) -> str:
        return self._title

    def get_mimetype(self) -> str:
        return self._mimetype

    def get_contentprovider(self) -> writer.ContentProvider:
        return writer.StringProvider(self._content)

    def get_hints(self) -> dict:
        return self._hints


METADATA = {
    "Name": "libzim-c_local_small",
    "Title": "Test ZIM file",
    "Creator": "libzim-c tests",
    "Publisher": "libzim-c tests",
    "Date": "2024-05-17",
    "Description": "A small archive built by the test suite",
    "Language": "eng",
}


def _write(out: Path, written: Written, *, cluster_size: int | None = None) -> Written:
    creator = writer.Creator(out).config_indexing(False, "eng")
    if cluster_size is not None:
        creator.config_clustersize(cluster_size)
    with creator as c:
        c.set_mainpath(written.main_path)
        for name, value in written.metadata.items():
            c.add_metadata(name, value)
        c.add_illustration(48, written.illustration)
        for path, (title, mimetype, content) in written.items.items():
            c.add_item(_Item(path, title, mimetype, content, mimetype == "text/html"))
        for path, (title, target) in written.redirects.items():
            c.add_redirection(path, title, target, {writer.Hint.FRONT_ARTICLE: True})
    return written


def build_small(out: Path) -> Written:
    """Like the suite's small.zim: one article main.html titled "Test ZIM file",
    a favicon PNG, the illustration, metadata, a title index, no full-text index."""
    icon = png(16)
    w = Written(out, "main.html", metadata=dict(METADATA), illustration=png(48))
    w.items["main.html"] = (
        "Test ZIM file",
        "text/html",
        b"<html><head><title>Test ZIM file</title></head>"
        b'<body><h1>Test ZIM file</h1><img src="favicon.png"/></body></html>',
    )
    w.items["favicon.png"] = ("favicon.png", "image/png", icon)
    return _write(out, w)


WORDS = ("alpha", "brindle", "cobalt", "dune", "ember", "fjord", "gale", "heron", "ivory", "juniper")


def build_multi(out: Path, *, pages: int = 60, seed: int = 20240611) -> Written:
    """The stand-in for the suite's wikibooks archive: enough text in small
    clusters (16 KiB target) for several zstd clusters, images in uncompressed
    ones, redirects, non-ASCII titles."""
    rnd = random.Random(seed)
    w = Written(out, "index.html", metadata={
        "Name": "libzim-c_local_multi", "Title": "Local multi-cluster archive",
        "Creator": "libzim-c tests", "Publisher": "libzim-c tests", "Date": "2024-05-17",
        "Description": "Several clusters, redirects", "Language": "bel",
    }, illustration=png(48))
    for i in range(pages):
        title = f"Старонка {i:03d} {WORDS[i % len(WORDS)]}"
        body = " ".join(rnd.choice(WORDS) + str(rnd.randrange(1000)) for _ in range(400))
        w.items[f"page{i:03d}.html"] = (
            title, "text/html",
            f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>".encode(),
        )
    for i in range(8):
        w.items[f"img/pic{i}.bin"] = (f"pic{i}", "application/octet-stream", rnd.randbytes(3000 + 500 * i))
    w.items["style.css"] = ("style.css", "text/css", b"body { color: #123; }\n" * 50)
    # More than a pipe holds (64 KiB), in a cluster of its own.
    w.items["big.css"] = ("big.css", "text/css", "".join(
        f".c{i} {{ margin: {rnd.randrange(100)}px; }}\n" for i in range(8000)).encode())
    links = "".join(f'<a href="page{i:03d}.html">{i}</a>' for i in range(pages))
    w.items["index.html"] = ("Local multi-cluster archive", "text/html",
                             f"<html><body>{links}</body></html>".encode())
    for i in range(0, pages, 7):
        w.redirects[f"alias{i:03d}.html"] = (f"Alias {i:03d}", f"page{i:03d}.html")
    return _write(out, w, cluster_size=16 * 1024)


def split(src: Path, out_dir: Path, parts: int = 3) -> Path:
    """The three-part copy <name>.zimaa/.zimab/.zimac; returns <name>.zim (opens it)."""
    data = src.read_bytes()
    size = -(-len(data) // parts)
    stem = out_dir / (src.stem + "_split")
    for n in range(parts):
        Path(f"{stem}.zima{'abcdefgh'[n]}").write_bytes(data[n * size:(n + 1) * size])
    return Path(f"{stem}.zim")


EMBED_OFFSET = 8


def embed(src: Path, out: Path, offset: int = EMBED_OFFSET) -> Path:
    """src at byte offset `offset` of out, with bytes after it too."""
    out.write_bytes(b"E" * offset + src.read_bytes() + b"trailer")
    return out


# -- the ZIM format, read here by hand ---------------------------------------

HEADER_SIZE = 80
# name -> (offset, struct format), from the format's header table
HEADER_FIELDS = {
    "magic": (0, "<I"), "major": (4, "<H"), "minor": (6, "<H"),
    "entryCount": (24, "<I"), "clusterCount": (28, "<I"),
    "urlPtrPos": (32, "<Q"), "titlePtrPos": (40, "<Q"), "clusterPtrPos": (48, "<Q"),
    "mimeListPos": (56, "<Q"), "mainPage": (64, "<I"), "layoutPage": (68, "<I"),
    "checksumPos": (72, "<Q"),
}
REDIRECT_MIME = 0xFFFF


def header(data: bytes) -> dict[str, int]:
    return {k: struct.unpack_from(f, data, off)[0] for k, (off, f) in HEADER_FIELDS.items()}


def set_field(data: bytearray, name: str, value: int) -> None:
    off, f = HEADER_FIELDS[name]
    struct.pack_into(f, data, off, value)


def url_ptr(data: bytes, i: int) -> int:
    return struct.unpack_from("<Q", data, header(data)["urlPtrPos"] + 8 * i)[0]


def dirent(data: bytes, i: int) -> dict:
    """Dirent i (in path order): mimetype, namespace, cluster/blob or redirect, path, title."""
    pos = url_ptr(data, i)
    mime, _param_len, ns = struct.unpack_from("<HBc", data, pos)
    d = {"pos": pos, "mime": mime, "ns": ns.decode()}
    if mime == REDIRECT_MIME:
        (d["redirect"],) = struct.unpack_from("<I", data, pos + 8)
        rest = pos + 12
    else:
        d["cluster"], d["blob"] = struct.unpack_from("<II", data, pos + 8)
        rest = pos + 16
    path, title = data[rest:].split(b"\0", 2)[:2]
    d["path"], d["title"] = path.decode(), title.decode()
    return d


def mime_types(data: bytes) -> list[str]:
    h = header(data)
    out = []
    pos = h["mimeListPos"]
    while data[pos] != 0:
        end = data.index(b"\0", pos)
        out.append(data[pos:end].decode())
        pos = end + 1
    return out


def reseal(data: bytearray) -> None:
    """Rewrite the MD5 checksum over the edited bytes, so the only defect is the edit."""
    pos = header(data)["checksumPos"]
    data[pos:pos + 16] = hashlib.md5(bytes(data[:pos])).digest()


# -- the corrupt archives ----------------------------------------------------

OPEN_FAILS = "fails on open"
# Opens, and validate() (libzim's checkIntegrity) names exactly the check of the
# defect. check() is libzim's checksum check only: it is false for the edited
# checksum and true for the others, whose checksum reseal() rewrote.
VALIDATE = "opens, validate() names the defect"
# The same, and reading the content of exactly the entries the defect touches
# (counted by hand from the dirents, redirects followed) fails.
CONTENT_FAILS = "opens, the defect's entries fail on reading content"


def _beyond(data: bytes) -> int:
    return len(data) + 4096


def _smaller_than_header(d: bytearray) -> bytes:
    return bytes(d[:40])


def _bad_checksum(d: bytearray) -> bytes:
    d[header(d)["checksumPos"]] ^= 0xFF
    return bytes(d)


def _header_edit(name: str, value, *, resealed: bool = True):
    def edit(d: bytearray) -> bytes:
        set_field(d, name, value(d))
        if resealed:
            reseal(d)
        return bytes(d)
    return edit


def _url_ptr_edit(which):
    def edit(d: bytearray) -> bytes:
        h = header(d)
        i = which(h["entryCount"])
        struct.pack_into("<Q", d, h["urlPtrPos"] + 8 * i, _beyond(d))
        reseal(d)
        return bytes(d)
    return edit


def _nonsorted_dirent_table(d: bytearray) -> bytes:
    # Swap the pointers of two user entries (namespace C): path order broken.
    h = header(d)
    ids = [i for i in range(h["entryCount"]) if dirent(d, i)["ns"] == "C"][:2]
    a, b = (h["urlPtrPos"] + 8 * i for i in ids)
    d[a:a + 8], d[b:b + 8] = d[b:b + 8], d[a:a + 8]
    reseal(d)
    return bytes(d)


def _bad_mimetype_in_dirent(d: bytearray) -> bytes:
    # A content dirent whose mimetype number is past the end of the mime list.
    h = header(d)
    i = next(i for i in range(h["entryCount"]) if dirent(d, i)["path"] == "main.html")
    struct.pack_into("<H", d, dirent(d, i)["pos"], len(mime_types(d)) + 10)
    reseal(d)
    return bytes(d)


def _outofbounds_first_clusterptr(d: bytearray) -> bytes:
    struct.pack_into("<Q", d, header(d)["clusterPtrPos"], _beyond(d))
    reseal(d)
    return bytes(d)


def _bad_mimetype_list(d: bytearray) -> bytes:
    # No NUL left in the list: its strings and its empty-string terminator
    # become one string that runs into the first cluster.
    start = header(d)["mimeListPos"]
    end = start + sum(len(m) + 1 for m in mime_types(d)) + 1
    d[start:end] = bytes(b if b else 0x78 for b in d[start:end])
    reseal(d)
    return bytes(d)


def _title_ptr_edit(edit_table):
    def edit(d: bytearray) -> bytes:
        h = header(d)
        pos, n = h["titlePtrPos"], h["entryCount"]
        table = list(struct.unpack_from(f"<{n}I", d, pos))
        edit_table(table, d)
        struct.pack_into(f"<{n}I", d, pos, *table)
        reseal(d)
        return bytes(d)
    return edit


def _swap_user_titles(table: list[int], d: bytes) -> None:
    # Two user entries (namespace C), adjacent in title order, swapped.
    at = [k for k, i in enumerate(table) if dirent(d, i)["ns"] == "C"][:2]
    table[at[0]], table[at[1]] = table[at[1]], table[at[0]]


def _set_title(k: int):
    def edit_table(table: list[int], d: bytes) -> None:
        table[k] = len(table) + 5
    return edit_table


def _offset_in_cluster(d: bytearray) -> bytes:
    # The uncompressed cluster (images, listings): its second blob offset
    # pointed far past the cluster's end.
    h = header(d)
    ptrs = struct.unpack_from(f"<{h['clusterCount']}Q", d, h["clusterPtrPos"])
    k = next(k for k, p in enumerate(ptrs) if d[p] & 0x0F == 1)  # compression 1: none
    struct.pack_into("<I", d, ptrs[k] + 1 + 4, len(d) * 4)
    reseal(d)
    return bytes(d)


def _resolved(data: bytes, i: int) -> dict:
    d = dirent(data, i)
    for _ in range(16):
        if d["mime"] != REDIRECT_MIME:
            return d
        d = dirent(data, d["redirect"])
    raise ValueError("redirect loop")


def touched(defect: str, data: bytes, namespace: str | None = None) -> int:
    """For a CONTENT_FAILS defect: how many entries' content it makes unreadable,
    counted from the edited archive's dirents (redirects count with their target);
    only those of `namespace` ("C": the user entries) when given."""
    n_mimes = len(mime_types(data)) if defect != "bad_mimetype_list" else 1
    hit = {
        "bad_mimetype_in_dirent": lambda d: d["mime"] >= n_mimes,
        "bad_mimetype_list": lambda d: d["mime"] >= 1,  # the list now holds one (long) string
        "outofbounds_first_clusterptr": lambda d: d["cluster"] == 0,
    }[defect]
    return sum(1 for i in range(header(data)["entryCount"])
               if hit(_resolved(data, i)) and namespace in (None, dirent(data, i)["ns"]))


# defect name (the suite's invalid.<name>.zim where the defect is the same kind)
#   -> (edit of the small archive's bytes, expected outcome, validate() names)
CORRUPTIONS = {
    "smaller_than_header": (_smaller_than_header, OPEN_FAILS, None),
    "bad_checksum": (_bad_checksum, VALIDATE, "checksum"),
    # No checksum rewritten: where it would go is the defect.
    "invalid_checksumpos": (_header_edit("checksumPos", _beyond, resealed=False), OPEN_FAILS, None),
    "invalid_mimelistpos": (_header_edit("mimeListPos", _beyond), OPEN_FAILS, None),
    "bad_mimetype_list": (_bad_mimetype_list, CONTENT_FAILS, "dirent_mimetypes"),
    "outofbounds_urlptrpos": (_header_edit("urlPtrPos", _beyond), OPEN_FAILS, None),
    "outofbounds_clusterptrpos": (_header_edit("clusterPtrPos", _beyond), OPEN_FAILS, None),
    "outofbounds_titleptrpos": (_header_edit("titlePtrPos", _beyond), VALIDATE, "title_index"),
    "outofbounds_first_direntptr": (_url_ptr_edit(lambda n: 0), OPEN_FAILS, None),
    "outofbounds_last_direntptr": (_url_ptr_edit(lambda n: n - 1), OPEN_FAILS, None),
    "nonsorted_dirent_table": (_nonsorted_dirent_table, OPEN_FAILS, None),
    "bad_mimetype_in_dirent": (_bad_mimetype_in_dirent, CONTENT_FAILS, "dirent_mimetypes"),
    "outofbounds_first_clusterptr": (_outofbounds_first_clusterptr, CONTENT_FAILS, "cluster_ptrs"),
    "nonsorted_title_index": (_title_ptr_edit(_swap_user_titles), VALIDATE, "title_index"),
    "outofbounds_first_title_entry": (_title_ptr_edit(_set_title(0)), VALIDATE, "title_index"),
    "outofbounds_last_title_entry": (_title_ptr_edit(_set_title(-1)), VALIDATE, "title_index"),
    # The uncompressed cluster also holds the title listing, which libzim reads on open.
    "offset_in_cluster": (_offset_in_cluster, OPEN_FAILS, None),
}


# Where libzim 9.2.3 (Debian 13) answers validate() otherwise, measured there:
# its DIRENT_MIMETYPES check passes a mimetype number past the list's end, and
# it fails on the out-of-bounds first cluster pointer as well.
LIBZIM9_VALIDATE = {
    "bad_mimetype_in_dirent": [],
    "bad_mimetype_list": [],
    "outofbounds_first_clusterptr": ["cluster_ptrs", "dirent_mimetypes"],
}


def expected_validate(defect: str, libzim_major: int) -> list[str]:
    """What validate() names for an archive that opens, on libzim 8 or 9."""
    name = CORRUPTIONS[defect][2]
    if libzim_major == 9 and defect in LIBZIM9_VALIDATE:
        return LIBZIM9_VALIDATE[defect]
    return [name] if name else []


def corrupt(small: Path, defect: str, out_dir: Path) -> Path:
    edit = CORRUPTIONS[defect][0]
    out = out_dir / f"invalid.{defect}.zim"
    out.write_bytes(edit(bytearray(small.read_bytes())))
    return out


def entries_in_cluster(data: bytes, cluster: int) -> int:
    """How many content dirents point into `cluster` (from the dirents, by hand)."""
    h = header(data)
    return sum(1 for i in range(h["entryCount"]) if dirent(data, i).get("cluster") == cluster)


# -- the set, built once per test process ------------------------------------


@dataclass
class Local:
    dir: Path
    small: Written
    multi: Written
    split: Path  # <multi>_split.zim, opened from .zimaa/.zimab/.zimac
    embedded: Path  # small at EMBED_OFFSET inside another file
    corrupt: dict[str, Path]

    @property
    def small_size(self) -> int:
        return self.small.path.stat().st_size


_BUILT: Local | None = None


def local() -> Local:
    """Build the local archives once per process, in a tmp dir removed at exit."""
    global _BUILT
    if _BUILT is None:
        import atexit
        import shutil
        import tempfile

        d = Path(tempfile.mkdtemp(prefix="libzim-c-local-"))
        atexit.register(shutil.rmtree, d, ignore_errors=True)
        small = build_small(d / "small.zim")
        multi = build_multi(d / "multi.zim")
        bad = d / "invalid"
        bad.mkdir()
        _BUILT = Local(
            d, small, multi, split(multi.path, d), embed(small.path, d / "small.zim.embedded"),
            {name: corrupt(small.path, name, bad) for name in CORRUPTIONS},
        )
    return _BUILT
