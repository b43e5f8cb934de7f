"""Pickling: every type round-trips, in this process and through fork, spawn
and a ProcessPoolExecutor, reopening archives through the per-process cache.

Expected values come from the original objects (read before pickling) or from
the search fixtures' tables, never from the unpickled side alone.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
import pickle
import shutil
import threading
from pathlib import Path

import pytest

import libzim
from libzim import _pickle
from libzim.reader import Archive
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

from search_fixtures import *  # noqa: F401,F403
from search_fixtures import MARKERS_A, PAGES_A, SUITE, pages_with

import local_archives
from conftest import suite_data

# The local archives (built from this repository) and the shared suite's two schemes.
LOCAL = local_archives.local()
SMALL = LOCAL.small.path
SCHEMES = ("local", pytest.param("nons", marks=suite_data), pytest.param("withns", marks=suite_data))


def small_of(which: str) -> Path:
    return SMALL if which == "local" else SUITE / which / "small.zim"


def embedded_of(which: str) -> Path:
    return LOCAL.embedded if which == "local" else SUITE / which / "small.zim.embedded"


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


def rows(results):
    return [(r.path, r.title, r.score, r.word_count, r.snippet, str(r.archive.filename))
            for r in results]


def sugg_rows(results):
    return [(r.path, r.title, r.snippet) for r in results]


@pytest.fixture(autouse=True)
def fresh_cache():
    _pickle.drop_cached()
    yield
    _pickle.drop_cached()


# ---- Archive ---------------------------------------------------------------

@pytest.mark.parametrize("which", SCHEMES)
def test_archive_roundtrip_reopens_same_file(which):
    path = small_of(which)
    with Archive(path) as a:
        b = roundtrip(a)
        assert b is not a
        assert b.filename == Path(os.path.abspath(path))
        assert (b.uuid, b.checksum, b.all_entry_count) == (a.uuid, a.checksum, a.all_entry_count)
        assert b == a


def test_archive_relative_path_pickles_absolute(monkeypatch):
    monkeypatch.chdir(LOCAL.dir)
    a = Archive("small.zim")
    data = pickle.dumps(a)
    monkeypatch.chdir("/")
    b = pickle.loads(data)
    assert b.filename.is_absolute() and b.filename.samefile(SMALL)
    assert b.uuid == a.uuid


def test_repeated_unpickling_opens_once():
    a = Archive(SMALL)
    data = pickle.dumps(a)
    first = pickle.loads(data)
    assert all(pickle.loads(data) is first for _ in range(50))
    assert _pickle.cached_count() == 1


def test_close_of_cached_archive_then_reopen():
    data = pickle.dumps(Archive(SMALL))
    first = pickle.loads(data)
    first.close()
    second = pickle.loads(data)
    assert second is not first and not second.closed and first.closed
    assert second.get_entry_by_path("main.html").title == "Test ZIM file"


def test_concurrent_unpickling_shares_one_archive():
    data = pickle.dumps(Archive(LOCAL.multi.path))
    got: list = []
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        got.append(pickle.loads(data))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(x) for x in got}) == 1
    assert _pickle.cached_count() == 1


@pytest.mark.parametrize("which", SCHEMES)
def test_embedded_archive_keeps_offset_and_size(which):
    small = small_of(which)
    size = small.stat().st_size
    emb = Archive(embedded_of(which), offset=8, size=size)
    b = roundtrip(emb)
    assert b._range == (8, size)
    assert b.uuid == Archive(small).uuid
    # The plain file and the embedded copy are different cache entries.
    assert roundtrip(Archive(small)) is not b


def test_split_archive_roundtrip():
    a = Archive(LOCAL.split)
    b = roundtrip(a)
    assert b.is_multipart and b.uuid == a.uuid and b is roundtrip(a)


def test_missing_file_on_receiving_side(tmp_path):
    copy = tmp_path / "gone.zim"
    shutil.copy(SMALL, copy)
    data = pickle.dumps(Archive(copy))
    copy.unlink()
    with pytest.raises(libzim.ArchiveError) as exc:
        pickle.loads(data)
    assert isinstance(exc.value, libzim.ZimError)
    msg = str(exc.value)
    assert msg.startswith(str(copy)) and "no such file" in msg and "\n" not in msg


def test_replaced_file_reopened_and_old_pickles_refused(tmp_path, zim_a_path, zim_b_path):
    path = tmp_path / "lib.zim"
    shutil.copy(zim_a_path, path)
    a = Archive(path)
    first = roundtrip(a)
    data_archive = pickle.dumps(a)
    data_entry = pickle.dumps(a.get_entry_by_path(PAGES_A[0].path))
    # Replace the file with another archive (different size, newer mtime).
    shutil.copy(zim_b_path, path)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    b_uuid = Archive(zim_b_path).uuid
    for data in (data_archive, data_entry):
        with pytest.raises(libzim.ArchiveError) as exc:
            pickle.loads(data)
        msg = str(exc.value)
        assert msg.startswith(str(path)) and "not the archive that was pickled" in msg
        assert str(b_uuid) in msg and str(a.uuid) in msg
    # The new file's own pickles open it anew (size and mtime changed).
    second = roundtrip(Archive(path))
    assert second is not first and second.uuid == b_uuid


def test_closed_archive_pickles_unchecked():
    a = Archive(SMALL)
    uuid = a.uuid
    a.close()
    b = roundtrip(a)
    assert not b.closed and b.uuid == uuid


def test_archive_pickle_is_small():
    path = SMALL
    assert len(pickle.dumps(Archive(path))) < len(str(path)) + 120


# ---- Entry, Item -------------------------------------------------------------

@pytest.mark.parametrize("which", SCHEMES)
def test_every_entry_and_item_roundtrips(which):
    a = Archive(small_of(which))
    for i in range(a.all_entry_count):
        e = a._get_entry_by_id(i)
        e2 = roundtrip(e)
        assert (e2._index, e2.path, e2.title, e2.is_redirect) == (i, e.path, e.title, e.is_redirect)
        item = e.get_item()
        data = pickle.dumps(item)
        assert len(data) < len(str(a.filename)) + len(item.path) + 200  # no content
        item2 = pickle.loads(data)
        assert (item2.path, item2.title, item2.mimetype, item2._index) == (
            item.path, item.title, item.mimetype, item._index)
        assert hashlib.sha256(item2.content).digest() == hashlib.sha256(item.content).digest()


# ---- search --------------------------------------------------------------------

def test_query_roundtrip_keeps_georange(zim_a):
    q = Query("chronicle").set_georange(48.8566, 2.3522, 2000.0)
    q2 = roundtrip(q)
    assert q2.query == "chronicle" and q2._georange == q._georange
    assert q._georange is not None
    s = Searcher(zim_a)
    assert rows(s.search(q2).get_results(0, 50)) == rows(s.search(q).get_results(0, 50))
    assert roundtrip(Query("plain"))._georange is None


def test_searcher_search_and_results_roundtrip(zim_a, zim_b):
    s = Searcher([zim_a, zim_b])
    search = s.search("plonkvar")
    want = rows(search.get_results(0, 20))
    assert {r[0] for r in want} == pages_with(PAGES_A, "plonkvar") | {
        f"nature{i:02d}.html" for i in (0, 4)} | {"shared.html"}
    s2 = roundtrip(s)
    assert [x.filename for x in s2.archives] == [zim_a.filename, zim_b.filename]
    assert rows(s2.search("plonkvar").get_results(0, 20)) == want
    search2 = roundtrip(search)
    assert search2.get_estimated_matches() == search.get_estimated_matches()
    assert rows(search2.get_results(0, 20)) == want


def test_search_result_and_set_roundtrip(zim_a, zim_b):
    results = Searcher([zim_a, zim_b]).search("gleepnar").get_results(0, 20)
    assert {r.path for r in results} == {PAGES_A[i].path for i in MARKERS_A["gleepnar"]}
    results2 = roundtrip(results)
    assert type(results2) is type(results) and rows(results2) == rows(results)
    for r in results:
        r2 = roundtrip(r)
        assert rows([r2]) == rows([r])
        assert r2.get_entry().path == r.get_entry().path == r.path
    fast = Searcher(zim_a).search("gleepnar").get_results(0, 5, include_snippets=False)
    assert rows(roundtrip(fast)) == rows(fast)


def test_result_set_pickle_shares_archive(zim_a):
    results = Searcher(zim_a).search("frobnitz").get_results(0, 15, include_snippets=False)
    one = len(pickle.dumps(results[0]))
    # The archive is written once for the whole set.
    assert len(pickle.dumps(results)) < one * len(results)
    assert len({id(r.archive) for r in roundtrip(results)}) == 1


def test_suggestions_roundtrip(zim_a):
    ss = SuggestionSearcher(zim_a)
    sugg = ss.suggest("chronicle")
    want = sugg_rows(sugg.get_results(0, 40))
    assert {r[0] for r in want} == {p.path for p in PAGES_A if "chronicle" in p.title.lower()}
    assert sugg_rows(roundtrip(ss).suggest("chronicle").get_results(0, 40)) == want
    assert sugg_rows(roundtrip(sugg).get_results(0, 40)) == want
    res = sugg.get_results(0, 40)
    assert sugg_rows(roundtrip(res)) == want
    r2 = roundtrip(res[0])
    assert sugg_rows([r2]) == want[:1] and r2.get_entry().path == want[0][0]


def test_iterator_does_not_pickle():
    a = Archive(SMALL)
    with pytest.raises(TypeError):
        pickle.dumps(a.iter_by_path())


# ---- across processes ------------------------------------------------------------

def child_work(payload):
    """Runs in another process: use every unpickled object, report plain values
    and send some objects back."""
    archive, entry, item, searcher, search, query, result, results, sugg, srs = payload
    out = {
        "pid": os.getpid(),
        "archive": (str(archive.filename), archive.uuid.hex, archive.all_entry_count),
        "entry": (entry.path, entry.title, entry._index),
        "item": hashlib.sha256(item.content).hexdigest(),
        "searcher": rows(searcher.search(query).get_results(0, 30)),
        "search": rows(search.get_results(0, 30)),
        "result_entry": result.get_entry().path,
        "results": rows(results),
        "sugg": sugg_rows(sugg.suggest("chronicle").get_results(0, 40)),
        "srs": sugg_rows(srs),
        # Every archive above came from the same file: one open handle.
        "same_archive": archive is result.archive is searcher.archives[0] is results[0].archive,
        "cached": _pickle.cached_count(),
        "back": (result, entry),
    }
    return out


def make_payload(zim_a):
    searcher = Searcher(zim_a)
    query = Query("frobnitz")
    results = searcher.search(query).get_results(0, 30)
    entry = zim_a.get_entry_by_path(PAGES_A[3].path)
    sugg = SuggestionSearcher(zim_a)
    payload = (zim_a, entry, entry.get_item(), searcher, searcher.search("gleepnar"), query,
               results[0], results, sugg, sugg.suggest("chronicle").get_results(0, 40))
    expected = {
        "archive": (str(zim_a.filename), zim_a.uuid.hex, zim_a.all_entry_count),
        "entry": (entry.path, entry.title, entry._index),
        "item": hashlib.sha256(entry.get_item().content).hexdigest(),
        "searcher": rows(results),
        "search": rows(searcher.search("gleepnar").get_results(0, 30)),
        "result_entry": results[0].path,
        "results": rows(results),
        "sugg": sugg_rows(sugg.suggest("chronicle").get_results(0, 40)),
        "srs": sugg_rows(sugg.suggest("chronicle").get_results(0, 40)),
        "same_archive": True,
        "cached": 1,
    }
    assert {r[0] for r in expected["searcher"]} == pages_with(PAGES_A, "frobnitz")
    return payload, expected


def check_child(out, expected, zim_a):
    assert out["pid"] != os.getpid()
    back_result, back_entry = out.pop("back")
    out.pop("pid")
    assert out == expected
    assert back_result.path == expected["result_entry"]
    assert back_result.get_entry().path == back_result.path
    assert back_entry.path == expected["entry"][0]
    assert back_result.archive.uuid == zim_a.uuid


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_pool(zim_a, method):
    payload, expected = make_payload(zim_a)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        outs = pool.map(child_work, [payload] * 4)
    for out in outs:
        check_child(out, expected, zim_a)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_pool_executor(zim_a, method):
    payload, expected = make_payload(zim_a)
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        outs = list(ex.map(child_work, [payload] * 4))
    for out in outs:
        check_child(out, expected, zim_a)


def test_missing_file_in_child_is_a_zim_error(tmp_path):
    copy = tmp_path / "vanishing.zim"
    shutil.copy(SMALL, copy)
    a = Archive(copy)
    data = pickle.dumps(a)
    copy.unlink()
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        fut = ex.submit(pickle.loads, data)
        with pytest.raises(libzim.ArchiveError) as exc:
            fut.result()
    assert str(copy) in str(exc.value)
