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
  local-searcher   also with 4 and 16 client threads
  dask-W tasks     libzim.dask.Library(...).search(via="tasks") on a
                   LocalCluster of W = 1 or 2 worker processes (1 task thread
                   each): one task per worker through the scheduler per query;
                   1, 4 and 16 client threads
  dask-W actors    the same with via="actors" (the default): the workers'
                   resident searchers called directly, no scheduler hop

Scale (--scale, on by default; a reduced simulation, see scale_model()): the
per-hop cost of the actor fan-out measured with 1, 2, 4 and 8 worker
processes (empty shards), and one worker serving 100 small archives (one
node's share of 10,000 archives on 100 nodes) measured for real; the
100-node figures are the model built from those two.

Also measured, for the sizing in docs/guides/dask.md: per-archive open time (Archive +
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
        "p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 2),
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

        for threads in (1, 4, 16):
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


def bench_dask(paths: list[str], qs: list[str], seconds: float, workers: int,
               snippet_seconds: float) -> dict:
    from distributed import Client, LocalCluster
    import libzim.dask as libdask

    out = {}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
        lib = libdask.Library(paths, client)
        for via in ("tasks", "actors"):
            t0 = time.perf_counter()
            first = lib.search(qs[0], 10, include_snippets=False, via=via)
            out[f"dask-{workers} {via}: first query, ms"] = round(1000 * (time.perf_counter() - t0), 1)
            assert not first.failures, first.failures
        for i in range(len(qs)):
            for via in ("tasks", "actors"):
                lib.search(qs[i], 10, include_snippets=False, via=via)
                lib.search(qs[i], 10, include_snippets=True, via=via)
        for snippets in (False, True):
            for via in ("tasks", "actors"):
                def one(i: int) -> None:
                    r = lib.search(qs[i % len(qs)], 10, include_snippets=snippets, via=via)
                    assert not r.failures and not r.moved, (r.failures, r.moved)

                for threads in (1, 4, 16):
                    out[f"dask-{workers} {via} x{threads}, {WORKLOAD[snippets]}"] = run_for(
                        snippet_seconds if snippets else seconds, threads, one)
        addrs = sorted(client.scheduler_info()["workers"])

        def empty(i: int) -> None:
            client.gather([client.submit(int, i * 1000 + k, workers=[w], pure=False)
                           for k, w in enumerate(addrs)])

        out[f"empty task fan-out to {workers} worker(s)"] = run_for(min(seconds, 3), 1, empty)
        out[f"empty actor fan-out to {workers} worker(s)"] = run_for(
            min(seconds, 3), 1, lambda i: lib._ask("search", {w: ("search", [], "x", 10, {}) for w in addrs},
                                                   30.0))
        lib.close()
    return out


def small_library(n: int) -> list[str]:
    """n small archives (12 pages each, tests/library_fixtures.py), cached."""
    sys.path.insert(0, str(ROOT / "tests"))
    from library_fixtures import build_archive

    root = HERE / ".cache" / "small"
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n):
        p = root / f"lib{k}.zim"
        if not p.exists():
            build_archive(root, k, 12)
            shutil.rmtree(root / f"src{k}", ignore_errors=True)
        out.append(str(p))
    return out


def bench_scale(seconds: float) -> dict:
    """What a 100-node, 10,000-archive library would do, from two
    measurements this machine can make: the actor fan-out's cost per worker
    (empty shards, 1 to 8 worker processes), and one node's real share
    (one worker process serving 100 small archives)."""
    from distributed import Client, LocalCluster
    import libzim.dask as libdask

    out: dict = {"fan-out": {}}
    for workers in (1, 2, 4, 8):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
            lib = libdask.Library([], client)
            addrs = sorted(client.scheduler_info()["workers"])
            jobs = {w: ("search", [], "x", 10, {}) for w in addrs}
            lib._ask("search", jobs, 60.0)  # the actors exist
            cpu0 = time.process_time()
            r = run_for(seconds, 1, lambda i: lib._ask("search", jobs, 30.0))
            r["client_cpu_ms_per_query"] = round(1000 * (time.process_time() - cpu0) / r["n"], 3)
            out["fan-out"][workers] = r
    paths = small_library(100)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
        lib = libdask.Library(paths, client)
        for word in ("quorvex", "zintrak"):
            assert lib.search(word, 10, include_snippets=False).searched == 100
        words = ["quorvex", "zintrak", "ledger", "harbour", "orchard"]
        out["node of 100 small archives, x1"] = run_for(
            seconds, 1, lambda i: lib.search(words[i % 5], 10, include_snippets=False))
        out["node of 100 small archives, x4"] = run_for(
            seconds, 4, lambda i: lib.search(words[i % 5], 10, include_snippets=False))
    out["model"] = scale_model(out)
    return out


def scale_model(m: dict) -> dict:
    """Linear in the number of workers: the client's CPU per query (issuing
    and merging each worker's call on its one event loop) and the fan-out
    latency, fitted on 1-8 workers, extrapolated to 100; a node's share is its
    measured latency (its archives searched on its own cores in parallel with
    the other nodes).  Assumes a network hop like loopback's, nodes as fast
    as this machine, and no stragglers."""
    ks = sorted(m["fan-out"])

    def fit(key: str) -> tuple[float, float]:
        xs, ys = ks, [m["fan-out"][k][key] for k in ks]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        return my - slope * mx, slope

    cpu0, cpu1 = fit("client_cpu_ms_per_query")
    lat0, lat1 = fit("p50_ms")
    node_p50 = m["node of 100 small archives, x1"]["p50_ms"]
    node_qps = m["node of 100 small archives, x4"]["ops_per_s"]
    client_cpu = cpu0 + 100 * cpu1
    p50 = lat0 + 100 * lat1 + node_p50
    return {
        "client CPU ms per query, fit a + b * workers": [round(cpu0, 3), round(cpu1, 4)],
        "fan-out p50 ms, fit a + b * workers": [round(lat0, 3), round(lat1, 4)],
        "100 nodes: client CPU ms per query": round(client_cpu, 2),
        "100 nodes: queries/s per client process (its CPU bound)": round(1000 / client_cpu, 1),
        "100 nodes: queries/s the nodes sustain (one node's, 4 client threads)": node_qps,
        "100 nodes: p50 ms, unloaded": round(p50, 2),
    }


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
    ap.add_argument("--snippet-seconds", type=float, default=None,
                    help="seconds per row with snippets (default: --seconds)")
    ap.add_argument("--quick", action="store_true", help="4 archives, 3 s")
    ap.add_argument("--no-scale", action="store_true", help="skip the 100-node simulation")
    args = ap.parse_args()
    if args.quick:
        args.archives, args.seconds = 4, 3.0
    snippet_seconds = args.snippet_seconds or args.seconds
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
        report["runs"].update(bench_dask(paths, qs, args.seconds, w, snippet_seconds))
    if not args.no_scale:
        report["scale"] = bench_scale(args.seconds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dask.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Library search: Dask vs local ({len(paths)} archives of python3.11-doc, "
        f"{args.seconds:g} s per row)", "",
        f"{report['machine']}, Python {report['python']}. Shared machine: noisy figures.", "",
        "| configuration | queries/s | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|",
    ]
    for name, r in report["runs"].items():
        if isinstance(r, dict):
            lines.append(f"| {name} | {r['ops_per_s']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |")
    lines += ["", "Other figures:", ""]
    lines += [f"- {k}: {v}" for k, v in report["runs"].items() if not isinstance(v, dict)]
    for key in ("per_archive", "per_archive ZIM_CLUSTERCACHE=2"):
        lines += [f"- {key}, {k}: {v}" for k, v in report[key].items()]
    if "scale" in report:
        s = report["scale"]
        lines += ["", "Scale (reduced simulation: measured fan-out cost per worker, measured node share, "
                  "linear model to 100 nodes):", "",
                  "| measured | queries/s | p50 ms | p99 ms | client CPU ms/query |", "|---|---|---|---|---|"]
        for k, r in s["fan-out"].items():
            lines.append(f"| empty actor fan-out to {k} worker(s) | {r['ops_per_s']} | {r['p50_ms']} | "
                         f"{r['p99_ms']} | {r['client_cpu_ms_per_query']} |")
        for k in ("node of 100 small archives, x1", "node of 100 small archives, x4"):
            r = s[k]
            lines.append(f"| {k} | {r['ops_per_s']} | {r['p50_ms']} | {r['p99_ms']} | |")
        lines += [""] + [f"- model, {k}: {v}" for k, v in s["model"].items()]
    (RESULTS / "dask.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
