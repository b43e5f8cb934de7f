"""Content of compressed clusters, which the binding decodes itself.

src/zimshim_cluster*.cpp read zstd and xz clusters with pread and keep them in
one cache per file, instead of letting libzim 8.1.1 map the file 1 KiB at a
time. Expected contents come from outside the binding: the bytes an archive
was written with, or zim-tools' zimdump (libzim in another process). Corrupt
clusters run in a child process, so a crash fails the test instead of pytest.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from libzim import writer
from libzim.reader import Archive

from conftest import SUITE, child_python, run_threads
from writer_support import TextItem, add_required_metadata

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import zimedit  # noqa: E402

SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")  # tools/sanitize.sh

PAGES = 120
CLUSTER_SIZE = 16 * 1024  # several pages per cluster, many clusters
# A cache budget (bytes of decoded data) that holds one such cluster, never two.
ONE_CLUSTER = 24 * 1024


def page_bytes(i: int) -> bytes:
    rnd = random.Random(i)
    words = " ".join(f"w{rnd.randrange(10**6)}" for _ in range(200 + 40 * (i % 7)))
    return f"<html><body><h1>Page {i}</h1><p>{words}</p></body></html>".encode()


def codecs(path: Path) -> set[int]:
    """Compression codes of every cluster, read from the file's own bytes."""
    data = path.read_bytes()
    count, = struct.unpack_from("<I", data, 28)
    table, = struct.unpack_from("<Q", data, 48)
    return {data[struct.unpack_from("<Q", data, table + 8 * i)[0]] & 0x0F for i in range(count)}


def cluster_spans(path: Path) -> list[tuple[int, int, int]]:
    """(start, end, codec) of each cluster, ends taken from the next start."""
    data = path.read_bytes()
    count, = struct.unpack_from("<I", data, 28)
    table, = struct.unpack_from("<Q", data, 48)
    starts = sorted(struct.unpack_from("<Q", data, table + 8 * i)[0] for i in range(count))
    checksum, = struct.unpack_from("<Q", data, 72)
    ends = starts[1:] + [checksum]
    return [(s, e, data[s] & 0x0F) for s, e in zip(starts, ends)]


@pytest.fixture(scope="module")
def zstd_zim(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clusters") / "pages.zim"
    with writer.Creator(out).config_indexing(False, "eng").config_clustersize(CLUSTER_SIZE) as c:
        c.set_mainpath("p0")
        add_required_metadata(c)
        for i in range(PAGES):
            c.add_item(TextItem(f"p{i}", f"Page {i}", page_bytes(i)))
    return out


def test_many_zstd_clusters_hold_the_written_bytes(zstd_zim):
    assert 5 in codecs(zstd_zim)  # zstd
    assert sum(1 for _s, _e, c in cluster_spans(zstd_zim) if c == 5) >= 10
    with Archive(zstd_zim) as a:
        # Backwards: each cluster's last blob first, then the earlier ones
        # from the part already decoded.
        for i in reversed(range(PAGES)):
            assert bytes(a.get_entry_by_path(f"p{i}").get_item().content) == page_bytes(i)


def test_sizes_come_before_content(zstd_zim):
    # item.size alone reads only the cluster's offset table.
    with Archive(zstd_zim) as a:
        sizes = [a.get_entry_by_path(f"p{i}").get_item().size for i in range(PAGES)]
    assert sizes == [len(page_bytes(i)) for i in range(PAGES)]


def test_views_outlive_eviction(zstd_zim):
    # One cluster cached: every other read evicts the one before.
    code = f"""
import json
import os
from libzim.reader import Archive, set_cluster_cache_max_size
set_cluster_cache_max_size({ONE_CLUSTER})
a = Archive({str(zstd_zim)!r})
views = [a.get_entry_by_path(f"p{{i}}").get_item().content for i in range({PAGES})]
again = [bytes(a.get_entry_by_path(f"p{{i}}").get_item().content) for i in reversed(range({PAGES}))]
print(json.dumps([bytes(v).hex() for v in views] + [b.hex() for b in reversed(again)]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         **child_python(), timeout=120)
    assert out.returncode == 0, out.stderr
    got = [bytes.fromhex(h) for h in json.loads(out.stdout)]
    expected = [page_bytes(i) for i in range(PAGES)]
    assert got == expected + expected


def test_archives_of_one_file_share_one_cache(zstd_zim, tmp_path):
    path = tmp_path / "p.zim"
    shutil.copyfile(zstd_zim, path)
    with Archive(path) as a, Archive(path) as b, Archive(zstd_zim) as other:
        assert a._cluster_cache is not None
        assert a._cluster_cache == b._cluster_cache  # one file: one cache
        assert other._cluster_cache != a._cluster_cache
        # Replaced atomically: a new Archive reads the new file, not the
        # old file's decoded clusters.
        new = tmp_path / "new.zim"
        shutil.copyfile(zstd_zim, new)
        new.write_bytes(new.read_bytes())  # a file of its own
        os.replace(new, path)
        with Archive(path) as c:
            assert c._cluster_cache not in (a._cluster_cache, other._cluster_cache)
            assert bytes(c.get_entry_by_path("p7").get_item().content) == page_bytes(7)
        assert bytes(a.get_entry_by_path("p7").get_item().content) == page_bytes(7)


def test_threads_read_what_one_thread_reads(zstd_zim):
    def digest_of(a, order):
        return {i: hashlib.sha256(a.get_entry_by_path(f"p{i}").get_item().content).hexdigest()
                for i in order}

    expected = {i: hashlib.sha256(page_bytes(i)).hexdigest() for i in range(PAGES)}
    with Archive(zstd_zim) as a:
        assert digest_of(a, range(PAGES)) == expected
    with Archive(zstd_zim) as shared:
        results = []

        def work(seed):
            order = list(range(PAGES)) * 3
            random.Random(seed).shuffle(order)
            results.append(digest_of(shared, order))

        run_threads([lambda s=s: work(s) for s in range(6)])
    assert results == [expected] * 6


EVICTING_CHILD = r"""
import hashlib, json, random, sys, threading
from libzim.reader import Archive, set_cluster_cache_max_size
path, pages, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
set_cluster_cache_max_size(int(sys.argv[4]))
archives = [Archive(path) for _ in range(4)]  # one cache for all: one file
seen, errors = [], []

def work(k):
    try:
        rnd, out = random.Random(k), {}
        for _ in range(rounds):
            i = rnd.randrange(pages)
            out[i] = hashlib.sha256(archives[k].get_entry_by_path(f"p{i}").get_item().content).hexdigest()
        seen.append(out)
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"seen": seen, "errors": errors}))
"""


def test_eviction_while_other_threads_decode(zstd_zim):
    """A one-cluster cache shared by four Archives: every read evicts the
    cluster another thread may be decoding (a use after free once)."""
    out = subprocess.run([sys.executable, "-c", EVICTING_CHILD, str(zstd_zim), str(PAGES), "400",
                          str(ONE_CLUSTER)],
                         capture_output=True, text=True, **child_python(),
                         timeout=300)
    assert out.returncode == 0, f"child died ({out.returncode}): {out.stderr[-2000:]}"
    result = json.loads(out.stdout)
    assert result["errors"] == []
    assert len(result["seen"]) == 4
    expected = {i: hashlib.sha256(page_bytes(i)).hexdigest() for i in range(PAGES)}
    for out_k in result["seen"]:
        assert {int(i): d for i, d in out_k.items()} == {int(i): expected[int(i)] for i in out_k}


@pytest.mark.parametrize("scheme, codec", [("nons", 5), ("withns", 4)])
def test_suite_archives_match_zimdump(scheme, codec, tmp_path):
    path = SUITE / scheme / "wikibooks_be_all_nopic_2017-02.zim"
    assert codec in codecs(path)  # withns/ is xz, nons/ zstd
    exe = shutil.which("zimdump")
    assert exe, "zimdump (apt-get install zim-tools) is the reference reader"
    subprocess.run([exe, "dump", f"--dir={tmp_path}", str(path)], check=True,
                   capture_output=True, timeout=120)
    dumped = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    compared = 0
    with Archive(path) as a:
        for i in reversed(range(a.all_entry_count)):
            e = a._get_entry_by_id(i)
            if e.is_redirect or e.path not in dumped:
                continue
            assert e.get_item().size == len(dumped[e.path]), e.path
            assert bytes(e.get_item().content) == dumped[e.path], e.path
            compared += 1
    assert compared >= 100


CORRUPT_CHILD = r"""
import json, sys
from libzim.reader import Archive
path, pages = sys.argv[1], int(sys.argv[2])
outcome = []
try:
    a = Archive(path)
except Exception as exc:
    print(json.dumps(["open", type(exc).__name__, str(exc)])); sys.exit(0)
for i in range(pages):
    try:
        outcome.append(["ok", a.get_entry_by_path(f"p{i}").get_item().content.tobytes().hex()])
    except Exception as exc:
        outcome.append([type(exc).__name__, str(exc)])
print(json.dumps(outcome))
"""


def read_corrupt(path: Path) -> list:
    out = subprocess.run([sys.executable, "-c", CORRUPT_CHILD, str(path), str(PAGES)],
                         capture_output=True, text=True, **child_python(), timeout=120)
    assert out.returncode == 0, f"child died ({out.returncode}): {out.stderr[-2000:]}"
    return json.loads(out.stdout)


def corrupted(src: Path, dst: Path, changes: dict[int, int]) -> Path:
    data = bytearray(src.read_bytes())
    for pos, value in changes.items():
        data[pos] = value
    dst.write_bytes(bytes(data))
    return dst


def test_corrupt_zstd_data_raises_naming_file_and_cluster(zstd_zim, tmp_path):
    # The biggest zstd cluster holds pages (metadata clusters are small).
    start, end, _codec = max((s for s in cluster_spans(zstd_zim) if s[2] == 5),
                             key=lambda s: s[1] - s[0])
    # The middle of the compressed stream, past the frame header.
    mid = (start + end) // 2
    bad = corrupted(zstd_zim, tmp_path / "bad.zim",
                    {mid + k: zstd_zim.read_bytes()[mid + k] ^ 0xFF for k in range(8)})
    outcome = read_corrupt(bad)
    failed = [o for o in outcome if o[0] != "ok"]
    assert failed, "a corrupt cluster read as valid content"
    for kind, msg in failed:
        assert kind == "ArchiveError", (kind, msg)
        assert msg.startswith(str(bad)) and "\n" not in msg, msg
        assert "cluster" in msg, msg
    ok = {i for i, o in enumerate(outcome) if o[0] == "ok"}
    assert all(bytes.fromhex(outcome[i][1]) == page_bytes(i) for i in ok)


def test_random_cluster_corruption_never_crashes(zstd_zim, tmp_path):
    """Byte changes anywhere in compressed clusters: content or ArchiveError."""
    spans = [s for s in cluster_spans(zstd_zim) if s[2] == 5]
    rnd = random.Random(4242)
    src = zstd_zim.read_bytes()
    kinds = set()
    for trial in range(12):
        changes = {}
        for _ in range(rnd.choice([1, 3, 20])):
            start, end, _ = rnd.choice(spans)
            pos = rnd.randrange(start + 1, end)
            changes[pos] = src[pos] ^ rnd.randrange(1, 256)
        outcome = read_corrupt(corrupted(zstd_zim, tmp_path / f"t{trial}.zim", changes))
        assert outcome[0] != "open", outcome  # only cluster bytes changed
        for i, (kind, _detail) in enumerate(outcome):
            # Without a checksum in the frame, changed bytes may still decode.
            assert kind in ("ok", "ArchiveError"), (trial, i, kind, _detail)
            kinds.add(kind)
    assert "ArchiveError" in kinds  # the corruptions were seen


# ---- the budget counts what the cache holds (issue 28) --------------------------

MEMORY_CHILD = r"""
import json, os, sys
import libzim.reader as r

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

r.set_cluster_cache_max_size(256 << 20)
a = r.Archive(sys.argv[1])
len(a.get_entry_by_path("p0").get_item().content)   # the pools' first buffers
r.set_cluster_cache_max_size(0)
r.set_cluster_cache_max_size(256 << 20)
base = rss()
for path in sys.argv[2:]:
    len(a.get_entry_by_path(path).get_item().content)
print(json.dumps({"grown": rss() - base, "reported": r.get_cluster_cache_current_size()}))
"""


@pytest.fixture(scope="module")
def megabyte_clusters(tmp_path_factory) -> Path:
    """Six zstd clusters of 1 MiB (16 pages of 64 KB each), as libzim writes them:
    level-19 frames without a content size, whose buffered decoder has an 8 MiB window."""
    out = tmp_path_factory.mktemp("mib") / "mib.zim"
    vocab = [f"w{i}" for i in range(30000)]
    with writer.Creator(out).config_indexing(False, "eng").config_clustersize(1 << 20) as c:
        c.set_mainpath("p0")
        add_required_metadata(c)
        for i in range(96):
            words = " ".join(random.Random(i).choices(vocab, k=10000))
            c.add_item(TextItem(f"p{i}", f"Page {i}", f"<html><body><p>{words}</p></body></html>"))
    return out


@pytest.mark.parametrize("blob", [8, 14])
def test_the_budget_counts_partly_decoded_clusters(megabyte_clusters, blob):
    # Each cluster decoded up to one of its later pages, none to its end: what
    # the process grew by (its resident memory) is what the cache reports,
    # decoders included. Before, the buffered decoders' windows (up to a
    # cluster's decoded bytes each) went uncounted: 32 MiB grown for 16 MiB
    # reported on 16 such clusters.
    paths = [f"p{16 * k + blob}" for k in range(6)]
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(megabyte_clusters), *paths],
                         capture_output=True, text=True, timeout=120, **child_python())
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout)
    with Archive(megabyte_clusters) as a:  # at least the pages read
        assert m["reported"] > sum(a.get_entry_by_path(p).get_item().size for p in paths)
    if not SANITIZED:  # ASan's shadow memory and quarantine grow the process too
        assert m["grown"] <= m["reported"] + (2 << 20), m


@pytest.fixture(scope="module")
def megabyte_clusters_xz(megabyte_clusters) -> Path:
    """The same six clusters re-encoded as xz (the lzma module's preset 6: an
    8 MiB dictionary, so a live decoder costs more than the cluster it reads)."""
    out = megabyte_clusters.with_name("mib-xz.zim")
    out.write_bytes(zimedit.to_xz(megabyte_clusters.read_bytes()))
    return out


def test_the_budget_counts_xz_clusters(megabyte_clusters_xz):
    # liblzma's decoder is not kept for a partly decoded cluster (it is
    # decoded to its end at that read), so what the process grows by is the
    # clusters the cache reports, whole.
    paths = [f"p{16 * k + 8}" for k in range(6)]
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(megabyte_clusters_xz), *paths],
                         capture_output=True, text=True, timeout=120, **child_python())
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout)
    data = megabyte_clusters_xz.read_bytes()
    z, where = zimedit.Zim(data), zimedit.dirents(data)
    clusters = {where[path][0] for path in paths}
    assert len(clusters) == len(paths) and all(z.info(c) & 0x0F == zimedit.XZ for c in clusters)
    whole = sum(len(z.decoded(c)) for c in clusters)  # each cluster decoded to its end
    assert whole <= m["reported"] <= whole + (1 << 20), m  # + the last segments' slack
    if not SANITIZED:
        assert m["grown"] <= m["reported"] + (2 << 20), m
