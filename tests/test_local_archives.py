"""The reader on the archives built from this repository (local_archives.py).

These stand in, on a bare clone, for the shared suite's small.zim, wikibooks
(and its split and embedded copies) and invalid.*.zim. Expected values come
from what the builder wrote and from the ZIM bytes read by hand, never from
the binding.
"""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys

import pytest

import libzim
import libzim.reader
import local_archives as L
from conftest import child_python, per_libzim, read_every_entry, run_threads
from libzim.reader import Archive
from libzim.suggestion import SuggestionSearcher
from test_corrupt import assert_clear_errors, walk


def assert_matches_written(a: Archive, w: L.Written) -> None:
    """Every user entry is what was written: bytes, titles, mimetypes, redirects."""
    assert sorted(e.path for e in a.iter_by_path()) == w.user_paths
    assert a.entry_count == len(w.user_paths)
    for path, (title, mimetype, content) in w.items.items():
        e = a.get_entry_by_path(path)
        assert (e.path, e.title, e.is_redirect) == (path, title, False)
        item = e.get_item()
        assert (item.path, item.title, item.mimetype) == (path, title, mimetype)
        assert item.size == len(content)
        assert bytes(item.content) == content, path
    for path, (title, target) in w.redirects.items():
        e = a.get_entry_by_path(path)
        assert (e.title, e.is_redirect) == (title, True)
        assert e.get_redirect_entry().path == target
        assert bytes(e.get_item().content) == w.items[target][2]
    for name, value in w.metadata.items():
        assert a.get_metadata(name) == value.encode(), name
    assert set(w.metadata) <= set(a.metadata_keys)
    assert a.main_entry.get_item().path == w.main_path
    assert a.has_illustration(48)
    assert bytes(a.get_illustration_item(48).content) == w.illustration


def test_small_is_what_was_written(local):
    data = local.small.path.read_bytes()
    h = L.header(data)
    with Archive(local.small.path) as a:
        assert_matches_written(a, local.small)
        assert a.all_entry_count == h["entryCount"]
        assert a.filesize == len(data)
        assert a.uuid.bytes == data[8:24]
        assert a.checksum == data[h["checksumPos"]:h["checksumPos"] + 16].hex()
        assert a.main_entry.get_item().title == "Test ZIM file"
        assert a.article_count == 1  # main.html is the only front article
        assert a.has_title_index is True
        assert a.has_fulltext_index is False
        assert a.has_new_namespace_scheme is True
        assert a.has_checksum is True and a.check() is True
        assert a.validate() == []
        assert a.is_multipart is False


def test_multi_has_several_compressed_clusters(local):
    data = local.multi.path.read_bytes()
    h = L.header(data)
    ptrs = struct.unpack_from(f"<{h['clusterCount']}Q", data, h["clusterPtrPos"])
    kinds = [data[p] & 0x0F for p in ptrs]  # 1: none, 5: zstd
    assert kinds.count(5) >= 5 and kinds.count(1) >= 1, kinds
    with Archive(local.multi.path) as a:
        assert_matches_written(a, local.multi)
        assert a.check() is True and a.validate() == []


def test_every_entry_by_id_matches_the_dirents(local):
    """Internal entries too: paths (namespace dropped), redirects, from the bytes by hand."""
    for w in (local.small, local.multi):
        data = w.path.read_bytes()
        with Archive(w.path) as a:
            for i in range(L.header(data)["entryCount"]):
                d, e = L.dirent(data, i), a._get_entry_by_id(i)
                assert e.is_redirect == (d["mime"] == L.REDIRECT_MIME)
                if d["ns"] == "C":
                    assert e.path == d["path"]
                    assert e.title == (d["title"] or d["path"])


def test_split_archive_equals_unsplit(local):
    parts = [local.split.with_suffix(".zim" + s) for s in ("aa", "ab", "ac")]
    assert all(p.is_file() for p in parts) and not local.split.exists()
    assert sum(p.stat().st_size for p in parts) == local.multi.path.stat().st_size
    with Archive(local.split) as s, Archive(local.multi.path) as whole:
        assert s.is_multipart is True and whole.is_multipart is False
        assert s.filesize == whole.filesize
        assert_matches_written(s, local.multi)
        assert read_every_entry(s) == read_every_entry(whole)
        assert s.check() is True


def test_embedded_equals_small(local):
    size = local.small_size
    with Archive(local.embedded, offset=L.EMBED_OFFSET, size=size) as e:
        assert_matches_written(e, local.small)
        # Not check(): libzim 8.1.1 answers false for any archive opened at an
        # offset (test_reader.py, test_embedded_equals_small).
        structural = [c for c in libzim.reader.INTEGRITY_CHECKS if c != "checksum"]
        assert e.validate(structural) == []
        with Archive(local.small.path) as s:
            assert read_every_entry(e) == read_every_entry(s)
            assert e.uuid == s.uuid


@pytest.mark.parametrize("offset", [0, 1, L.EMBED_OFFSET + 1])
def test_embedded_wrong_offset_fails_cleanly(local, offset):
    with pytest.raises(libzim.ArchiveError) as exc:
        Archive(local.embedded, offset=offset, size=local.small_size)
    msg = exc.value.args[0]
    assert "\n" not in msg and msg.startswith(str(local.embedded)), msg


def test_embedded_range_past_the_end_fails_cleanly(local):
    with pytest.raises((ValueError, libzim.ArchiveError)):
        Archive(local.embedded, offset=L.EMBED_OFFSET, size=10**9)
    with pytest.raises((ValueError, libzim.ArchiveError)):
        Archive(local.embedded, offset=-1, size=100)


def test_pickle_roundtrips_local_archives(local):
    cases = [
        (Archive(local.small.path), local.small),
        (Archive(local.split), local.multi),
        (Archive(local.embedded, offset=L.EMBED_OFFSET, size=local.small_size), local.small),
    ]
    for a, w in cases:
        b = pickle.loads(pickle.dumps(a))
        assert b.filename == a.filename
        assert_matches_written(b, w)
        e = pickle.loads(pickle.dumps(a.get_entry_by_path(w.main_path)))
        assert bytes(e.get_item().content) == w.items[w.main_path][2]


def test_threads_read_what_one_thread_reads(local):
    with Archive(local.multi.path) as a:
        want = read_every_entry(a)
    with Archive(local.multi.path) as shared:
        got: list = [None] * 4

        def reader(k):
            def run():
                got[k] = read_every_entry(shared)
            return run

        run_threads([reader(k) for k in range(4)])
    assert got == [want] * 4


def test_suggestions_find_written_titles(local):
    with Archive(local.multi.path) as a:
        s = SuggestionSearcher(a)
        for path in ("page005.html", "page042.html"):
            title = local.multi.items[path][0]
            found = list(s.suggest(title).getResults(0, 10))
            assert path in found, (title, found)


def test_cli_info_and_get_on_local_small(local):
    path = local.small.path
    info = subprocess.run([sys.executable, "-m", "libzim", "info", "--json", str(path)],
                          capture_output=True, **child_python())
    assert info.returncode == 0, info.stderr
    got = json.loads(info.stdout)
    assert got["counts"]["all"] == L.header(path.read_bytes())["entryCount"]
    assert got["main_entry"]["target_title"] == "Test ZIM file"
    assert got["has_fulltext_index"] is False and got["has_title_index"] is True
    out = subprocess.run([sys.executable, "-m", "libzim", "get", str(path), "favicon.png"],
                         capture_output=True, **child_python())
    assert out.returncode == 0, out.stderr
    assert out.stdout == local.small.items["favicon.png"][2]
    chk = subprocess.run([sys.executable, "-m", "libzim", "check", str(local.corrupt["bad_checksum"])],
                         capture_output=True, **child_python())
    assert chk.returncode != 0


# -- corrupt archives: one known defect each, walked in a subprocess ---------


def test_corruptions_change_only_their_target(local):
    """A guard on the corrupter itself: each corrupt file is the small one
    edited (same length, but the truncated one), its checksum rewritten but
    where the checksum itself or its position is the defect."""
    small = local.small.path.read_bytes()
    csum = L.header(small)["checksumPos"]
    for name, path in local.corrupt.items():
        data = path.read_bytes()
        if name == "smaller_than_header":
            assert data == small[:40]
            continue
        assert len(data) == len(small)
        diff = [i for i in range(csum) if data[i] != small[i]]
        # rewritten over the edit, or flipped; left as it was where its position is the defect
        assert (data[csum:] == small[csum:]) is (name == "invalid_checksumpos"), name
        assert bool(diff) is (name != "bad_checksum"), name


def test_every_suite_defect_kind_has_a_local_case():
    from test_corrupt import EXPECTED

    assert set(EXPECTED["nons"]) <= set(L.CORRUPTIONS)


@pytest.mark.parametrize("defect", sorted(L.CORRUPTIONS))
def test_corrupt_archive(local, defect):
    path = local.corrupt[defect]
    _, outcome, check_name = L.CORRUPTIONS[defect]
    result = walk(path)

    assert_clear_errors(result, path)

    if outcome == L.OPEN_FAILS:
        assert result["opened"] is False, f"{path.name} opened"
        (err,) = result["errors"]
        assert err["type"] == "ArchiveError", err
        return
    assert result["opened"] is True, result["errors"]
    assert result["validate"] == per_libzim(
        libzim8=L.expected_validate(defect, 8), libzim9=L.expected_validate(defect, 9)), result
    # check() is the checksum alone: only the edited checksum fails it.
    assert result["check"] is (check_name != "checksum"), result
    data = path.read_bytes()
    assert result["all_entry_count"] == L.header(data)["entryCount"]
    failed = L.touched(defect, data) if outcome == L.CONTENT_FAILS else 0
    assert failed > 0 or outcome == L.VALIDATE
    assert result["content_failures"] == failed, result["errors"]
