#!/usr/bin/env python3
"""Library search on Dask against one local multi-archive Searcher.

    python3 bench/dask_library.py             # 8 archives, 5 s per configuration
    python3 bench/dask_library.py --quick     # 4 archives, 3 s

The library is N copies of the python3.11-doc archive, each given its own
UUID (built by tools/corpus.py; copies cached in bench/.cache/library).  Queries: bench/queries/python3.11-doc.txt,
10 hits each; two workloads: without snippets, and with.

Configurations, side by side:
  local-searcher   one Searcher over all archives (libzim merges in one Xapian
                   query over the combined databases), 1 and 2 client threads
  local-merge      what libzim.dask does, in this process: each archive
                   searched on a 2-thread pool, per-archive top hits merged
  dask-1 / dask-2  libzim.dask.Library on a LocalCluster of 1 or 2 worker
                   processes (1 task thread each), 1 and 4 client threads

Also measured, for the README's sizing: per-archive open time (Archive +
Searcher + first query), PSS per open archive with its Searcher after the
queries ran, and the round-trip of an empty Dask task per worker.

Writes bench/results/dask.md and dask.json.  The machine is shared: numbers
are noisy; compare columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import concurrent.futures
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from corpus import ensure_debian_doc_zim  # noqa: E402

CACHE = HERE / ".cache" / "library"
RESULTS = HERE / "results"
WORKLOAD = {False: "no snippets", True: "snippets"}


def queries() -> list[str]:
    lines = (HERE / "queries" / "python3.11-doc.txt").read_text().splitlines()
    return [q for q in lines if q.strip() and not q.startswith("#")]


def make_library(n: int) -> list[str]:
    """n copies of the python3.11-doc archive, each with its own UUID: libzim
    searches archives with equal UUIDs once, which would flatter the local
    multi-archive Searcher.  (The header checksum no longer matches; nothing
    here calls check().)"""
    src = ensure_debian_doc_zim("python3.11-doc")
    CACHE.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = CACHE / f"pydoc-{i:03d}.zim"
        if not p.exists():
            tmp = p.with_suffix(".tmp")
            shutil.copyfile(src, tmp)
            with open(tmp, "r+b") as f:
                f.seek(8)  # the UUID field of the ZIM header
                f.write(hashlib.md5(p.name.encode()).digest())
            os.replace(tmp, p)
        paths.append(str(p))
    return paths


def run_for(seconds: float, threads: int, one) -> dict:
    """Call one(i) from `threads` threads for `seconds` (thread t calls it with
    i = t, t + threads, ...); ops/s and latencies."""
    stop = time.monotonic() + seconds
    lat: list[float] = []
    lock = threading.Lock()

    def loop(t: int) -> None:
        i = t
        mine = []
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            one(i)
            mine.append(time.perf_counter() - t0)
            i += threads
        with lock:
            lat.extend(mine)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    return {
        "ops_per_s": round(len(lat) / wall, 1),
        "p50_ms": round(1000 * lat[len(lat) // 2], 2),
        "p95_ms": round(1000 * lat[int(len(lat) * 0.95)], 2),
        "n": len(lat),
    }


def bench_local(paths: list[str], qs: list[str], seconds: float) -> dict:
    from libzim.reader import Archive
    from libzim.search import Searcher

    archives = [Archive(p) for p in paths]
    searcher = Searcher(archives)
    out = {}
    for snippets in (False, True):  # every query both ways first: caches warm, as on a server
        for q in qs:
            list(searcher.search(q).get_results(0, 10, include_snippets=snippets))
    for snippets in (False, True):
        def one(i: int) -> None:
            list(searcher.search(qs[i % len(qs)]).get_results(0, 10, include_snippets=snippets))

        for threads in (1, 2):
            out[f"local-searcher x{threads}, {WORKLOAD[snippets]}"] = run_for(seconds, threads, one)

    per = [Searcher(a) for a in archives]
    pool = concurrent.futures.ThreadPoolExecutor(2)

    def merged(i: int, snippets: bool) -> None:
        q = qs[i % len(qs)]
        pages = pool.map(lambda k: [(-r.score, k, rank) for rank, r in enumerate(
            per[k].search(q).get_results(0, 10, include_snippets=False))], range(len(per)))
        top = sorted(h for page in pages for h in page)[:10]
        if snippets:  # snippets for the survivors only, as libzim.dask does
            need: dict[int, int] = {}
            for _, k, rank in top:
                need[k] = max(need.get(k, 0), rank + 1)
            list(pool.map(lambda kn: list(per[kn[0]].search(q).get_results(0, kn[1])),
                          need.items()))

    for i in range(len(qs)):
        merged(i, False)
        merged(i, True)
    for snippets in (False, True):
        out[f"local-merge x1, {WORKLOAD[snippets]}"] = run_for(
            seconds, 1, lambda i: merged(i, snippets))
    return out


def bench_dask(paths: list[str], qs: list[str], seconds: float, workers: int) -> dict:
    from distributed import Client, LocalCluster
    import libzim.dask as libdask

    out = {}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
        lib = libdask.Library(paths, client)
        t0 = time.perf_counter()
        first = lib.search(qs[0], 10, include_snippets=False)
        out["first query (opens every archive), ms"] = round(1000 * (time.perf_counter() - t0), 1)
        assert not first.failures, first.failures

        for i in range(len(qs)):
            lib.search(qs[i], 10, include_snippets=False)
            lib.search(qs[i], 10, include_snippets=True)
        for snippets in (False, True):
            def one(i: int) -> None:
                r = lib.search(qs[i % len(qs)], 10, include_snippets=snippets)
                assert not r.failures, r.failures

            for threads in (1, 4):
                out[f"dask-{workers} x{threads}, {WORKLOAD[snippets]}"] = run_for(seconds, threads, one)
        addrs = sorted(client.scheduler_info()["workers"])

        def empty(i: int) -> None:
            client.gather([client.submit(int, i * 1000 + k, workers=[w], pure=False)
                           for k, w in enumerate(addrs)])

        out[f"empty fan-out to {workers} worker(s)"] = run_for(min(seconds, 3), 1, empty)
        lib.close()
    return out


PER_ARCHIVE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from libzim.reader import Archive
from libzim.search import Searcher
paths, qs = json.loads(sys.argv[2]), json.loads(sys.argv[3])
def pss():
    with open(f"/proc/{os.getpid()}/smaps_rollup") as f:
        return sum(int(l.split()[1]) for l in f if l.startswith("Pss:"))
base = pss()
opened, t_open = [], []
for p in paths:
    t0 = time.perf_counter()
    a = Archive(p); s = Searcher(a)
    list(s.search(qs[0]).get_results(0, 10, include_snippets=False))
    t_open.append(time.perf_counter() - t0)
    opened.append((a, s))
after_open = pss()
for a, s in opened:
    for q in qs:
        list(s.search(q).get_results(0, 10, include_snippets=False))
after_plain = pss()
for a, s in opened:
    for q in qs:
        list(s.search(q).get_results(0, 10, include_snippets=True))
after_snippets = pss()
t_q = []
for a, s in opened:
    t0 = time.perf_counter()
    for q in qs:
        list(s.search(q).get_results(0, 10, include_snippets=False))
    t_q.append((time.perf_counter() - t0) / len(qs))
n = len(paths)
print(json.dumps({
    "archives": n,
    "archive_bytes": os.path.getsize(paths[0]),
    "open_ms_median": round(1000 * sorted(t_open)[n // 2], 2),
    "pss_kib_per_archive_opened": round((after_open - base) / n),
    "pss_kib_per_archive_after_plain_queries": round((after_plain - base) / n),
    "pss_kib_per_archive_after_snippet_queries": round((after_snippets - base) / n),
    "query_ms_per_archive_median": round(1000 * sorted(t_q)[n // 2], 3),
}))
"""


def per_archive(paths: list[str], qs: list[str], **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PER_ARCHIVE, str(ROOT), json.dumps(paths),
                          json.dumps(qs)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **env)).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archives", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--quick", action="store_true", help="4 archives, 3 s")
    args = ap.parse_args()
    if args.quick:
        args.archives, args.seconds = 4, 3.0
    paths = make_library(args.archives)
    qs = queries()
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "archives": len(paths),
        "seconds": args.seconds,
        "per_archive": per_archive(paths, qs),
        "per_archive ZIM_CLUSTERCACHE=2": per_archive(paths, qs, ZIM_CLUSTERCACHE="2"),
        "runs": {},
    }
    report["runs"].update(bench_local(paths, qs, args.seconds))
    for w in (1, 2):
        report["runs"].update(bench_dask(paths, qs, args.seconds, w))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dask.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Library search: Dask vs local ({len(paths)} archives of python3.11-doc, "
        f"{args.seconds:g} s per row)", "",
        f"{report['machine']}, Python {report['python']}. Shared machine: noisy figures.", "",
        "| configuration | queries/s | p50 ms | p95 ms |", "|---|---|---|---|",
    ]
    for name, r in report["runs"].items():
        if isinstance(r, dict):
            lines.append(f"| {name} | {r['ops_per_s']} | {r['p50_ms']} | {r['p95_ms']} |")
    lines += ["", "Other figures:", ""]
    lines += [f"- {k}: {v}" for k, v in report["runs"].items() if not isinstance(v, dict)]
    for key in ("per_archive", "per_archive ZIM_CLUSTERCACHE=2"):
        lines += [f"- {key}, {k}: {v}" for k, v in report[key].items()]
    (RESULTS / "dask.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
