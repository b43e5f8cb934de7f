"""The library search's worker side: what runs in each Dask worker process
for ``libzim.dask.Library`` (libzim/dask/library.py is the client side).

A worker opens the archives of its shard on first use and keeps them and
their Searchers in this module's cache across queries, a bounded one (least
recently used out first: ``LIBZIM_DASK_LIBRARY_ARCHIVES``, default an eighth of
the process's open-file limit, 128 at ``ulimit -n 1024``: an archive with
its searcher and suggestion searcher holds 4 descriptors), so a shard of any
size fits the limit; an archive evicted while a query searches it stays open
until that query lets go of it (its last reference). Both paths of a
query use them: the resident _ShardServer actor (called by the client
directly) and the task functions (_shard_task, _snippet_task, _drop_task,
sent through the scheduler).  Each archive is searched in this module's
thread pool (the searches release the GIL), and only a shard's best
``count`` hits go back (_shard_answer, ordered by _merge_key, which the
client's merge uses too).  Dask workers resolve these functions and the
actor class by this module's path, libzim.dask.library_worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from typing import Any, Optional

import distributed  # libzim.dask (imported first) says what to install without it

import libzim
from libzim import _pickle
from libzim._cache import LRUCache, open_file_limit
from libzim.dask._common import _classify
from libzim.reader import check_untrusted
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher


# Module state of each worker process: the archives it opened and their
# searchers, kept across queries.

_lock = threading.Lock()


def _open_bound() -> int:
    env = int(os.environ.get("LIBZIM_DASK_LIBRARY_ARCHIVES", 0) or 0)
    return env if env > 0 else max(8, open_file_limit() // 8)


def _forget(entry: list[Any]) -> None:
    """An evicted archive: out of the unpickling cache too, so it closes when the queries
    using it let go (its searchers keep their own handle until then)."""
    _pickle.drop_cached(entry[2])


# path -> [archive, {kind: searcher}, path]
_searchers: LRUCache[str, list[Any]] = LRUCache(_open_bound(), _forget, "archives")
_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None


def _thread_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            n = int(os.environ.get("LIBZIM_DASK_THREADS", 0)) or (os.cpu_count() or 2)
            _pool = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="libzim-dask")
        return _pool


_checked: set[tuple[str, Any]] = set()  # (path, size and mtime) checked in a child process


def _searcher_for(kind: str, path: str, untrusted: bool) -> Any:
    if untrusted:
        # Once per file version and worker process: a crash inside libzim or
        # Xapian then kills a throwaway child, not the worker and its shard.
        key = (path, _pickle._stamp(path))
        if key not in _checked:
            check_untrusted(path)
            with _lock:
                _checked.add(key)
    archive = _pickle.open_cached(path)  # a stat per call; reopens a replaced file
    entry = _searchers.peek(path)
    if entry is None or entry[0] is not archive:  # new, or its file was replaced
        _searchers.discard(path)
        entry = _searchers.get(path, lambda: [archive, {}, path])
    else:
        _searchers.get(path, lambda: [archive, {}, path])  # most recently used now
    with _lock:
        made = entry[1].get(kind)
    if made is None:
        made = Searcher(archive) if kind == "search" else SuggestionSearcher(archive)
        with _lock:
            made = entry[1].setdefault(kind, made)
    return made


def _one_archive(kind: str, path: str, query: Any, count: int, snippets: int,
                 untrusted: bool) -> dict[str, Any]:
    """Top hits of one archive; with snippets > 0, only the first `snippets`
    hits, with their snippets."""
    try:
        if kind == "suggest":
            search = _searcher_for(kind, path, untrusted).suggest(query)
            rows = [(r.path, r.title, 0, r.snippet) for r in search.get_results(0, count)]
        else:
            search = _searcher_for(kind, path, untrusted).search(query)
            want = snippets or count
            rows = [(r.path, r.title, r.score, r.snippet)
                    for r in search.get_results(0, want, include_snippets=bool(snippets))]
        estimate = search.get_estimated_matches() if not snippets else 0
        return {"archive": path, "rows": rows, "estimate": estimate}
    except libzim.ZimError as exc:
        return {"archive": path, "failure": _classify(path, exc)}


def _worker_address() -> str:
    try:
        return distributed.get_worker().address
    except ValueError:  # not on a worker (tests calling the task directly)
        return ""


def _shard_task(kind: str, paths: list[str], query: Any, count: int,
                order: dict[str, int], untrusted: bool, _delay: float = 0.0) -> dict[str, Any]:
    """One worker's part of a query: its archives in parallel, only its best
    `count` hits sent back."""
    if _delay:
        import time
        time.sleep(_delay)  # tests: a window in which to kill the worker
    outs = list(_thread_pool().map(lambda p: _one_archive(kind, p, query, count, 0, untrusted),
                                   paths))
    return _shard_answer(kind, outs, count, order)


def _shard_answer(kind: str, outs: list[dict[str, Any]], count: int,
                  order: dict[str, int]) -> dict[str, Any]:
    hits = [(o["archive"], rank, row) for o in outs if "rows" in o
            for rank, row in enumerate(o["rows"])]
    hits.sort(key=lambda h: _merge_key(kind, h, order))
    return {
        "hits": hits[:count],
        "answered": [o["archive"] for o in outs if "rows" in o],
        "estimate": sum(o.get("estimate", 0) for o in outs),
        "failures": [o["failure"] for o in outs if "failure" in o],
        "worker": _worker_address(),
    }


def _snippet_task(wanted: list[tuple[str, int]], query: Any, untrusted: bool) -> dict[str, Any]:
    outs = list(_thread_pool().map(
        lambda pn: _one_archive("search", pn[0], query, pn[1], pn[1], untrusted), wanted))
    return {o["archive"]: o for o in outs}


def _drop_task(paths: list[str]) -> int:
    for p in paths:
        _searchers.discard(p)
    return sum(_pickle.drop_cached(p) for p in paths)


_delaying = 0  # actor calls that entered their test delay (tests poll it)


class _ShardServer:
    """Resident on one worker (a Dask actor): the client calls it directly,
    client to worker, without the scheduler.  It holds no archives itself: they
    stay in this process's module caches above, shared with the task path.

    Its methods are coroutines, so Dask runs them on the worker's event loop
    (not its one-thread actor executor, which would serialize queries); each
    archive is searched in this module's thread pool, with the GIL released."""

    def __init__(self, untrusted: bool) -> None:
        self.untrusted = untrusted

    async def search(self, kind: str, paths: list[str], query: Any, count: int,
                     order: dict[str, int], delay: float = 0.0) -> dict[str, Any]:
        if delay:  # tests: a window in which to kill or stop the worker
            global _delaying
            _delaying += 1
            await asyncio.sleep(delay)
        outs = await _in_pool([(kind, p, query, count, 0, self.untrusted) for p in paths])
        return _shard_answer(kind, outs, count, order)

    async def snippets(self, wanted: list[tuple[str, int]], query: Any) -> dict[str, Any]:
        outs = await _in_pool([("search", p, query, n, n, self.untrusted) for p, n in wanted])
        return {o["archive"]: o for o in outs}


async def _in_pool(calls: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """_one_archive(*call) for each call, in the thread pool: one job per
    pool thread (each a slice of the archives), not one per archive, which
    would cost a hop through the event loop per archive.  Never a job that
    waits for other jobs of the pool: many concurrent queries would fill it
    with waiters."""
    pool = _thread_pool()
    n = min(len(calls), pool._max_workers) or 1
    loop = asyncio.get_running_loop()
    parts = await asyncio.gather(*(loop.run_in_executor(
        pool, lambda part=calls[i::n]: [_one_archive(*c) for c in part])  # type: ignore[misc]
        for i in range(n)))
    # Slices i::n back into the calls' order.
    out: list[dict[str, Any]] = [{}] * len(calls)
    for i, part in enumerate(parts):
        out[i::n] = part
    return out


def _merge_key(kind: str, hit: tuple[str, int, tuple[Any, ...]], order: dict[str, int]) -> tuple[int, ...]:
    archive, rank, row = hit
    if kind == "suggest":  # no scores: interleave the archives' rankings
        return (rank, order[archive])
    return (-row[2], order[archive], rank)
