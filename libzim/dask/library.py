"""The library search's client side: ``libzim.dask.Library`` and what its
queries return (libzim/dask/library_worker.py is what runs on the workers).

The client places the archives on the workers (assign_shards), fans a query
out to their resident searchers (or, ``via="tasks"``, to one task per
worker), merges the answers, asks for the snippets of the hits that survived
the merge, and handles the faults: a lost or hung worker's shard is
re-placed within the query, what still has no answer goes the task path.
The package's docstring (libzim/dask/__init__.py) tells the whole design.
"""

from __future__ import annotations

import asyncio
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
    from distributed.protocol import to_serialize  # type: ignore[attr-defined]  # exported, not in __all__
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    # (_exc, not exc: stubtest reads this module as its own stub, where a public
    # exc would be a module variable that is missing at run time.)
    from libzim._extras import install_hint

    raise ImportError(f"libzim.dask needs Dask distributed, the dask extra: {install_hint('dask')}") from _exc

from libzim.dask.library_worker import _ShardServer, _drop_task, _merge_key, _shard_task, _snippet_task
from libzim.search import Query

__all__ = ["Library", "LibraryResult", "Hit", "Failure", "assign_shards"]



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
    return to_serialize(arg)  # type: ignore[no-untyped-call]


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
            # Every worker, by default.  (Dask's client is partly untyped.)
            info = self.client.sync(self.client.scheduler.identity)  # type: ignore[no-untyped-call,union-attr]
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
        out.update(self.client.sync(_wait_all, self.client.rpc, calls, left))  # type: ignore[no-untyped-call]
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
            distributed.wait(list(futures), timeout=timeout)  # type: ignore[no-untyped-call]
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
