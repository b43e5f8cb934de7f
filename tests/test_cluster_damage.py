"""Damaged clusters: what src/zimshim_cluster*.cpp serve and what they refuse.

The archives are written here with libzim.writer and damaged at the cluster
level with tools/zimedit.py (xz copies made by recompressing the written zstd
clusters). Expected bytes are the ones written. Every damaged archive is read
in a child process with an address-space limit, so that a crash or an
allocation sized from the damage fails the test instead of pytest. The
cluster fuzzer (tools/fuzz_archive.py --clusters) compares the same damage,
at random, with python-libzim 3.13.1.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from libzim import writer

from conftest import SUITE, child_python

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import zimedit  # noqa: E402
from zimedit import XZ, ZSTD, Zim  # noqa: E402

# ASan reserves terabytes of shadow memory: no address-space limit there.
SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")
LIMIT = 0 if SANITIZED else 2 << 30

READ = r"""
import json, resource, sys
limit = int(sys.argv[3])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import libzim
from libzim.reader import Archive

def vm_peak():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmPeak:")).split()[1])

a = Archive(sys.argv[1])
before, out = vm_peak(), []
for path in json.loads(sys.argv[2]):
    try:
        item = a.get_entry_by_path(path).get_item()
        data = bytes(item.content)
        out.append(["ok", data.hex(), item.size])
    except libzim.ZimError as e:
        out.append(["ZimError", str(e)])
    except BaseException as e:
        out.append([type(e).__name__, str(e)])
print(json.dumps({"results": out, "vm_growth": (vm_peak() - before) * 1024}))
"""


def read(path: Path, paths: list[str]) -> tuple[list, int]:
    """Each path's ("ok", content, size) or (exception class, message), read in order in a child."""
    proc = subprocess.run([sys.executable, "-c", READ, str(path), json.dumps(paths), str(LIMIT)],
                          capture_output=True, text=True, timeout=120, **child_python())
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    return [[r[0], bytes.fromhex(r[1]), r[2]] if r[0] == "ok" else r for r in out["results"]], out["vm_growth"]


class Item(writer.Item):
    def __init__(self, path: str, content: bytes, mimetype: str = "text/html", compress: bool = True):
        super().__init__()
        self.path, self.content, self.mimetype, self.compress = path, content, mimetype, compress

    def get_path(self):
        return self.path

    def get_title(self):
        return self.path

    def get_mimetype(self):
        return self.mimetype

    def get_contentprovider(self):
        return writer.StringProvider(self.content)

    def get_hints(self):
        return {writer.Hint.FRONT_ARTICLE: True, writer.Hint.COMPRESS: self.compress}


def page(i: int, words: int) -> bytes:
    rnd = random.Random(i)
    text = " ".join(f"w{rnd.randrange(10**5)}" for _ in range(words))
    return f"<html><body><h1>Page {i}</h1><p>{text}</p></body></html>".encode()


def written() -> dict[str, bytes]:
    items = {f"p{i}": page(i, 30 + 97 * (i % 11)) for i in range(40)}
    items["big"] = page(99, 300_000)  # 2 MB: past one decode segment, grown as it decodes
    items.update({f"img{i}.png": random.Random(i).randbytes(300 + 500 * i) for i in range(10)})
    return items


def write(path: Path, items: dict[str, bytes], cluster_size: int) -> Path:
    with writer.Creator(path).config_indexing(False, "eng").config_clustersize(cluster_size) as c:
        c.set_mainpath("p0")
        for name, data in items.items():
            png = name.endswith(".png")
            c.add_item(Item(name, data, "image/png" if png else "text/html", compress=not png))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Small clusters (zstd, and the same as xz) and wide ones (many zstd blocks each)."""
    d = tmp_path_factory.mktemp("damage")
    small = write(d / "small-zstd.zim", written(), 16 * 1024)
    (d / "small-xz.zim").write_bytes(zimedit.to_xz(small.read_bytes()))
    wide_items = {f"p{i}": page(i, 400 + 50 * (i % 7)) for i in range(200)}
    wide = write(d / "wide-zstd.zim", wide_items, 1 << 20)
    (d / "wide-xz.zim").write_bytes(zimedit.to_xz(wide.read_bytes()))
    return {"small-zstd": small, "small-xz": d / "small-xz.zim", "wide-zstd": wide, "wide-xz": d / "wide-xz.zim"}


def cluster_paths(data: bytes, cluster: int) -> list[str]:
    """The paths stored in cluster, in blob order."""
    return [p for p, (c, b) in sorted(zimedit.dirents(data).items(), key=lambda x: x[1][1]) if c == cluster]


def with_table(source: Path, out: Path, cluster: int, edit) -> Path:
    """source with cluster's offset table replaced by edit(table, width)."""
    z = Zim(source.read_bytes())
    width = 8 if z.info(cluster) & 0x10 else 4
    plain = z.decoded(cluster)
    table = zimedit.parse_table(plain, width)
    z.encode(cluster, zimedit.pack_table(edit(table, width), width) + plain[table[0]:])
    out.write_bytes(z.finish())
    return out


def a_cluster(path: Path, codec: int, blobs: int) -> int:
    z = Zim(path.read_bytes())
    data = path.read_bytes()
    ours = written()
    # Only our items: the title listings are checked when the archive opens.
    return next(i for i in range(z.clusters)
                if z.info(i) & 0x0F == codec and len(cluster_paths(data, i)) >= blobs
                and all(p in ours for p in cluster_paths(data, i)))


CODECS = {"small-zstd": ZSTD, "small-xz": XZ}


def test_undamaged_archives_read_back(built):
    items = written()
    for name in ("small-zstd", "small-xz"):
        data = built[name].read_bytes()
        codecs = {Zim(data).info(c) & 0x0F for c, _b in zimedit.dirents(data).values()}
        assert codecs == {CODECS[name], 1} or codecs == {CODECS[name], 0}
        got, _ = read(built[name], list(items))
        assert got == [["ok", v, len(v)] for v in items.values()]


@pytest.mark.parametrize("name", ["small-zstd", "small-xz", "uncompressed"])
def test_offset_table_one_entry_short_raises_for_the_last_blob(built, tmp_path, name):
    # Weakness 1: the last blob came back as b"" of size 0.
    source = built["small-zstd" if name == "uncompressed" else name]
    codec = 1 if name == "uncompressed" else CODECS[name]
    c = a_cluster(source, codec, 3)
    paths = cluster_paths(source.read_bytes(), c)
    case = with_table(source, tmp_path / "short.zim", c,
                      lambda t, w: [v - w for v in t[:-1]])  # the blobs stay where the table says
    got, _ = read(case, paths + [paths[-1]])
    items = written()
    assert got[:-2] == [["ok", items[p], len(items[p])] for p in paths[:-1]]
    for r in got[-2:]:
        assert r[0] == "ZimError"
        assert "blob index out of range" in r[1]
        assert f"cluster {c}: blob {len(paths) - 1}" in r[1] and str(case) in r[1]


@pytest.mark.parametrize("name", ["small-zstd", "small-xz"])
def test_a_declared_huge_blob_costs_only_what_decodes(built, tmp_path, name):
    # Weakness 2: the declared cluster size was allocated at the first read.
    source = built[name]
    c = a_cluster(source, CODECS[name], 3)
    paths = cluster_paths(source.read_bytes(), c)

    def huge(t, w):
        t[-1] = t[-2] + 2_500_000_000
        return t

    case = with_table(source, tmp_path / "huge.zim", c, huge)
    got, vm_growth = read(case, [paths[-1]] + paths)
    items = written()
    assert got[0][0] == "ZimError" and "ends before the cluster does" in got[0][1]
    assert got[1:-1] == [["ok", items[p], len(items[p])] for p in paths[:-1]]
    assert got[-1][0] == "ZimError"
    if not SANITIZED:
        assert vm_growth < 64 << 20, vm_growth


@pytest.mark.parametrize("name", ["wide-zstd", "wide-xz"])
def test_blobs_decoded_before_the_damage_stay_readable(built, tmp_path, name):
    # Weakness 3: after a decode error every read of the cluster failed,
    # even of blobs the stream had delivered whole.
    source = built[name]
    data = source.read_bytes()
    z = Zim(data)
    pages = {f"p{i}": page(i, 400 + 50 * (i % 7)) for i in range(200)}
    c = max(range(z.clusters), key=lambda i: len(cluster_paths(data, i)))
    paths = [p for p in cluster_paths(data, c) if p in pages]
    assert len(paths) > 50
    z.put_cluster(c, z.info(c), z.raw(c)[: len(z.raw(c)) // 2])
    case = tmp_path / "cut.zim"
    case.write_bytes(z.finish())
    # The last blob first: its decode fails half way, after the first blobs.
    got, _ = read(case, [paths[-1]] + paths)
    assert got[0][0] == "ZimError" and f"cluster {c}" in got[0][1]
    served = [r for r in got[1:] if r[0] == "ok"]
    assert len(served) > len(paths) // 4
    # The served ones are the first blobs, whole and right; every later one raises.
    assert got[1:1 + len(served)] == [["ok", pages[p], len(pages[p])] for p in paths[:len(served)]]
    assert all(r[0] == "ZimError" for r in got[1 + len(served):])


def test_large_blobs_grow_and_read_right(built):
    items = written()
    for name in ("small-zstd", "small-xz"):
        got, _ = read(built[name], ["big", "p1", "big"])
        assert got == [["ok", items[p], len(items[p])] for p in ("big", "p1", "big")]


@pytest.mark.parametrize("edit,message", [
    (lambda t, w: [t[0] + 1] + t[1:], "not properly aligned"),
    (lambda t, w: [4 << 28] + t[1:], "bad offset table size"),
    (lambda t, w: t[:1] + [t[2], t[1]] + t[3:], "out of order"),
], ids=["misaligned", "huge-table", "out-of-order"])
def test_uncompressed_offset_tables_are_checked(built, tmp_path, edit, message):
    # Weakness 4: libzim 8.1.1 reserved a vector from the table's first
    # entry (MemoryError, or an ASan allocation-size-too-big abort).
    source = built["small-zstd"]
    c = a_cluster(source, 1, 3)
    paths = cluster_paths(source.read_bytes(), c)
    z = Zim(source.read_bytes())
    table = zimedit.parse_table(z.raw(c), 4)
    new = zimedit.pack_table(edit(table, 4), 4)
    assert len(new) == 4 * len(table)
    start = z.ptr(c) + 1
    z.data[start:start + len(new)] = new  # in place: the blobs do not move
    case = tmp_path / "table.zim"
    case.write_bytes(z.finish())
    got, _ = read(case, paths)
    for r in got:
        assert r[0] == "ZimError", r
        assert message in r[1] and f"cluster {c}" in r[1]


def test_an_uncompressed_blob_past_the_end_costs_that_blob(built, tmp_path):
    # As libzim 9: the blobs before it still read.
    source = built["small-zstd"]
    c = a_cluster(source, 1, 3)
    paths = cluster_paths(source.read_bytes(), c)
    z = Zim(source.read_bytes())
    table = zimedit.parse_table(z.raw(c), 4)
    table[-1] += 1 << 31
    start = z.ptr(c) + 1
    z.data[start:start + 4 * len(table)] = zimedit.pack_table(table, 4)
    case = tmp_path / "end.zim"
    case.write_bytes(z.finish())
    got, _ = read(case, paths)
    items = written()
    assert got[:-1] == [["ok", items[p], len(items[p])] for p in paths[:-1]]
    assert got[-1][0] == "ZimError" and f"cluster {c}: blob {len(paths) - 1} ends past" in got[-1][1]


@pytest.mark.suite_data
def test_bad_mimetype_keeps_the_content():
    # python-libzim returns the item and its content and raises on .mimetype alone.
    from test_zim63 import ORACLE_PYTHON

    path = SUITE / "nons" / "invalid.bad_mimetype_in_dirent.zim"
    code = r"""
import json, sys
from libzim.reader import Archive
a = Archive(sys.argv[1])
out = []
for i in range(a.all_entry_count):
    e = a._get_entry_by_id(i)
    if e.is_redirect:
        continue
    try:
        item = e.get_item()
    except Exception as ex:
        out.append([e.path, "no item", None])
        continue
    try:
        m = item.mimetype
    except Exception as ex:
        m = "raised " + type(ex).__name__
    out.append([e.path, m, bytes(item.content).hex()])
print(json.dumps(out))
"""
    ours = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=60, **child_python())
    # Not under the sanitizer run's preloaded ASan: only our build is checked.
    plain = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONMALLOC")}
    oracle = subprocess.run([str(ORACLE_PYTHON), "-I", "-c", code, str(path)], capture_output=True, text=True,
                            timeout=60, env=plain)
    assert ours.returncode == 0 and oracle.returncode == 0, ours.stderr + oracle.stderr
    mine, theirs = json.loads(ours.stdout), json.loads(oracle.stdout)
    bad = [r for r in theirs if r[1].startswith("raised")]
    assert bad, "the oracle found no bad mimetype"
    assert [r[:1] + r[2:] for r in mine] == [r[:1] + r[2:] for r in theirs]
    assert [r[0] for r in mine if r[1] == "raised ArchiveError"] == [r[0] for r in bad]


def test_a_damaged_index_table_is_an_archive_error(tmp_path):
    # The full-text index lives in an uncompressed cluster that libzim 8.1.1
    # sizes (reserving a vector from its table) before any search.
    path = tmp_path / "indexed.zim"
    with writer.Creator(path).config_indexing(True, "eng") as c:
        c.set_mainpath("p0")
        for i in range(3):
            c.add_item(Item(f"p{i}", page(i, 50)))
    data = path.read_bytes()
    index = zimedit.dirents(data)["fulltext/xapian"][0]
    z = Zim(data)
    assert z.info(index) & 0x0F in (0, 1)
    # The title listings share that cluster: they are moved to a compressed
    # one (which libzim 8.1.1 skips), so the archive still opens.
    compressed = next(i for i in range(z.clusters) if z.info(i) & 0x0F == ZSTD)
    for listing in ("listing/titleOrdered/v0", "listing/titleOrdered/v1"):
        if zimedit.dirents(bytes(z.data)).get(listing, (None,))[0] == index:
            zimedit.set_dirent(z.data, listing, compressed, 0)
    start = z.ptr(index) + 1
    z.data[start:start + 4] = (4 << 28).to_bytes(4, "little")  # a 1 GiB table
    case = tmp_path / "index.zim"
    case.write_bytes(z.finish())
    code = r"""
import resource, sys
limit = int(sys.argv[2])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import libzim
from libzim.reader import Archive
from libzim.search import Query, Searcher
try:
    a = Archive(sys.argv[1])  # the title listings may share the cluster
except libzim.ZimError as e:
    print("ZimError", e)
    sys.exit(0)
for call in (lambda: a.has_fulltext_index, lambda: Searcher(a).search(Query().set_query("w1")).getEstimatedMatches()):
    try:
        call()
        print("no error")
    except libzim.ZimError as e:
        print("ZimError", e)
    except BaseException as e:
        print(type(e).__name__, e)
"""
    proc = subprocess.run([sys.executable, "-c", code, str(case), str(LIMIT)], capture_output=True, text=True,
                          timeout=120, **child_python())
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, lines
    for line in lines:
        assert line.startswith("ZimError") and f"cluster {index}: bad offset table size" in line, line
