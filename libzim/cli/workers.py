"""Running calls from many threads: throughput, latency, and the values each call returned."""

from __future__ import annotations

import math
import statistics
import threading
import time
from typing import Any, Callable, Sequence


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (nearest rank) of already sorted values; NaN for none."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class Stats:
    """One run: wall-clock time and latencies, and the CPU time its threads used.

    Wall-clock figures depend on what else the machine runs; CPU time per call
    (time.thread_time of each worker, which counts the calls' native work, GIL
    released or not) does not, so it still compares runs on a busy machine.
    """

    def __init__(self, latencies: list[float], wall: float, threads: int, cpu: float = float("nan")) -> None:
        self.count = len(latencies)
        self.wall = wall
        self.threads = threads
        self.cpu = cpu  # seconds, all worker threads
        lat = sorted(latencies)
        self.p50 = statistics.median(lat) if lat else float("nan")
        self.p95 = percentile(lat, 95)
        self.per_second = self.count / wall if wall > 0 else float("inf")
        self.cpu_per_call = cpu / self.count if self.count else float("nan")
        self.cores_used = cpu / wall if wall > 0 else float("nan")  # CPU time over wall time

    def as_dict(self) -> dict[str, Any]:
        """The run's figures as a dict for --json (counts, seconds, searches/s, p50/p95 ms, CPU)."""
        return {
            "threads": self.threads,
            "searches": self.count,
            "seconds": round(self.wall, 6),
            "searches_per_second": round(self.per_second, 3),
            "p50_ms": round(self.p50 * 1000, 3),
            "p95_ms": round(self.p95 * 1000, 3),
            "cpu_seconds": round(self.cpu, 6),
            "cpu_ms_per_search": round(self.cpu_per_call * 1000, 3),
        }

    def line(self) -> str:
        """The run's figures as one line of text for a terminal."""
        return (
            f"{self.count} searches in {self.wall:.3f} s on {self.threads} thread"
            f"{'s' if self.threads != 1 else ''}: {self.per_second:,.1f} searches/s, "
            f"latency p50 {self.p50 * 1000:.2f} ms, p95 {self.p95 * 1000:.2f} ms, "
            f"CPU {self.cpu_per_call * 1000:.2f} ms per search"
        )


def hammer(
    fn: Callable[[int], Any],
    n_items: int,
    threads: int,
    *,
    count: int | None = None,
    duration: float | None = None,
) -> tuple[Stats, dict[int, set[Any]]]:
    """Call fn(i % n_items) from ``threads`` threads, ``count`` times in all or for ``duration`` s.

    Returns the timing and, per item, the set of distinct values fn returned
    (a correct, thread-safe binding returns one value per item).
    """
    assert (count is None) != (duration is None)
    lock = threading.Lock()
    stop = threading.Event()
    next_job = [0]
    latencies: list[float] = []
    seen: dict[int, set[Any]] = {}
    errors: list[BaseException] = []
    cpu = [0.0]
    start = time.perf_counter()
    deadline = start + duration if duration is not None else None

    def worker() -> None:
        cpu0 = time.thread_time()
        try:
            while not stop.is_set():
                with lock:
                    job = next_job[0]
                    if count is not None and job >= count:
                        return
                    next_job[0] += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                item = job % n_items
                t0 = time.perf_counter()
                value = fn(item)
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    seen.setdefault(item, set()).add(value)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)
            stop.set()
        finally:
            used = time.thread_time() - cpu0
            with lock:
                cpu[0] += used

    pool = [threading.Thread(target=worker, name=f"zim-search-{i}", daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    try:
        for t in pool:
            while t.is_alive():
                t.join(0.1)
    except KeyboardInterrupt:
        stop.set()
        raise
    wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    return Stats(latencies, wall, threads, cpu[0]), seen


def call_in_thread(fn: Callable[[], Any], tick: Callable[[float], None] | None = None) -> Any:
    """Run a long GIL-releasing call in a helper thread so Ctrl-C stays responsive."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
        finally:
            done.set()

    t0 = time.perf_counter()
    threading.Thread(target=run, name="zim-call", daemon=True).start()
    while not done.wait(0.1):
        if tick is not None:
            tick(time.perf_counter() - t0)
    if "error" in box:
        raise box["error"]
    return box["value"]


# Searches with snippets read many articles; python-libzim's default cluster
# cache of 16 MiB for the whole process (the library keeps it) is less than
# the demo archive's 51 MiB of decoded clusters, and CPU per snippet search
# there was 15.7 ms at 16 MiB against 5.8 ms at 64 MiB (README, "API").
THROUGHPUT_CLUSTER_CACHE_MIB = 64


def add_cluster_cache_option(p: Any) -> None:
    """--cluster-cache MIB for the commands that measure throughput."""
    p.add_argument(
        "--cluster-cache", type=int, default=THROUGHPUT_CLUSTER_CACHE_MIB, metavar="MIB",
        help=f"decoded-cluster cache for the process, MiB (default {THROUGHPUT_CLUSTER_CACHE_MIB}; "
             "the library's default is python-libzim's 16)",
    )


def apply_cluster_cache(mib: int) -> str:
    """Sets the process's cluster cache budget; the line that says so."""
    from libzim.reader import set_cluster_cache_max_size

    if mib < 0:
        from .errors import CLIError

        raise CLIError("--cluster-cache must be >= 0", 2)
    set_cluster_cache_max_size(mib << 20)
    return f"cluster cache: {mib} MiB for the process (--cluster-cache)"
