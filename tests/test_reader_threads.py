"""The reader from many threads: same results, the GIL released, close() racing reads."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import libzim
from libzim.reader import Archive

from gilprobe import DELAY_US, assert_releases_gil, held_fractions
import local_archives
from conftest import SUITE, WIKIBOOKS, gil_only, read_every_entry, suite_data

# Built from this repository (local_archives.py): small, multi-cluster, split.
LOCAL = local_archives.local()
LOCAL_MULTI = LOCAL.multi.path
FILE_SETS = {
    "local": [LOCAL.small.path, LOCAL_MULTI, LOCAL.split],
    "suite": [SUITE / s / n for s in ("nons", "withns") for n in ("small.zim", WIKIBOOKS)],
}


def single_threaded(files) -> dict:
    """Single-threaded read of every entry of every file."""
    out = {}
    for path in files:
        with Archive(path) as a:
            out[path] = read_every_entry(a)
        assert len(out[path]) >= 15
    return out


@pytest.fixture(scope="module", params=["local", pytest.param("suite", marks=suite_data)])
def reference(request):
    return single_threaded(FILE_SETS[request.param])


@pytest.fixture(scope="module")
def local_reference():
    return single_threaded([LOCAL_MULTI])


def test_threads_with_own_archives(reference):
    FILES = list(reference)
    def work(_):
        res = {}
        for path in FILES:
            with Archive(path) as a:
                res[path] = read_every_entry(a)
        return res

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for res in results:
        assert res == reference


def test_threads_share_one_archive(reference):
    FILES = list(reference)
    archives = {p: Archive(p) for p in FILES}
    try:
        def work(k):
            res = {}
            for path in FILES[k % 2:] + FILES[: k % 2]:
                res[path] = read_every_entry(archives[path])
            return res

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, range(4)))
        for res in results:
            assert res == reference
    finally:
        for a in archives.values():
            a.close()


@pytest.mark.parametrize("method", ["iter_by_path", "iter_by_title", "iter_efficient"])
def test_threads_share_one_iterator(method):
    with Archive(LOCAL_MULTI) as a:
        want = sorted(e._index for e in getattr(a, method)())
        assert len(want) >= 60
        it = getattr(a, method)()
        barrier = threading.Barrier(4)

        def work(_):
            barrier.wait()
            return [e._index for e in it]

        with ThreadPoolExecutor(4) as pool:
            parts = list(pool.map(work, range(4)))
    got = sorted(i for part in parts for i in part)
    assert got == want  # every entry exactly once


# ---- GIL progress ----------------------------------------------------------------


@gil_only
def test_gil_released_while_opening(big_zim):
    """Opening takes under a millisecond here; the shim's test delay stretches
    it to 200 ms, through which another thread must run."""
    assert_releases_gil("open", lambda _: Archive(big_zim))


@gil_only
def test_gil_released_during_check(big_zim):
    a = Archive(big_zim)
    assert a.filesize > 10_000_000
    assert_releases_gil("check", lambda _: a.check() or pytest.fail("check() is false"))
    a.close()


@gil_only
def test_gil_released_reading_large_content(big_zim):
    # A fresh archive each time, or libzim's cluster cache answers at once and
    # the archive's read cost falls below the adaptive threshold.
    def read(item):
        assert len(item.content) >= 8_000_000

    assert_releases_gil(
        "content", read, setup=lambda: Archive(big_zim).get_entry_by_path("big.txt").get_item()
    )


def test_shared_archive_lends_copies_to_concurrent_lookups(local_reference):
    reference = local_reference
    """While one lookup runs without the GIL, others on the same Archive run on
    native copies of it (libzim serialises lookups inside one): same entries,
    items read through the copy that found them, copies never past the cap."""
    from libzim import _libzim

    path = LOCAL_MULTI
    a = Archive(path)
    user = {e.path for e in a.iter_by_path()}
    recs = [r for r in reference[path] if not r[3] and r[1] in user]  # r[3]: is_redirect
    # Slow lookups release the GIL (the average crosses the threshold), so
    # several threads are inside native lookups at once.
    previous = _libzim._test_delay(2_000)
    try:
        def work(k):
            import hashlib
            got = []
            for rec in recs[k::3] + recs[: 12]:
                e = a.get_entry_by_path(rec[1])
                item = e.get_item()
                got.append((rec[1], e.title, e._index, item.mimetype,
                            hashlib.sha256(item.content).hexdigest()))
            return got

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, range(4)))
    finally:
        _libzim._test_delay(previous)
    want = {r[1]: (r[1], r[2], r[0], r[4], r[5]) for r in recs}
    for got in results:
        for row in got:
            assert row == want[row[0]]
    assert 1 <= a._spares <= max(1, (os.cpu_count() or 1) - 1), a._spares
    a.close()
    assert a._spares == 0
    with pytest.raises(libzim.ClosedError):
        a.get_entry_by_path(recs[0][1])


def _descriptors_of(path) -> set[int]:
    target = os.path.realpath(path)
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.path.realpath(f"/proc/self/fd/{name}") == target:
                found.add(int(name))
        except OSError:  # closed meanwhile (listdir's own descriptor)
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to find descriptors")
def test_archive_copies_read_through_open_file_descriptions_of_their_own():
    """A copy shares no open file description with the archive (a dup() would):
    the kernel serialises seeks on a shared one and moves its reference count
    between cores on every read.  Positions set on each descriptor stay apart."""
    from libzim import _libzim

    path = LOCAL_MULTI
    before = _descriptors_of(path)
    a = Archive(path)
    paths = [e.path for e in a.iter_by_path()]
    previous = _libzim._test_delay(2_000)
    try:
        for _attempt in range(20):  # until two lookups overlap
            with ThreadPoolExecutor(3) as pool:
                list(pool.map(lambda k: [a.get_entry_by_path(p) for p in paths[k::3]], range(3)))
            if a._spares:
                break
    finally:
        _libzim._test_delay(previous)
    assert a._spares >= 1, "no lookups overlapped in 20 attempts"
    fds = sorted(_descriptors_of(path) - before)
    assert len(fds) >= 1 + a._spares, (fds, a._spares)
    for k, fd in enumerate(fds):
        os.lseek(fd, 1000 + k, os.SEEK_SET)
    assert [os.lseek(fd, 0, os.SEEK_CUR) for fd in fds] == [1000 + k for k in range(len(fds))]
    a.close()


def test_threads_keep_to_their_own_copy_of_a_shared_archive():
    """Two threads looking up on one Archive settle on one native handle each
    (an entry's item is read through the handle that found it, without a
    lease, so handles traded between threads met in libzim's lock).  Both
    pause between lookups, so each often finds the other's handle idle."""
    from libzim import _libzim

    path = LOCAL_MULTI
    a = Archive(path)
    paths = [e.path for e in a.iter_by_path()][:40]
    start = threading.Barrier(2)

    def work(pause):
        start.wait()
        fds = []
        for p in paths:
            fds.append(a.get_entry_by_path(p)._fd)
            time.sleep(pause)
        return fds

    previous = _libzim._test_delay(1_000)  # lookups overlap, without the GIL
    try:
        with ThreadPoolExecutor(2) as pool:
            got = list(pool.map(work, (0.002, 0.0035)))
    finally:
        _libzim._test_delay(previous)
    assert a._spares >= 1
    settled = [fds[10:] for fds in got]  # the first lookups find who holds what
    assert [len(set(s)) for s in settled] == [1, 1], got
    assert settled[0][0] != settled[1][0], got
    a.close()


# ---- close() racing readers ------------------------------------------------------


def test_close_while_other_threads_read(local_reference):
    reference = local_reference
    path = LOCAL_MULTI
    want = {r[1]: r for r in reference[path]}
    user = [r for r in reference[path] if r[1] in {e.path for e in Archive(path).iter_by_path()}]
    a = Archive(path)
    stop = threading.Event()
    errors: list[str] = []
    counts = {"ok": 0, "closed": 0}
    lock = threading.Lock()

    def hammer(k):
        import hashlib
        i = k
        while not stop.is_set():
            rec = user[i % len(user)]
            i += 7
            try:
                e = a.get_entry_by_path(rec[1])
                assert e.title == rec[2] and e._index == rec[0]
                if not e.is_redirect:
                    item = e.get_item()
                    assert item.mimetype == rec[4]
                    assert hashlib.sha256(item.content).hexdigest() == rec[5]
                e2 = a._get_entry_by_id(rec[0])
                assert e2.path == rec[1]
                assert a.has_entry_by_title(rec[2]) in (True, False)
                with lock:
                    counts["ok"] += 1
            except libzim.ClosedError:
                with lock:
                    counts["closed"] += 1
            except BaseException as exc:  # wrong result or wrong error type
                errors.append(f"{type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    a.close()
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    assert not errors, errors[:5]
    assert counts["ok"] > 0 and counts["closed"] > 0, counts
    assert want  # reference was non-empty


@gil_only
def test_lookups_release_the_gil_once_they_turn_slow():
    """Cached lookups keep the GIL (handing it over around a microsecond call
    costs the caller a switch interval when another thread runs Python); once
    native lookups turn slow (the shim's test delay stands in for a cold disk)
    the archive's running average crosses the threshold and the GIL is released.
    Both halves are seen: the first slow lookup still holds the GIL, later ones
    release it."""
    from libzim import _libzim

    a = Archive(LOCAL_MULTI)
    paths = [e.path for e in a.iter_by_path()]
    for _ in range(50):  # warm: the average falls below the threshold
        for p in paths[:20]:
            a.get_entry_by_path(p)
    previous = _libzim._test_delay(DELAY_US)
    try:
        fractions = held_fractions(lambda _: a.get_entry_by_path(paths[0]), calls=4)
    finally:
        _libzim._test_delay(previous)
    print(f"\nGIL probe [lookups turning slow]: longest stall / call: {fractions}")
    assert fractions[0] > 0.5, "a cached lookup released the GIL"
    assert min(fractions[1:]) < 0.5, "slow lookups kept the GIL"


