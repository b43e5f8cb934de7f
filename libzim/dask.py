"""Library-wide search and suggestions on Dask distributed; and whole
archives to a Dask DataFrame (``read_archives``, at the end of this module:
one row per HTML article with its text, for ``to_parquet``).

    from dask.distributed import Client
    from libzim.dask import Library
    hits = Library(paths, Client("scheduler:8786")).search("event loop", 10).hits

The archives are sharded across the workers (rendezvous hashing with a cap of
ceil(archives / workers) per worker, so a worker that leaves moves only its own
archives).  Each worker process opens its archives once, on first use, and
keeps them and their Searchers open across queries.  By default a query does
not go through the scheduler: each worker holds one actor per Library
(_ShardServer), which the client calls directly on its own connection to the
worker; the actor searches its archives from a thread pool (the searches
release the GIL) and returns only its best ``count`` hits, without snippets.
The client merges those, and when snippets are asked for, asks the workers for
the snippets of the hits that survived the merge only.  ``via="tasks"`` runs
the same search as one Dask task per worker instead (for batch jobs).

Scores are libzim's per-archive relevance percentages, which are not
comparable across archives (see README, "Library search on Dask"): the merge
orders by score, then by the archive's position in the library, then by rank
inside the archive.

With ``untrusted=True`` each worker first opens each file in a child process
(``libzim.reader.check_untrusted``), so an archive that crashes libzim or Xapian
is reported as corrupt instead of killing workers.

A failing archive (missing, corrupt, without a full-text index) is reported in
``LibraryResult.failures``.  A worker that is lost, or gives no answer within
``hang_timeout`` seconds (then skipped for ``quarantine`` seconds), has its
shard re-placed on the other workers and asked again in the same query; what
still has no answer goes the task path (Dask reschedules a lost worker's task
on another worker, and this module retries a failed shard once more, one task
per archive), and is reported ``worker-lost`` when that fails too.

Workers need libzim-c and Dask installed and the archives at the same paths,
and the client must reach the workers directly (as for direct_to_workers).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from concurrent.futures import CancelledError
import hashlib
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

try:
    import distributed
    from distributed import Client
    from distributed.protocol import to_serialize
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from libzim._extras import install_hint

    raise ImportError(f"libzim.dask needs Dask distributed, the dask extra: {install_hint('dask')}") from exc

import libzim
from libzim import _pickle
from libzim.reader import check_untrusted
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

__all__ = ["Library", "LibraryResult", "Hit", "Failure", "assign_shards", "read_archives"]


@dataclass(frozen=True)
class Hit:
    """One search hit or suggestion of a Library query (immutable).

    archive is the archive's path as given to Library; path and title the
    entry's; score libzim's relevance percentage within its own archive (0
    for suggestions), so not comparable across archives; snippet '' unless
    include_snippets; rank the hit's position in its own archive's results.
    """

    archive: str  # the archive's path, as given to Library
    path: str
    title: str
    score: int  # libzim's relevance percentage within its archive; 0 for suggestions
    snippet: str  # "" unless include_snippets
    rank: int  # position inside its own archive's results


@dataclass(frozen=True)
class Failure:
    """An archive that gave no answer to a Library query, and why (immutable).

    kind is "missing", "corrupt", "no-index", "worker-lost", "timeout" or
    "error"; message says more.  Failures are data: the other archives'
    hits are still returned.
    """

    archive: str
    kind: str  # "missing", "corrupt", "no-index", "worker-lost", "timeout" or "error"
    message: str


@dataclass
class LibraryResult:
    """What Library.search() and Library.suggest() return.

    hits: the best ``count`` Hits over every archive, merged by score, then
    the archive's position in the library, then rank.  failures: a Failure
    per archive that gave no answer.  estimated_matches: the sum of the
    archives' estimates.  searched: how many archives answered.  moved:
    archives answered by another worker than their shard's (a lost or hung
    worker's shard re-placed within the query).
    """

    hits: list[Hit]
    failures: list[Failure]
    estimated_matches: int  # sum of the archives' estimates
    searched: int  # archives that answered
    moved: list[str] = field(default_factory=list)  # archives answered off their shard's worker


# ---- worker side --------------------------------------------------------------
# Module state of each worker process: the archives it opened and their
# searchers, kept across queries.

_lock = threading.Lock()
_searchers: dict[tuple[str, str], tuple[Any, Any]] = {}  # (kind, path) -> (archive, searcher)
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
    with _lock:
        cached = _searchers.get((kind, path))
        if cached is not None and cached[0] is archive:
            return cached[1]
    made = Searcher(archive) if kind == "search" else SuggestionSearcher(archive)
    with _lock:
        _searchers[(kind, path)] = (archive, made)
    return made


def _classify(path: str, exc: BaseException) -> tuple[str, str, str]:
    if isinstance(exc, libzim.SearchError):
        kind = "no-index"
    elif isinstance(exc, libzim.ArchiveError):
        kind = "corrupt" if os.path.exists(path) or os.path.exists(path + "aa") else "missing"
    else:
        kind = "error"
    return (path, kind, f"{type(exc).__name__}: {exc}".splitlines()[0])


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
    with _lock:
        for kind in ("search", "suggest"):
            for p in paths:
                _searchers.pop((kind, p), None)
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
        pool, lambda part=calls[i::n]: [_one_archive(*c) for c in part]) for i in range(n)))
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


# ---- client side ------------------------------------------------------------------

def _weight(path: str, worker: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{worker}\0{path}".encode(), digest_size=8).digest(), "big")


def assign_shards(paths: Sequence[str], workers: Sequence[str]) -> dict[str, list[str]]:
    """Rendezvous hashing with bounded load: each archive goes to its
    highest-weight worker that still has room (ceil(n / workers) each)."""
    if not workers:
        raise RuntimeError("the Dask cluster has no workers")
    cap = math.ceil(len(paths) / len(workers))
    shards: dict[str, list[str]] = {w: [] for w in workers}
    for p in paths:
        for w in sorted(workers, key=lambda w: _weight(p, w), reverse=True):
            if len(shards[w]) < cap:
                shards[w].append(p)
                break
    return {w: ps for w, ps in shards.items() if ps}


async def _wait_all(pool: Any, calls: dict[str, tuple[Any, str, tuple[Any, ...]]],
                    timeout: float) -> dict[str, tuple[str, Any]]:
    """On the client's event loop (one hop from the caller's thread for the
    whole fan-out): every (actor, method, args) call at once, none waited for
    longer than `timeout`.  Per worker ("ok", answer), ("hung", message),
    ("lost", message) or ("error", message).

    The call is what Actor.method() sends (the worker's actor_execute
    handler), but on the client's own connection to the worker: an Actor
    handle sends it through the scheduler (a proxy hop per call) unless the
    client was made with direct_to_workers=True, which would also change how
    the caller's own gathers go."""
    async def one(w: str, actor: Any, method: str, args: tuple[Any, ...]) -> Any:
        reply = await pool(w).actor_execute(function=method, actor=actor.key,
                                            args=[_wire(a) for a in args], kwargs={})
        if reply["status"] != "OK":
            raise reply["exception"]
        return reply["result"]

    tasks = {w: asyncio.ensure_future(one(w, *call)) for w, call in calls.items()}
    if tasks:
        await asyncio.wait(tasks.values(), timeout=timeout)
    out: dict[str, tuple[str, Any]] = {}
    for w, t in tasks.items():
        if not t.done():
            t.cancel()
            out[w] = ("hung", f"worker {w} gave no answer within {timeout:g} s")
            continue
        exc = t.exception()
        if exc is None:
            out[w] = ("ok", t.result())
        else:
            out[w] = (_lost_or_error(exc), f"{type(exc).__name__}: {exc}".splitlines()[0])
    return out


def _wire(arg: Any) -> Any:
    """An actor call's argument as it goes on the wire: plain data as msgpack,
    in the message itself, which costs the client less CPU per call; anything
    else (a Query, a path msgpack cannot encode) pickled, as Actor handles
    send every argument."""
    if arg is None or isinstance(arg, (int, float)) or _plain_str(arg):
        return arg
    if isinstance(arg, list) and all(_plain_str(a) for a in arg):
        return arg
    if isinstance(arg, dict) and all(_plain_str(k) and type(v) is int for k, v in arg.items()):
        return arg
    return to_serialize(arg)


def _plain_str(s: Any) -> bool:
    if type(s) is not str:
        return False
    try:
        s.encode("utf-8")  # not a path with surrogate escapes
        return True
    except UnicodeEncodeError:
        return False


def _lost_or_error(exc: BaseException) -> str:
    # OSError covers distributed's CommClosedError and the actor's "Unable to
    # contact Actor's worker"; RuntimeError is "Worker holding Actor was lost".
    return "lost" if isinstance(exc, (OSError, RuntimeError, CancelledError)) else "error"


class Library:
    """A set of archives searched together on a Dask cluster."""

    def __init__(self, paths: Iterable[Union[str, "os.PathLike[str]"]], client: Client, *,
                 untrusted: bool = False, hang_timeout: float = 10.0,
                 quarantine: float = 60.0) -> None:
        self.paths = [os.path.abspath(os.fspath(p)) for p in paths]
        if len(set(self.paths)) != len(self.paths):
            raise ValueError("an archive appears twice in the library")
        self.client = client
        self._order = {p: i for i, p in enumerate(self.paths)}
        # Archives from untrusted sources: each worker checks each file in a
        # child process (libzim.reader.check_untrusted) before opening it.
        self.untrusted = untrusted
        # Resident path: a worker that does not answer within hang_timeout
        # seconds is skipped for `quarantine` seconds and its shard re-placed.
        self.hang_timeout = hang_timeout
        self.quarantine = quarantine
        self._lock = threading.Lock()
        self._actor_futures: dict[str, Any] = {}  # worker -> Future of its _ShardServer
        self._actors: dict[str, Any] = {}  # worker -> the Actor handle
        self._hung: dict[str, float] = {}  # worker -> time.monotonic() it is skipped until
        self._workers: tuple[float, list[str]] = (-math.inf, [])

    def shards(self) -> dict[str, list[str]]:
        """Worker address -> the archives it serves, for the current workers."""
        return assign_shards(self.paths, self._live_workers(fresh=True))

    def search(self, query: Union[str, Query], count: int = 10, *, include_snippets: bool = True,
               timeout: Optional[float] = None, via: str = "actors",
               _delay: float = 0.0) -> LibraryResult:
        """The best `count` hits over the library, merged by score.

        via="actors" (the default) calls the workers' resident searchers
        directly; via="tasks" sends one task per worker through the scheduler
        (for batch jobs: many queries submitted at once)."""
        result, owner = self._run(via, "search", query, count, timeout, _delay)
        if include_snippets and result.hits:
            self._add_snippets(via, result, query, owner)
        return result

    def suggest(self, text: str, count: int = 10, *, timeout: Optional[float] = None,
                via: str = "actors") -> LibraryResult:
        """Title suggestions over the library: the archives' rankings interleaved."""
        return self._run(via, "suggest", text, count, timeout, 0.0)[0]

    def close(self) -> None:
        """Let the workers forget (and so close) this library's archives."""
        with self._lock:
            futures = list(self._actor_futures.values())
            self._actor_futures.clear()
            self._actors.clear()
        for f in futures:
            f.release()
        self.client.run(_drop_task, self.paths)

    # ---- internals: common ----

    def _live_workers(self, fresh: bool = False) -> list[str]:
        """The scheduler's workers, less those found hung.  Asked of the
        scheduler at most once a second (and when a worker was found lost),
        not once per query."""
        now = time.monotonic()
        with self._lock:
            seen, workers = self._workers
            hung = {w for w, until in self._hung.items() if until > now}
        if fresh or now - seen > 1.0:
            # Not client.scheduler_info(): the client's periodic refresh
            # overwrites the dict it returns with one without workers, so
            # another thread can read an empty cluster from it.
            info = self.client.sync(self.client.scheduler.identity)  # every worker, by default
            workers = sorted(info["workers"])
            with self._lock:
                self._workers = (now, workers)
        live = [w for w in workers if w not in hung]
        # All of them found hung: ask them all again rather than nobody.
        return live or workers

    def _run(self, via: str, kind: str, query: Any, count: int, timeout: Optional[float],
             delay: float) -> tuple[LibraryResult, dict[str, str]]:
        if via not in ("actors", "tasks"):
            raise ValueError(f"via must be 'actors' or 'tasks', not {via!r}")
        if count <= 0:
            return LibraryResult([], [], 0, 0), {}
        home = {p: w for w, ps in assign_shards(self.paths, self._live_workers()).items() for p in ps}
        if via == "tasks":
            outs, failures = self._run_tasks(kind, self.paths, query, count, timeout, delay)
        else:
            outs, failures = self._run_actors(kind, home, query, count, timeout, delay)
        hits = sorted((h for o in outs for h in o["hits"]), key=lambda h: _merge_key(kind, h, self._order))
        failures += [Failure(*f) for o in outs for f in o["failures"]]
        owner = {p: o["worker"] for o in outs for p in o["answered"]}
        result = LibraryResult(
            hits=[Hit(a, row[0], row[1], row[2], row[3] if kind == "suggest" else "", rank)
                  for a, rank, row in hits[:count]],
            failures=sorted(failures, key=lambda f: self._order[f.archive]),
            estimated_matches=sum(o["estimate"] for o in outs),
            searched=len(owner),
            moved=sorted((p for p, w in owner.items() if home.get(p) not in (None, w)),
                         key=self._order.__getitem__),
        )
        return result, owner

    # ---- internals: the resident path (actors) ----

    def _actor(self, worker: str, wait: float) -> Any:
        """The worker's _ShardServer, created on first use (through the
        scheduler, once per worker and library)."""
        with self._lock:
            actor = self._actors.get(worker)
            if actor is not None:
                return actor
            fut = self._actor_futures.get(worker)
            if fut is None:
                fut = self.client.submit(_ShardServer, self.untrusted, actor=True, workers=[worker],
                                         allow_other_workers=False, pure=False)
                self._actor_futures[worker] = fut
        actor = fut.result(timeout=wait)
        with self._lock:
            if self._actor_futures.get(worker) is fut:
                self._actors[worker] = actor
        return actor

    def _forget(self, worker: str, hung: bool) -> None:
        with self._lock:
            fut = self._actor_futures.pop(worker, None)
            self._actors.pop(worker, None)
            if hung:
                self._hung[worker] = time.monotonic() + self.quarantine
            self._workers = (-math.inf, [])  # ask the scheduler again next time
        if fut is not None:
            fut.release()

    def _ask(self, method: str, jobs: dict[str, tuple[Any, ...]],
             wait: float) -> dict[str, tuple[str, Any]]:
        """Calls `method` on each worker's actor, all at once, and waits at
        most `wait` seconds for the answers."""
        out: dict[str, tuple[str, Any]] = {}
        calls = {}
        t0 = time.monotonic()
        with self._lock:  # create the missing actors all at once, not one after another
            for w in jobs:
                if w not in self._actors and w not in self._actor_futures:
                    self._actor_futures[w] = self.client.submit(
                        _ShardServer, self.untrusted, actor=True, workers=[w],
                        allow_other_workers=False, pure=False)
        for w, args in jobs.items():
            try:
                calls[w] = (self._actor(w, max(0.0, wait - (time.monotonic() - t0))), method, args)
            except (TimeoutError, asyncio.TimeoutError) as exc:
                out[w] = ("hung", f"worker {w}: no actor within {wait:g} s ({type(exc).__name__})")
            except Exception as exc:
                out[w] = (_lost_or_error(exc), f"{type(exc).__name__}: {exc}".splitlines()[0])
        left = max(0.0, wait - (time.monotonic() - t0))
        out.update(self.client.sync(_wait_all, self.client.rpc, calls, left))
        return out

    def _run_actors(self, kind: str, home: dict[str, str], query: Any, count: int,
                    timeout: Optional[float], delay: float,
                    ) -> tuple[list[dict[str, Any]], list[Failure]]:
        """Two rounds on the actors (the second re-places the shards of lost
        or hung workers on the others); what still has no answer goes the
        task path, which retries archive by archive."""
        deadline = None if timeout is None else time.monotonic() + timeout
        todo: dict[str, list[str]] = {}
        for p in self.paths:
            todo.setdefault(home[p], []).append(p)
        outs: list[dict[str, Any]] = []
        failures: list[Failure] = []
        skip: set[str] = set()
        rest: list[str] = []
        for attempt in (0, 1):
            left = math.inf if deadline is None else deadline - time.monotonic()
            wait = max(0.0, min(self.hang_timeout, left))
            caller_bound = left <= self.hang_timeout  # a timeout then is the caller's, not a hang
            jobs = {w: (kind, ps, query, count, {p: self._order[p] for p in ps},
                        delay if attempt == 0 else 0.0) for w, ps in todo.items()}
            retry: list[str] = []
            for w, (status, val) in self._ask("search", jobs, wait).items():
                if status == "ok":
                    val["worker"] = w
                    outs.append(val)
                elif status == "hung" and caller_bound:
                    failures += [Failure(p, "timeout", f"no answer within {timeout} s") for p in todo[w]]
                elif status == "error":
                    rest += todo[w]  # the task path classifies it archive by archive
                else:
                    self._forget(w, hung=status == "hung")
                    skip.add(w)
                    retry += todo[w]
            if not retry:
                break
            live = [w for w in self._live_workers() if w not in skip]
            if attempt == 1 or not live:
                rest += retry
                break
            todo = assign_shards(sorted(retry, key=self._order.__getitem__), live)
        if rest:
            # Bounded even without a caller's timeout: Dask may give these
            # tasks to a worker that is hung but still listed.
            left = (max(2 * self.hang_timeout, 30.0) if deadline is None
                    else max(0.0, deadline - time.monotonic()))
            more, fails = self._run_tasks(kind, sorted(rest, key=self._order.__getitem__),
                                          query, count, left, 0.0)
            outs += more
            failures += fails
        return outs, failures

    # ---- internals: the task path ----

    def _submit(self, kind: str, paths: list[str], query: Any, count: int,
                worker: Optional[str], delay: float) -> Any:
        order = {p: self._order[p] for p in paths}  # not the whole library's: O(shard) bytes
        # Loose restrictions: a lost worker's shard runs wherever Dask can.
        where: dict[str, Any] = {"workers": [worker], "allow_other_workers": True} if worker else {}
        return self.client.submit(
            _shard_task, kind, paths, query, count, order, self.untrusted, delay, pure=False, **where)

    def _run_tasks(self, kind: str, paths: list[str], query: Any, count: int,
                   timeout: Optional[float], delay: float,
                   ) -> tuple[list[dict[str, Any]], list[Failure]]:
        shards = assign_shards(paths, self._live_workers(fresh=True))
        futures = {self._submit(kind, ps, query, count, w, delay): (w, ps) for w, ps in shards.items()}
        outs, lost = self._collect(futures, timeout)
        # A shard whose task failed even after Dask's own rescheduling: once
        # more, one task per archive, anywhere, so that a crashing archive
        # takes no other archive down with it.  (Not after a timeout: that
        # would double the wait the caller bounded.)
        retry = {self._submit(kind, [p], query, count, None, 0.0): (w, [p])
                 for w, (why, _), ps in lost if why != "timeout" for p in ps}
        outs2, lost2 = self._collect(retry, timeout)
        outs += outs2
        failures = [Failure(p, why, msg) for _, (why, msg), ps in lost if why == "timeout"
                    for p in ps]
        failures += [Failure(p, why, msg) for _, (why, msg), ps in lost2 for p in ps]
        return outs, failures

    def _collect(self, futures: Mapping[Any, tuple[Optional[str], list[str]]], timeout: Optional[float],
                 ) -> tuple[list[dict[str, Any]], list[tuple[Optional[str], tuple[str, str], list[str]]]]:
        """Answers, and (assigned worker, (kind, message), archives) of the
        tasks that gave none."""
        if not futures:
            return [], []
        try:
            distributed.wait(list(futures), timeout=timeout)
        except TimeoutError:
            pass
        outs, lost = [], []
        for fut, (worker, paths) in futures.items():
            if fut.status == "finished":
                outs.append(fut.result())
            elif fut.status == "pending":
                fut.cancel()
                lost.append((worker, ("timeout", f"no answer within {timeout} s"), paths))
            else:
                try:
                    exc = fut.exception()
                except BaseException as e:  # cancelled futures raise here
                    exc = e
                why = "worker-lost" if isinstance(exc, (distributed.KilledWorker, CancelledError)) else "error"
                lost.append((worker, (why, f"{type(exc).__name__}: {exc}".splitlines()[0]), paths))
        return outs, lost

    # ---- internals: snippets ----

    def _add_snippets(self, via: str, result: LibraryResult, query: Any, owner: dict[str, str]) -> None:
        # Survivors of one archive are always the first n of its ranking (the
        # merge keeps each archive's order), so one page of n per archive,
        # asked of the worker that answered for the archive.
        need: dict[str, int] = {}
        for h in result.hits:
            need[h.archive] = max(need.get(h.archive, 0), h.rank + 1)
        by_worker: dict[str, list[tuple[str, int]]] = {}
        for p, n in need.items():
            by_worker.setdefault(owner[p], []).append((p, n))
        got: dict[str, dict[str, Any]] = {}
        if via == "actors":
            answers = self._ask("snippets", {w: (wanted, query) for w, wanted in by_worker.items()},
                                self.hang_timeout)
            for w, (status, val) in answers.items():
                if status == "ok":
                    got.update(val)
                    del by_worker[w]
                elif status in ("hung", "lost"):
                    self._forget(w, hung=status == "hung")
        # The task path, or what the actors could not answer: anywhere.
        futures = {self.client.submit(_snippet_task, wanted, query, self.untrusted, workers=[w],
                                      allow_other_workers=True, pure=False): wanted
                   for w, wanted in by_worker.items()}
        for fut, wanted in futures.items():
            try:
                got.update(fut.result(timeout=max(2 * self.hang_timeout, 30.0)))
            except Exception as exc:  # lost twice: these hits keep an empty snippet
                msg = f"snippets: {type(exc).__name__}: {exc}".splitlines()[0]
                result.failures += [Failure(p, "worker-lost", msg) for p, _ in wanted]
        hits = []
        for h in result.hits:
            o = got.get(h.archive)
            row = o["rows"][h.rank] if o and "rows" in o and h.rank < len(o["rows"]) else None
            if row is not None and row[0] == h.path:
                h = Hit(h.archive, h.path, h.title, h.score, row[3], h.rank)
            hits.append(h)
        result.hits = hits


# ---- archives to a Dask DataFrame (read_archives) -----------------------------------
# Needs dask.dataframe and pandas (imported on first use, so Library users need
# neither).  Planning runs on the client and opens each archive for its header
# (entry count, UUID) only; every partition is one range of one archive's
# entries in cluster order, read on a worker.

_FRAME_COLUMNS = ("archive", "name", "uuid", "path", "title", "mimetype", "size")
_TEXT_TYPES = ("text/html", "text/plain", "text/markdown", "text/x-markdown")
_ENTRY_KINDS = ("html", "text", "all")
_ERRORS = ("report", "raise")


@dataclass(frozen=True)
class _Part:
    """What one partition reads: positions [start, stop) of the archive's
    cluster order, or, when `failure` is set, nothing but that failure."""
    path: str
    uuid: str
    start: int
    stop: int
    failure: Optional[tuple[str, str, str]] = None


@dataclass(frozen=True)
class _Options:
    columns: tuple[str, ...]  # the frame's columns, "error" last
    entries: str
    main_only: bool
    max_chars: Optional[int]
    errors: str


def _frame_dtypes(columns: Sequence[str]) -> dict[str, Any]:
    import pandas as pd
    # Nullable pyarrow strings (what Dask converts object columns to anyway)
    # and a nullable size: a failure row has neither path nor size.
    return {c: (pd.Int64Dtype() if c == "size" else pd.StringDtype("pyarrow")) for c in columns}


def _frame(rows: list[tuple[Any, ...]], columns: Sequence[str]) -> Any:
    import pandas as pd
    dtypes = _frame_dtypes(columns)
    # Column by column into typed arrays: a third of the time of
    # DataFrame.from_records + astype.
    data = list(zip(*rows)) if rows else [()] * len(columns)
    return pd.DataFrame({c: pd.array(list(v), dtype=dtypes[c]) for c, v in zip(columns, data)})


# Per worker process: the last archives read, with their M/Name and cluster
# order, so the partitions of one archive that land on a worker open it and
# walk its dirents once.  Bounded: a library of thousands of archives must
# not keep them all open.
_ARCHIVE_SLOTS = int(os.environ.get("LIBZIM_DASK_OPEN_ARCHIVES", 8))
_opened: "dict[str, tuple[Any, Any, Optional[str], Any]]" = {}  # path -> (stamp, archive, name, order)
_opened_lock = threading.Lock()


def _opened_archive(path: str) -> tuple[Any, Optional[str], Any]:
    """(archive, M/Name or None, entry ids in cluster order) for this file,
    reopened when its size or mtime changed."""
    import array
    stamp = _pickle._stamp(path)  # raises ArchiveError for a missing file
    with _opened_lock:
        slot = _opened.pop(path, None)
        if slot is not None and slot[0] == stamp and not slot[1].closed:
            _opened[path] = slot  # most recently used last
            return slot[1], slot[2], slot[3]
    archive = libzim.reader.Archive(path)
    try:
        name: Optional[str] = archive.get_metadata("Name").decode("utf-8", "replace")
    except libzim.ZimError:  # EntryNotFoundError: no M/Name
        name = None
    # iter_efficient is libzim's order: redirects, then by cluster.  Kept as
    # entry ids (4 bytes each), so any range of it is read without walking it.
    order = array.array("I", (e._index for e in archive.iter_efficient()))
    with _opened_lock:
        _opened[path] = (stamp, archive, name, order)
        while len(_opened) > _ARCHIVE_SLOTS:
            del _opened[next(iter(_opened))]
    return archive, name, order


class _Replaced(libzim.ArchiveError):
    """The file at a planned path holds another archive now."""


def _error_text(kind: str, message: str) -> str:
    return f"{kind}: {message}"


def _failure_row(part: _Part, columns: Sequence[str], failure: tuple[str, str, str]) -> tuple[Any, ...]:
    values = {"archive": part.path, "uuid": part.uuid or None,
              "error": _error_text(failure[1], failure[2])}
    return tuple(values.get(c) for c in columns)


@functools.lru_cache(maxsize=256)  # an archive has a handful of MIME types
def _wanted(mimetype: str, entries: str) -> bool:
    base = mimetype.split(";", 1)[0].strip().lower()
    if entries == "html":
        return base == "text/html"
    if entries == "text":
        return base in _TEXT_TYPES
    return True


def _read_part(part: _Part, opts: _Options) -> Any:
    """One partition: a pandas DataFrame with a row per wanted entry of the
    part's range.  Runs on a worker."""
    columns = opts.columns
    if part.failure is not None:
        return _frame([_failure_row(part, columns, part.failure)], columns)
    try:
        archive, name, order = _opened_archive(part.path)
        if part.uuid and str(archive.uuid) != part.uuid:
            raise _Replaced(f"{part.path}: another archive (UUID {archive.uuid}) than "
                            f"at planning ({part.uuid})")
        rows = [row for i in order[part.start:part.stop]
                if (row := _read_entry(archive, i, part, name, opts)) is not None]
    except libzim.ZimError as exc:
        if opts.errors == "raise":
            raise
        failure = _classify(part.path, exc)
        if isinstance(exc, _Replaced):
            failure = (part.path, "replaced", failure[2])
        rows = [_failure_row(part, columns, failure)]
    return _frame(rows, columns)


def _read_entry(archive: Any, index: int, part: _Part, name: Optional[str],
                opts: _Options) -> Optional[tuple[Any, ...]]:
    """The row of entry `index`, or None when it is a redirect or not wanted.
    A failure to read this entry's content is this row's `error` (with
    errors='report'), not the partition's."""
    values: dict[str, Any] = {"archive": part.path, "name": name, "uuid": part.uuid}
    try:
        entry = archive._get_entry_by_id(index)
        if entry.is_redirect:
            return None
        values["path"], values["title"] = entry.path, entry.title
        item = entry.get_item()
        mimetype = item.mimetype
        if not _wanted(mimetype, opts.entries):
            return None
        values["mimetype"] = mimetype
        values["size"] = item.size
        if "text" in opts.columns and _wanted(mimetype, "text"):
            values["text"] = item.get_text(main_only=opts.main_only, max_chars=opts.max_chars)
        if "html" in opts.columns and _wanted(mimetype, "html"):
            values["html"] = bytes(item.content).decode("utf-8", "replace")
    except libzim.ZimError as exc:
        if opts.errors == "raise":
            raise
        values["error"] = _error_text(*_classify(part.path, exc)[1:])
    return tuple(values.get(c) for c in opts.columns)


def _plan(paths: Sequence[str], partition_size: int, errors: str,
          untrusted: bool) -> list[_Part]:
    """Partitions from the archives' headers: entry count and UUID (no
    content is read here).  With errors='report' an archive that does not
    open becomes one partition holding its failure row."""
    parts: list[_Part] = []
    for path in paths:
        try:
            if untrusted:
                check_untrusted(path)
            with libzim.reader.Archive(path) as archive:
                count, uuid = archive.entry_count, str(archive.uuid)
        except libzim.ZimError as exc:
            if errors == "raise":
                raise
            parts.append(_Part(path, "", 0, 0, _classify(path, exc)))
            continue
        parts += [_Part(path, uuid, start, min(start + partition_size, count))
                  for start in range(0, count, partition_size)]
    return parts


def read_archives(paths: Iterable[Union[str, "os.PathLike[str]"]], *,
                  columns: Optional[Sequence[str]] = None, text: bool = True,
                  html: bool = False, entries: str = "html", partition_size: int = 1000,
                  main_only: bool = True, max_chars: Optional[int] = None,
                  errors: str = "report", untrusted: bool = False) -> Any:
    """A Dask DataFrame with one row per HTML article of the archives (see
    README, "Archives to Parquet on Dask")::

        ddf = read_archives(glob.glob("/srv/zim/*.zim"))
        ddf.to_parquet("corpus/")          # on the current Dask client

    Columns: archive (the path as given), name (M/Name), uuid, path, title,
    mimetype, size (content bytes), text (``text=True``; ``Item.get_text``
    with ``main_only`` and ``max_chars``), html (``html=True``), and error
    (null unless this row reports a failure).  ``columns`` picks among the
    first seven.  ``entries``: "html" (text/html items; the default), "text"
    (also text/plain and markdown) or "all" (every item; text null for other
    types).  Redirects are never rows.

    Each partition is ``partition_size`` consecutive entries of one archive
    in cluster order (``Archive.iter_efficient``), so it decompresses its
    clusters once; it has at most that many rows.  Planning opens each
    archive on the client for its entry count and UUID only.

    ``errors="report"`` (the default): an archive that is missing or does
    not open, at planning or on the worker, is one row with ``archive``,
    ``uuid`` (when known) and ``error`` ("missing: ...", "corrupt: ...",
    "error: ..."), the other columns null; an entry whose content cannot be
    read is its row with ``error`` set and no text.  ``errors="raise"``
    raises instead (at planning, or in the partition, failing the job).
    ``untrusted=True`` opens each archive in a child process first
    (``check_untrusted``), so one that crashes libzim is reported, not fatal.
    """
    try:
        import dask.dataframe as dd
    except ImportError as exc:
        from libzim._extras import install_hint

        raise ImportError("libzim.dask.read_archives needs dask.dataframe, pandas and pyarrow, the dask extra: "
                          f"{install_hint('dask')}") from exc
    if entries not in _ENTRY_KINDS:
        raise ValueError(f"entries must be one of {_ENTRY_KINDS}, not {entries!r}")
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS}, not {errors!r}")
    if partition_size < 1:
        raise ValueError(f"partition_size must be at least 1, not {partition_size}")
    picked = list(_FRAME_COLUMNS if columns is None else columns)
    unknown = [c for c in picked if c not in (*_FRAME_COLUMNS, "text", "html")]
    if unknown or isinstance(columns, str):
        raise ValueError(f"unknown columns {unknown or [columns]}; known: {list(_FRAME_COLUMNS)}"
                         " (text and html: the text= and html= flags)")
    text = text or "text" in picked
    html = html or "html" in picked
    cols = tuple(c for c in _FRAME_COLUMNS if c in picked) + \
        (("text",) if text else ()) + (("html",) if html else ()) + ("error",)
    opts = _Options(cols, entries, main_only, max_chars, errors)
    parts = _plan([os.fspath(p) for p in paths], partition_size, errors, untrusted)
    meta = _frame([], cols)
    if not parts:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(_read_part, parts, opts=opts, meta=meta, label="read-zim",
                       enforce_metadata=False)
