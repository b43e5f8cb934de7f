"""A small thread-safe LRU cache of things that hold files (archives, searchers), with
leases: an entry evicted while a thread uses it is closed when that use ends.

``zim serve`` keeps a bounded number of archives, searchers and suggestion
searchers open (each archive costs two file descriptors, a searcher or a
suggestion searcher one more), so a library of 10,000 books fits any
``RLIMIT_NOFILE``. A request must finish on the archive it started on, so an
evicted entry is only closed once nobody holds it:

- :meth:`LRUCache.get` inside ``with lease_scope():`` leases the entry until the
  scope ends (every job of the server's worker pool runs in one scope); outside
  a scope it leases nothing (the value may be closed by a later eviction: a
  closed Archive raises ``ClosedError``, never wrong data).
- Eviction takes the least recently used entry out of the map at once (a later
  ``get`` opens a fresh one) and calls ``close(value)`` when its last lease ends.

So the files open are at most ``capacity`` entries plus those leased by the
jobs running (bounded by the pool's threads). Two threads missing the same key
open it once: the second waits for the first's open (its failure too).
"""

from __future__ import annotations

import resource
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Callable, Generic, Hashable, Iterator, TypeVar

__all__ = ["LRUCache", "lease_scope", "open_file_limit"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_local = threading.local()


def open_file_limit() -> int:
    """The soft RLIMIT_NOFILE (1,048,576 when unlimited): what cache sizes derive from."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 20 if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


class _Entry(Generic[V]):
    __slots__ = ("value", "leases", "evicted", "closed", "weight")

    def __init__(self, value: V, weight: int) -> None:
        self.value = value
        self.leases = 0
        self.evicted = False
        self.closed = False
        self.weight = weight


class _Opening:
    """A key being opened by one thread; the others wait on ``done``."""

    __slots__ = ("done", "entry", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.entry: _Entry[object] | None = None
        self.error: BaseException | None = None


@contextmanager
def lease_scope() -> Iterator[None]:
    """Every entry a :meth:`LRUCache.get` returns in this thread until the block ends is
    leased until then (nested scopes release their own)."""
    stack: list[list[tuple[LRUCache[object, object], _Entry[object]]]] = getattr(_local, "stack", None) or []
    _local.stack = stack
    mine: list[tuple[LRUCache[object, object], _Entry[object]]] = []
    stack.append(mine)
    try:
        yield
    finally:
        stack.pop()
        for cache, entry in reversed(mine):
            cache._release(entry)


def _scope() -> list[tuple[LRUCache[object, object], _Entry[object]]] | None:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class LRUCache(Generic[K, V]):
    """At most ``capacity`` (in weight: one per entry unless ``get`` says otherwise)
    values by key, least recently used evicted first; ``close(value)`` when an evicted
    value's last lease ends (or at once if it has none). ``name`` is for messages.
    Counters (``opened``, ``hits``, ``evicted``, ``closed``) are for tests and benchmarks."""

    def __init__(self, capacity: int, close: Callable[[V], None] | None = None, name: str = "cache") -> None:
        self.capacity = max(1, int(capacity))
        self.name = name
        self._close = close
        self._map: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._opening: dict[K, _Opening] = {}
        self._weight = 0
        self._lock = threading.Lock()
        self.opened = self.hits = self.evicted = self.closed = 0

    def get(self, key: K, opener: Callable[[], V], weight: int = 1) -> V:
        """The value of ``key``, made by ``opener()`` on a miss (outside the lock; what it
        raises is raised here, to every thread waiting for the same key, and nothing is
        kept). Leased in the current :func:`lease_scope`, if any."""
        while True:
            with self._lock:
                entry = self._map.get(key)
                if entry is not None:
                    self._map.move_to_end(key)
                    self.hits += 1
                    return self._lease(entry)
                opening = self._opening.get(key)
                if opening is None:
                    opening = self._opening[key] = _Opening()
                    mine = True
                else:
                    mine = False
            if not mine:
                opening.done.wait()
                if opening.error is not None:
                    raise opening.error
                continue  # it is in the map now (or evicted already: then open again)
            try:
                value = opener()
            except BaseException as e:
                with self._lock:
                    del self._opening[key]
                opening.error = e
                opening.done.set()
                raise
            entry = _Entry(value, max(1, weight))
            with self._lock:
                del self._opening[key]
                self.opened += 1
                self._map[key] = entry
                self._weight += entry.weight
                got = self._lease(entry)
                victims = self._shrink()
            opening.done.set()
            self._close_all(victims)
            return got

    def _lease(self, entry: _Entry[V]) -> V:
        scope = _scope()
        if scope is not None:
            entry.leases += 1
            scope.append((self, entry))  # type: ignore[arg-type]
        return entry.value

    def _shrink(self) -> list[_Entry[V]]:
        """Under the lock: evict the oldest entries until the weight fits (the newest
        always stays); those without leases are returned, to be closed."""
        victims = []
        while self._weight > self.capacity and len(self._map) > 1:
            _, old = self._map.popitem(last=False)
            victims.extend(self._evict(old))
        return victims

    def _evict(self, entry: _Entry[V]) -> list[_Entry[V]]:
        entry.evicted = True
        self._weight -= entry.weight
        self.evicted += 1
        if entry.leases == 0 and not entry.closed:
            entry.closed = True
            return [entry]
        return []

    def _release(self, entry: _Entry[V]) -> None:
        with self._lock:
            entry.leases -= 1
            close = entry.evicted and entry.leases == 0 and not entry.closed
            if close:
                entry.closed = True
        if close:
            self._close_all([entry])

    def _close_all(self, entries: list[_Entry[V]]) -> None:
        for entry in entries:
            with self._lock:
                self.closed += 1
            if self._close is not None:
                try:
                    self._close(entry.value)
                except Exception:  # noqa: BLE001 - closing must not fail the request that evicted it
                    pass

    def discard(self, key: K) -> None:
        """Evict ``key`` now (closed when its last lease ends)."""
        with self._lock:
            entry = self._map.pop(key, None)
            victims = self._evict(entry) if entry is not None else []
        self._close_all(victims)

    def discard_if(self, predicate: Callable[[K], bool]) -> None:
        """Evict every key for which ``predicate(key)`` is true."""
        with self._lock:
            keys = [k for k in self._map if predicate(k)]
            victims = [v for k in keys for v in self._evict(self._map.pop(k))]
        self._close_all(victims)

    def peek(self, key: K) -> V | None:
        """The value of ``key`` if it is cached (not leased, not made recent), else None."""
        with self._lock:
            entry = self._map.get(key)
            return entry.value if entry is not None else None

    def clear(self) -> None:
        """Evict everything (each value closed when its last lease ends)."""
        self.discard_if(lambda _k: True)

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._map)

    @property
    def weight(self) -> int:
        """The weight of the entries cached (at most ``capacity`` but for one over-heavy entry)."""
        return self._weight

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, key: object) -> bool:
        return key in self._map
