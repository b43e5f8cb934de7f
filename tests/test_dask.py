"""Library-wide search on a real dask.distributed LocalCluster (2 worker
processes, started and stopped here).

Expected answers come from running the same query locally, archive by archive,
with the merge rule written out again here (score, then library order, then
rank), and the hit sets from library_fixtures' construction rules.
Dask is a test requirement (requirements-dev.txt): no skip when it is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

import libzim
from libzim import dask as libdask
from libzim.search import Searcher
from libzim.reader import check_untrusted
from libzim.suggestion import SuggestionSearcher
from libzim.version import get_versions

import local_archives
from library_fixtures import LIB_WORD, RARE_WORD, build_library, pages_with_word
from test_fuzz_regressions import local_xapian_crash

ARCHIVES, PAGES = 6, 12


@pytest.fixture(scope="module")
def lib_paths(tmp_path_factory) -> list[str]:
    return [str(p) for p in build_library(tmp_path_factory.mktemp("library"), ARCHIVES, PAGES)]


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                           dashboard_address=":0", silence_logs=50)
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def local_hits(paths, query, count, snippets=True):
    """The query run here, archive by archive, merged by (score desc, library
    position, rank)."""
    rows = []
    for i, p in enumerate(paths):
        results = Searcher(libzim.reader.Archive(p)).search(query).get_results(
            0, 1000, include_snippets=snippets)
        rows += [(-r.score, i, rank, p, r.path, r.title, r.score, r.snippet)
                 for rank, r in enumerate(results)]
    rows.sort()
    return [row[3:] for row in rows[:count]]


def as_rows(result):
    return [(h.archive, h.path, h.title, h.score, h.snippet) for h in result.hits]


def test_assign_shards_balanced_and_stable():
    for n in (40, 1000):
        paths = [f"/lib/a{i}.zim" for i in range(n)]
        three = libdask.assign_shards(paths, ["w1", "w2", "w3"])
        assert sorted(p for ps in three.values() for p in ps) == sorted(paths)
        assert max(map(len, three.values())) <= -(-n // 3)
        # w3 leaves: its archives move, and (almost) nothing else does.
        two = libdask.assign_shards(paths, ["w1", "w2"])
        assert set(three["w3"]) <= set(two["w1"]) | set(two["w2"])
        moved = sum(1 for w in ("w1", "w2") for p in three[w] if p not in two[w])
        assert moved <= n // 100


@pytest.mark.parametrize("via", ["actors", "tasks"])
@pytest.mark.parametrize("word", [LIB_WORD, RARE_WORD])
def test_library_search_equals_local(client, lib_paths, word, via):
    lib = libdask.Library(lib_paths, client)
    assert len(lib.shards()) == 2
    got = lib.search(word, 1000, via=via)
    want = local_hits(lib_paths, word, 1000)
    assert as_rows(got) == want
    assert got.failures == [] and got.searched == ARCHIVES
    by_archive = {p: {h.path for h in got.hits if h.archive == p} for p in lib_paths}
    assert by_archive == {p: pages_with_word(k, PAGES, word) for k, p in enumerate(lib_paths)}
    assert all(h.snippet for h in got.hits)
    assert got.estimated_matches == sum(len(v) for v in by_archive.values())


@pytest.mark.parametrize("via", ["actors", "tasks"])
def test_top_hits_and_snippets_only_for_survivors(client, lib_paths, monkeypatch, via):
    lib = libdask.Library(lib_paths, client)
    asked = []
    submit, ask = client.submit, lib._ask

    def spy(fn, *args, **kw):
        if fn is libdask._snippet_task:
            asked.extend(args[0])
        return submit(fn, *args, **kw)

    def spy_ask(method, jobs, wait):
        if method == "snippets":
            asked.extend(p for wanted, _ in jobs.values() for p in wanted)
        return ask(method, jobs, wait)

    monkeypatch.setattr(client, "submit", spy)
    monkeypatch.setattr(lib, "_ask", spy_ask)
    got = lib.search(LIB_WORD, 7, via=via)
    assert as_rows(got) == local_hits(lib_paths, LIB_WORD, 7)
    # One page per archive holding survivors, as long as its last survivor's rank.
    survivors = {}
    for h in got.hits:
        survivors[h.archive] = max(survivors.get(h.archive, 0), h.rank + 1)
    assert sorted(asked) == sorted(survivors.items())
    assert sum(n for _, n in asked) == 7
    asked.clear()
    fast = lib.search(LIB_WORD, 7, include_snippets=False, via=via)
    assert asked == []
    assert [r[:4] for r in as_rows(fast)] == [r[:4] for r in local_hits(lib_paths, LIB_WORD, 7, False)]
    assert all(h.snippet == "" for h in fast.hits)


def local_suggestions(paths, text, count):
    """Each archive's suggestions, interleaved by (rank, library position)."""
    rows = []
    for i, p in enumerate(paths):
        res = SuggestionSearcher(libzim.reader.Archive(p)).suggest(text).get_results(0, count)
        rows += [(rank, i, p, r.path, r.title, 0, r.snippet) for rank, r in enumerate(res)]
    rows.sort()
    return [r[2:] for r in rows[:count]]


@pytest.mark.parametrize("via", ["actors", "tasks"])
def test_library_suggest_equals_local(client, lib_paths, via):
    lib = libdask.Library(lib_paths, client)
    got = lib.suggest("ledger", 20, via=via)
    assert as_rows(got) == local_suggestions(lib_paths, "ledger", 20)
    assert {h.path for h in got.hits} >= {f"lib{k}/page000.html" for k in range(ARCHIVES)}


def test_untrusted_library_reports_a_crashing_archive(client, lib_paths, tmp_path):
    """The Xapian crash reproducer in a library opened with untrusted=True:
    reported as corrupt, and no worker dies."""
    crash = local_xapian_crash(tmp_path / "crash.zim")
    try:
        check_untrusted(crash)
        crashes = False
    except libzim.ArchiveError:
        crashes = True
    if get_versions()["libxapian"] == "1.4.22":
        assert crashes, "the reproducer no longer crashes this Xapian: the test proves nothing"
    pids = client.run(os.getpid)
    paths = [*lib_paths[:2], str(crash), *lib_paths[2:]]
    got = libdask.Library(paths, client, untrusted=True).suggest("ledger", 20)
    assert client.run(os.getpid) == pids
    assert as_rows(got) == local_suggestions(lib_paths, "ledger", 20)
    if crashes:
        assert [(f.archive, f.kind) for f in got.failures] == [(str(crash), "corrupt")]
        assert "unsafe to open" in got.failures[0].message


def test_failures_reported_not_fatal(client, lib_paths, tmp_path):
    corrupt = tmp_path / "corrupt.zim"
    shutil.copy(local_archives.local().corrupt["smaller_than_header"], corrupt)
    missing = tmp_path / "missing.zim"
    noindex = local_archives.local().small.path  # no full-text index
    paths = [str(corrupt), *lib_paths[:3], str(missing), str(noindex), *lib_paths[3:]]
    got = libdask.Library(paths, client).search(RARE_WORD, 1000)
    assert as_rows(got) == local_hits(lib_paths, RARE_WORD, 1000)
    assert [(f.archive, f.kind) for f in got.failures] == [
        (str(corrupt), "corrupt"), (str(missing), "missing"), (str(noindex), "no-index")]
    for f in got.failures:
        assert f.archive in f.message and "\n" not in f.message
    assert got.searched == ARCHIVES


def delaying(client, worker):
    return client.run(lambda: libdask._delaying, workers=[worker])[worker]


@pytest.mark.parametrize("via", ["actors", "tasks"])
def test_worker_killed_during_query(client, lib_paths, via):
    lib = libdask.Library(lib_paths, client)
    want = local_hits(lib_paths, LIB_WORD, 1000)
    before = lib.shards()
    victim = sorted(before)[0]
    pids = client.run(os.getpid)
    entered = delaying(client, victim)
    box = {}
    t = threading.Thread(target=lambda: box.update(r=lib.search(LIB_WORD, 1000, via=via, _delay=3.0)))
    t.start()

    def reached():
        if via == "tasks":
            return bool(client.processing().get(victim))
        return delaying(client, victim) > entered

    deadline = time.monotonic() + 30
    while not reached() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reached(), "the query never reached the victim worker"
    os.kill(pids[victim], signal.SIGKILL)
    t.join(60)
    assert not t.is_alive()
    got = box["r"]
    assert as_rows(got) == want and got.failures == [] and got.searched == ARCHIVES
    assert set(got.moved) == set(before[victim])
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests


def test_core_imports_without_dask(tmp_path):
    """Dask is an optional extra: libzim imports without it, libzim.dask says
    what to install."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['dask'] = sys.modules['distributed'] = None\n"
        "import libzim, libzim.reader, libzim.search, pickle\n"
        "print(libzim.__file__)\n"
        "assert 'distributed' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n    import libzim.dask\nexcept ImportError as e:\n    print(e)\n"
    )
    # The child imports the libzim under test, from wherever this process did:
    # an installed package, or a checkout's in-place build, which only the
    # conftest's sys.path finds (the child runs elsewhere and has no conftest).
    package_parent = str(Path(libzim.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package_parent, *filter(None, [os.environ.get("PYTHONPATH")])]))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.splitlines()[0]).resolve() == Path(libzim.__file__).resolve(), out.stdout
    root = Path(libzim.__file__).resolve().parents[1]
    # From a clone the hint names the clone; an installed copy the extra's packages (issue 39:
    # libzim-c is on no index), either way with this interpreter's pip.
    if (root / "pyproject.toml").exists():
        assert f"-m pip install -e '{root}[dask]'" in out.stdout, out.stdout
    else:
        assert "-m pip install " in out.stdout and "libzim-c[" not in out.stdout, out.stdout
        # (installed metadata writes the extra's extras sorted: dask[dataframe,distributed])
        assert re.search(r"'dask\[(distributed,dataframe|dataframe,distributed)\]'", out.stdout), out.stdout
        assert "'pyarrow>=16'" in out.stdout, out.stdout


def test_timeout_reports_every_unanswered_archive(client, lib_paths):
    lib = libdask.Library(lib_paths, client)
    t0 = time.monotonic()
    got = lib.search(LIB_WORD, 10, timeout=0.5, _delay=2.0)
    assert time.monotonic() - t0 < 2.0  # did not wait for the slow tasks
    assert got.hits == [] and got.searched == 0
    assert sorted((f.archive, f.kind) for f in got.failures) == sorted(
        (p, "timeout") for p in lib_paths)
    # The cluster still answers in full afterwards.
    assert as_rows(lib.search(LIB_WORD, 1000)) == local_hits(lib_paths, LIB_WORD, 1000)


def test_failing_task_retried_per_archive_then_reported(client, lib_paths, monkeypatch):
    """A task that fails outright (here: a query the searcher rejects with a
    TypeError, not a ZimError) is retried as one task per archive, each
    reported, and the call still returns."""
    lib = libdask.Library(lib_paths, client)
    submitted = []
    submit = client.submit

    def spy(fn, *args, **kw):
        if fn is libdask._shard_task:
            submitted.append(tuple(args[1]))
        return submit(fn, *args, **kw)

    monkeypatch.setattr(client, "submit", spy)
    got = lib.search(12345, 10)  # type: ignore[arg-type]
    assert got.hits == [] and got.searched == 0
    assert [(f.archive, f.kind) for f in got.failures] == [(p, "error") for p in lib_paths]
    assert all("TypeError" in f.message for f in got.failures)
    shards = [s for s in submitted if len(s) > 1]
    assert sorted(p for s in shards for p in s) == sorted(lib_paths)
    assert sorted(s for s in submitted if len(s) == 1) == sorted((p,) for p in lib_paths)


def test_hung_worker_is_timed_out_and_its_shard_moved(client, lib_paths):
    """A worker that stops answering (SIGSTOP: alive, not dead) costs one
    hang_timeout; its shard is answered by the other worker, and later
    queries skip it (quarantine) instead of waiting again."""
    lib = libdask.Library(lib_paths, client, hang_timeout=4.0)
    want = local_hits(lib_paths, LIB_WORD, 1000)
    assert as_rows(lib.search(LIB_WORD, 1000)) == want  # the actors exist now
    before = lib.shards()
    victim = sorted(before)[0]
    pid = client.run(os.getpid)[victim]
    os.kill(pid, signal.SIGSTOP)
    try:
        box = {}
        t = threading.Thread(target=lambda: box.update(
            r=lib.search(LIB_WORD, 1000), s=lib.search(LIB_WORD, 1000)))
        t.start()
        t.join(60)
        assert not t.is_alive()
    finally:
        os.kill(pid, signal.SIGCONT)
    for got in (box["r"], box["s"]):
        assert as_rows(got) == want and got.failures == [] and got.searched == ARCHIVES
    assert set(box["r"].moved) == set(before[victim])
    # The second query was placed without the victim from the start.
    assert box["s"].moved == [] and victim not in lib.shards()
    client.wait_for_workers(2, timeout=60)


def test_concurrent_client_threads_get_the_single_threaded_answers(client, lib_paths):
    lib = libdask.Library(lib_paths, client)
    calls = [("search", LIB_WORD, 7), ("search", RARE_WORD, 1000), ("suggest", "ledger", 20),
             ("search", LIB_WORD, 1000), ("suggest", "page", 5)]

    def run(call):
        kind, text, count = call
        r = lib.search(text, count) if kind == "search" else lib.suggest(text, count)
        assert r.failures == []
        return as_rows(r)

    want = [run(c) for c in calls]
    assert want[1] == local_hits(lib_paths, RARE_WORD, 1000)
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(run, calls * 8, timeout=120))
    assert got == want * 8


def _count_proxy_calls(dask_scheduler):
    """On the scheduler: count calls of its 'proxy' handler (the way an Actor
    handle reaches a worker when the client is not direct_to_workers)."""
    handler = dask_scheduler.handlers["proxy"]
    if not hasattr(dask_scheduler, "libzim_proxied"):
        dask_scheduler.libzim_proxied = 0

        async def counting(*args, **kw):
            dask_scheduler.libzim_proxied += 1
            return await handler(*args, **kw)

        dask_scheduler.handlers["proxy"] = counting
    return dask_scheduler.libzim_proxied


def test_resident_queries_bypass_the_scheduler(client, lib_paths, monkeypatch):
    """Once the actors exist: no task submitted and nothing proxied by the
    scheduler per query (it is asked only for the worker list, at most once
    a second)."""
    lib = libdask.Library(lib_paths, client)
    lib.search(LIB_WORD, 10)
    before = client.run_on_scheduler(_count_proxy_calls)

    def no_tasks(*args, **kw):
        raise AssertionError("a query submitted a task")

    monkeypatch.setattr(client, "submit", no_tasks)
    for _ in range(5):
        got = lib.search(LIB_WORD, 10)
        assert as_rows(got) == local_hits(lib_paths, LIB_WORD, 10) and got.failures == []
        assert lib.suggest("ledger", 5).failures == []
    assert client.run_on_scheduler(_count_proxy_calls) == before


@pytest.mark.parametrize("via", ["actors", "tasks"])
def test_query_object_and_unicode_query(client, lib_paths, via):
    """A Query object goes pickled (text goes as msgpack): the local answer."""
    from libzim.search import Query
    lib = libdask.Library(lib_paths, client)
    got = lib.search(Query().set_query(RARE_WORD), 1000, via=via)
    assert as_rows(got) == local_hits(lib_paths, RARE_WORD, 1000) and got.failures == []
    # A lone surrogate: msgpack cannot send it (so it goes pickled) and the
    # searcher rejects it, locally too: every archive reported, no exception.
    got = lib.search(f"{LIB_WORD} \udcff", 10, via=via)
    assert got.hits == [] and [(f.archive, f.kind) for f in got.failures] == [(p, "error") for p in lib_paths]
    assert all("UnicodeEncodeError" in f.message for f in got.failures)


def test_worker_keeps_a_bounded_number_of_archives_open(tmp_path, monkeypatch):
    # A worker's shard of 60 archives through a cache of 6: every archive answers
    # as it does with a cache that holds them all, and at most 6 stay open (those
    # evicted close: no .zim descriptor of theirs is left).
    import library_books
    from libzim import _pickle
    from libzim._cache import LRUCache
    from libzim.dask import library_worker as lw

    lib = library_books.build(60, 10, tmp_path / "many")
    paths = sorted(str(p) for p in lib.parent.glob("book*.zim"))
    order = {p: i for i, p in enumerate(paths)}

    def run() -> list:
        out = []
        for p in paths:
            word = library_books.base_word(order[p] % 10)
            ans = lw._shard_task("search", [p], word, 5, order, False)
            out.append((ans["estimate"], [h[2][0] for h in ans["hits"]], ans["failures"]))
        return out

    def zim_fds() -> int:
        n = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                n += os.readlink(f"/proc/self/fd/{fd}").startswith(str(lib.parent))
            except OSError:
                pass
        return n

    monkeypatch.setattr(lw, "_searchers", LRUCache(1000, lw._forget, "archives"))
    everything = run()
    assert all(e[0] == 40 and len(e[1]) == 5 and not e[2] for e in everything)
    lw._searchers.clear()
    _pickle.drop_cached()
    monkeypatch.setattr(lw, "_searchers", LRUCache(6, lw._forget, "archives"))
    assert run() == everything
    assert len(lw._searchers) == 6 and lw._searchers.evicted == 54
    import gc
    gc.collect()
    assert zim_fds() <= 6 * 3  # each: its file, a native copy, Xapian's
    lw._searchers.clear()
    _pickle.drop_cached()
