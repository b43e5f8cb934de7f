"""Inputs found by mutating the shared small.zim (random byte changes), each
of which crashed or hung libzim 8.1.1 through this binding. The archives are
rebuilt here from the shared file and the recorded byte changes; each case
runs in its own process, so a crash or a hang fails the test instead of the
test run."""
import signal
import subprocess
import sys
import textwrap

import pytest

import libzim

import local_archives as L
from conftest import SUITE, child_python, suite_data

# What a damaged title index must do: every call that reads it answers or
# raises a one-line libzim.ZimError naming the file (run on the mutated `a`).
TITLE_INDEX_PROBE = """
        for call in (lambda: a.has_title_index, lambda: a.has_fulltext_index,
                     lambda: SuggestionSearcher(a).suggest("t").get_results(0, 5),
                     lambda: Searcher(a)):
            try:
                call()
            except libzim.ZimError as e:
                assert "\\n" not in str(e) and "small" in str(e), str(e)
        """

# (shared file, [(offset, new byte)], code run on the mutated archive `a`)
CASES = {
    # A corrupt dirent for the title index: libzim reads its blob offset
    # without a bounds check (segfault in FileImpl::getBlobOffset).
    "title-index-blob-out-of-range": (
        "nons/small.zim",
        [(777, 0o102), (1218, 0o135), (2682, 0o32), (4313, 0o177), (6217, 0o344),
         (11356, 0o231), (14368, 0o250), (17428, 0o213), (17692, 0o377), (21251, 0o22),
         (21785, 0o154), (23334, 0o277), (26562, 0o235), (27086, 0o261), (39393, 0o354),
         (40980, 0o3)],
        TITLE_INDEX_PROBE,
    ),
    # A malformed "valuesmap" in the title index's Xapian metadata: libzim
    # indexes past the end of its split (segfault in strtol).
    "title-index-valuesmap": (
        "nons/small.zim",
        [(1178, 0o331), (2554, 0o136), (9820, 0o266), (15233, 0o73), (16275, 0o165),
         (17125, 0o231), (18403, 0o371), (21691, 0o0), (25479, 0o134), (27115, 0o242),
         (30259, 0o350), (32402, 0o254), (36684, 0o63), (38789, 0o52), (39359, 0o331),
         (39920, 0o356)],
        """
        try:
            SuggestionSearcher(a).suggest("t").get_results(0, 5)
        except libzim.ArchiveError as e:
            assert "search index" in str(e) and "\\n" not in str(e), str(e)
        """,
    ),
    # Inverted namespace bounds: libzim's cluster-order list was sized to
    # billions of entries (minutes of memset, then out of memory).
    "cluster-order-bounds": (
        "withns/small.zim",
        [(4326, 0o15), (9570, 0o160), (17367, 0o122), (23042, 0o355), (25498, 0o105),
         (29701, 0o166), (29954, 0o330), (37220, 0o257), (39835, 0o343), (40718, 0o63),
         (54272, 0o171), (62065, 0o255), (64736, 0o272), (64941, 0o326), (73791, 0o245),
         (78598, 0o165)],
        """
        paths = [e.path for e in a.iter_efficient()]
        assert sorted(paths) == sorted(e.path for e in a.iter_by_path())
        """,
    ),
}


@suite_data
@pytest.mark.parametrize("name", sorted(CASES))
def test_mutated_archive_gives_errors_not_crashes(tmp_path, name):
    source, patch, code = CASES[name]
    data = bytearray((SUITE / source).read_bytes())
    for offset, byte in patch:
        data[offset] = byte
    path = tmp_path / "mutated-small.zim"
    path.write_bytes(bytes(data))
    script = "import libzim\nfrom libzim.reader import Archive\nfrom libzim.search import Searcher\n" \
             "from libzim.suggestion import SuggestionSearcher\n" \
             f"a = Archive({str(path)!r})\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, **child_python())
    assert proc.returncode == 0, proc.stderr[-2000:]


# Corrupt blob numbers in the title-listing dirents (X/listing/titleOrdered/v0
# at 40895, v1 at 40936 in nons/small.zim): libzim 8.1.1's Archive
# constructor reads the listing's blob offset without a bounds check
# (segfault in FileImpl::getTitleAccessor for v1). The binding checks the
# bound from the file before libzim opens it.
OPEN_CASES = {
    "title-listing-v1-blob": ("nons/small.zim", [(40939, 0x40)], "titleOrdered/v1", 0x40000004),
    "title-listing-v0-blob": ("nons/small.zim", [(40898, 0x40)], "titleOrdered/v0", 0x40000003),
}


@suite_data
@pytest.mark.parametrize("name", sorted(OPEN_CASES))
def test_corrupt_title_listing_refused_at_open(tmp_path, name):
    source, patch, listing, blob = OPEN_CASES[name]
    data = bytearray((SUITE / source).read_bytes())
    for offset, byte in patch:
        data[offset] = byte
    path = tmp_path / "mutated-small.zim"
    path.write_bytes(bytes(data))
    script = ("import libzim\nfrom libzim.reader import Archive\n"
              f"try:\n    Archive({str(path)!r})\nexcept libzim.ArchiveError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, **child_python())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == (f"{path}: corrupt title listing 'listing/{listing}': "
                           f"blob {blob} in a cluster of 5 blobs\n")


# A corrupt Xapian index: one byte of the title index database's header in
# nons/small.zim (found by mutating that database). Xapian 1.4.22's
# Database constructor segfaults on it when a SuggestionSearcher (or the
# binding's own index check) opens the database: in-process, nothing can
# catch that. libzim.reader.check_untrusted() opens the archive and its
# indexes in a child process first.
XAPIAN_CRASH = ("nons/small.zim", [(7740, 253)])


@suite_data
def test_check_untrusted_reports_the_xapian_crash(tmp_path):
    source, patch = XAPIAN_CRASH
    data = bytearray((SUITE / source).read_bytes())
    for offset, byte in patch:
        data[offset] = byte
    path = tmp_path / "mutated-small.zim"
    path.write_bytes(bytes(data))
    assert_untrusted_verdict_matches_an_open(path)


@suite_data
@pytest.mark.parametrize("name", ["nons/small.zim", "withns/small.zim", "nons/invalid.smaller_than_header.zim",
                                  "nons/invalid.nonsorted_dirent_table.zim"])
def test_check_untrusted_passes_what_does_not_crash(name):
    from libzim.reader import check_untrusted

    assert check_untrusted(SUITE / name) is None
    assert check_untrusted(SUITE / "nons" / "small.zim.embedded", offset=8,
                           size=(SUITE / "nons" / "small.zim").stat().st_size) is None


# ---- the same defects, rebuilt on the local small archive (local_archives.py) ----------
# The byte changes above are offsets in the shared file; here the same defects
# are made at offsets found in the local archive's dirents and clusters.


def _blob(data: bytes, path: str) -> tuple[dict, int, int]:
    """(dirent of X/<path>, file offset of its blob, blob count of its cluster):
    the cluster must be stored uncompressed, as the listings and indexes are."""
    import struct

    h = L.header(data)
    d = next(L.dirent(data, i) for i in range(h["entryCount"])
             if L.dirent(data, i)["ns"] == "X" and L.dirent(data, i)["path"] == path)
    cp = struct.unpack_from("<Q", data, h["clusterPtrPos"] + 8 * d["cluster"])[0]
    assert data[cp] & 0x0F == 1, "the cluster is compressed"
    first, off = struct.unpack_from("<II", data, cp + 1), struct.unpack_from("<I", data, cp + 1 + 4 * d["blob"])
    return d, cp + 1 + off[0], first[0] // 4 - 1


def _run(path, code: str) -> subprocess.CompletedProcess:
    script = ("import libzim\nfrom libzim.reader import Archive\nfrom libzim.search import Searcher\n"
              "from libzim.suggestion import SuggestionSearcher\n" + textwrap.dedent(code))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          **child_python())


def assert_untrusted_verdict_matches_an_open(path) -> None:
    """check_untrusted() on the Xapian reproducer says what opening it in a
    process of its own does (SIGSEGV or not); on Debian 12's Xapian it must crash."""
    from libzim.reader import check_untrusted
    from libzim.version import get_versions

    try:
        check_untrusted(path)
        crashed = False
    except libzim.ArchiveError as e:
        assert str(e) == f"{path}: unsafe to open: reading it crashed the checking process (SIGSEGV)"
        crashed = True
    proc = _run(path, f"SuggestionSearcher(Archive({str(path)!r}))\n")
    assert (proc.returncode == -signal.SIGSEGV) == crashed, proc.returncode
    if get_versions()["libxapian"] == "1.4.22":
        assert crashed, "the reproducer no longer crashes this Xapian: the test proves nothing"



@pytest.mark.parametrize("listing", ["titleOrdered/v0", "titleOrdered/v1"])
def test_local_corrupt_title_listing_refused_at_open(tmp_path, listing):
    import struct

    data = bytearray(L.local().small.path.read_bytes())
    d, _, blobs = _blob(data, f"listing/{listing}")
    bad = 0x40000000 | d["blob"]  # as the shared case: the blob number's high byte set
    struct.pack_into("<I", data, d["pos"] + 12, bad)
    path = tmp_path / "mutated-small.zim"
    path.write_bytes(bytes(data))
    proc = _run(path, f"""
        try:
            Archive({str(path)!r})
        except libzim.ArchiveError as e:
            print(e)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == f"{path}: corrupt title listing 'listing/{listing}': blob {bad} in a cluster of {blobs} blobs\n"


def test_local_title_index_blob_out_of_range(tmp_path):
    import struct

    data = bytearray(L.local().small.path.read_bytes())
    d, _, _ = _blob(data, "title/xapian")
    struct.pack_into("<I", data, d["pos"] + 12, 0x40000000 | d["blob"])
    path = tmp_path / "mutated-small.zim"
    path.write_bytes(bytes(data))
    proc = _run(path, f"""
        a = Archive({str(path)!r})
        """ + TITLE_INDEX_PROBE + """
        print("done")
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "done"


def local_xapian_crash(path):
    """Writes the local small archive with the shared XAPIAN_CRASH byte at the
    same place in its title index's Xapian database (46 bytes into it: the same
    glass header layout) to path."""
    data = bytearray(L.local().small.path.read_bytes())
    _, start, _ = _blob(data, "title/xapian")
    assert data[start:start + 14] == b"\x0f\rXapian Glass"
    data[start + 46] = 253
    path.write_bytes(bytes(data))
    return path


def test_local_check_untrusted_reports_the_xapian_crash(tmp_path):
    assert_untrusted_verdict_matches_an_open(local_xapian_crash(tmp_path / "mutated-small.zim"))


@pytest.mark.parametrize("name", ["small", "smaller_than_header", "nonsorted_dirent_table"])
def test_local_check_untrusted_passes_what_does_not_crash(name):
    from libzim.reader import check_untrusted

    local = L.local()
    assert check_untrusted(local.small.path if name == "small" else local.corrupt[name]) is None
    assert check_untrusted(local.embedded, offset=L.EMBED_OFFSET, size=local.small_size) is None
