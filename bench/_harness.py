"""Timing harness shared by the Python benchmark workers (stdlib only).

It must run under any interpreter (pyenv 3.11 for our binding, Debian's
/usr/bin/python3 for python3-libzim 2.1.0, a PyPI venv for python-libzim 3.x),
so it imports no binding itself: a worker passes an `Impl` with two methods:

    open(specs, workload) -> ctx         # per thread (or once, for --config shared)
    run(ctx, workload, op, hits, out)    # one op; when `out` is a list, append the
                                         # canonical digest lines (see raw_search.cpp)

Protocol, identical to bench/raw_search.cpp so results compare:
  * the op list is every line of <inputs>/<key>.{queries.txt,lookups.tsv,content.txt}
    for each archive in command-line order;
  * each thread/process first runs the whole list once from its own offset
    (warm-up + verification; every thread's digest must be identical), then all
    start together and run whole passes over the list until --duration is
    reached, so every implementation sees the same query mix;
  * output is one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import resource
import threading
import time

SEARCH_WORKLOADS = ("paths", "results", "snippets")
WORKLOADS = SEARCH_WORKLOADS + ("lookups", "content")


def load_ops(specs, inputs, workload):
    ops = []
    for idx, (key, _path) in enumerate(specs):
        suffix = {"lookups": "lookups.tsv", "content": "content.txt"}.get(workload, "queries.txt")
        with open(f"{inputs}/{key}.{suffix}", encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\r\n")
                if not line or line.startswith("#"):
                    continue
                if workload == "lookups":
                    path, _, title = line.partition("\t")
                    ops.append((idx, key, path, title))
                else:
                    ops.append((idx, key, line, ""))
    if not ops:
        raise SystemExit(f"no operations in {inputs} for {workload}")
    return ops


def _switches():
    """Context switches of this process so far (voluntary, involuntary): a
    thread that waits for the GIL or a lock sleeps and is switched out."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_nvcsw, ru.ru_nivcsw


def _percentile(values, q):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def _verify_and_time(impl, ctx, ops, args, start, sync):
    """One thread's life: verification pass, barrier, timed whole passes."""
    n = len(ops)
    digest = [None] * n
    extra = [None] * n
    for k in range(n):
        i = (start + k) % n
        d, x = [], []
        impl.run(ctx, args.workload, ops[i], args.hits, (d, x))
        digest[i] = "".join(d)
        extra[i] = "".join(x)
    sync()  # everyone warmed up
    deadline = sync()  # the coordinator publishes the deadline
    lat = []
    count = 0
    last_end = time.monotonic()
    run = impl.run
    workload, hits = args.workload, args.hits
    perf = time.perf_counter
    while True:
        for k in range(n):
            op = ops[(start + k) % n]
            s = perf()
            run(ctx, workload, op, hits, None)
            lat.append(perf() - s)
        count += n
        last_end = time.monotonic()
        if last_end >= deadline:
            break
    return {
        "digest": "".join(digest),
        "extra": "".join(extra),
        "lat": lat,
        "ops": count,
        "last_end": last_end,
    }


def _run_threads(impl, specs, ops, args, shared):
    nthreads = args.threads
    barrier = threading.Barrier(nthreads + 1)
    state = {}
    results = [None] * nthreads
    errors = []
    shared_ctx = impl.open(specs, args.workload) if shared else None

    def sync():
        barrier.wait()
        return state.get("deadline")

    def body(t):
        try:
            ctx = shared_ctx if shared else impl.open(specs, args.workload)
            results[t] = _verify_and_time(impl, ctx, ops, args, len(ops) * t // nthreads, sync)
        except BaseException as e:  # noqa: BLE001 - reported, never swallowed
            errors.append(repr(e))
            barrier.abort()
            raise

    threads = [threading.Thread(target=body, args=(t,), daemon=True) for t in range(nthreads)]
    for th in threads:
        th.start()
    barrier.wait()  # all verified
    cpu0 = time.process_time()
    sw0 = _switches()
    t0 = time.monotonic()
    state["deadline"] = t0 + args.duration
    barrier.wait()
    for th in threads:
        th.join()
    cpu = time.process_time() - cpu0
    sw = _switches()
    results[0]["switches"] = (sw[0] - sw0[0], sw[1] - sw0[1])
    if errors:
        raise RuntimeError("worker thread failed: " + "; ".join(errors))
    return results, t0, cpu


def _proc_main(impl, specs, ops, args, start, barrier, deadline_value, queue):
    try:
        ctx = impl.open(specs, args.workload)

        def sync():
            barrier.wait()
            return deadline_value.value

        cpu0 = None
        sw0 = [0, 0]

        def sync_with_cpu():
            nonlocal cpu0
            d = sync()
            if d is not None and d > 0:
                cpu0 = time.process_time()
                sw0[:] = _switches()
            return d

        r = _verify_and_time(impl, ctx, ops, args, start, sync_with_cpu)
        r["cpu"] = time.process_time() - cpu0
        sw = _switches()
        r["switches"] = (sw[0] - sw0[0], sw[1] - sw0[1])
        queue.put(r)
    except BaseException as e:  # noqa: BLE001
        queue.put({"error": repr(e)})
        raise


def _run_procs(impl, specs, ops, args):
    ctx = mp.get_context("fork")  # children open their own archives after the fork
    n = args.threads
    barrier = ctx.Barrier(n + 1)
    deadline = ctx.Value("d", 0.0)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_proc_main, args=(impl, specs, ops, args, len(ops) * p // n, barrier, deadline, queue))
        for p in range(n)
    ]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.monotonic()
    deadline.value = t0 + args.duration
    barrier.wait()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    errs = [r["error"] for r in results if "error" in r]
    if errs:
        raise RuntimeError("worker process failed: " + "; ".join(errs))
    bad = [p.exitcode for p in procs if p.exitcode]
    if bad:
        raise RuntimeError(f"worker process exit codes {bad}")
    return results, t0, sum(r["cpu"] for r in results)


def main(impl, impl_name, extra_info=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--archive", action="append", required=True, metavar="KEY=PATH")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--workload", choices=WORKLOADS, required=True)
    ap.add_argument("--config", choices=("threads", "shared", "procs"), default="threads")
    ap.add_argument("--threads", type=int, default=1, help="threads, or processes for --config procs")
    ap.add_argument("--hits", type=int, default=16)
    ap.add_argument("--duration", type=float, default=5.0)
    args = ap.parse_args()
    specs = [tuple(a.split("=", 1)) for a in args.archive]
    ops = load_ops(specs, args.inputs, args.workload)
    supported = getattr(impl, "supports", lambda w, c: True)(args.workload, args.config)
    if supported is not True:
        print(json.dumps({"impl": impl_name, "workload": args.workload, "config": args.config,
                          "threads": args.threads, "unsupported": supported or "n/a"}))
        return

    if args.config == "procs":
        results, t0, cpu = _run_procs(impl, specs, ops, args)
    else:
        results, t0, cpu = _run_threads(impl, specs, ops, args, shared=args.config == "shared")

    ops_total = sum(r["ops"] for r in results)
    secs = max(r["last_end"] for r in results) - t0
    lat = [x for r in results for x in r["lat"]]
    d0 = results[0]["digest"]
    x0 = results[0]["extra"]
    out = {
        "impl": impl_name,
        "workload": args.workload,
        "config": args.config,
        "threads": args.threads,
        "ops": ops_total,
        "seconds": secs,
        "ops_per_s": ops_total / secs if secs > 0 else 0.0,
        "p50_ms": _percentile(lat, 0.5) * 1e3,
        "p95_ms": _percentile(lat, 0.95) * 1e3,
        "cpu_s": cpu,
        # Context switches in the timed window per op (voluntary: waits for
        # the GIL or a lock; involuntary: preempted), whole process or all
        # worker processes.
        "vcsw_per_op": sum(r.get("switches", (0, 0))[0] for r in results) / max(ops_total, 1),
        "ivcsw_per_op": sum(r.get("switches", (0, 0))[1] for r in results) / max(ops_total, 1),
        "op_list_len": len(ops),
        "digest_lines": d0.count("\n"),
        "digest": hashlib.sha256(d0.encode("utf-8")).hexdigest(),
        "extra_digest": hashlib.sha256(x0.encode("utf-8")).hexdigest() if x0 else None,
        "threads_consistent": all(r["digest"] == d0 and r["extra"] == x0 for r in results),
    }
    if extra_info:
        out.update(extra_info)
    print(json.dumps(out))


def search_lines(key, query, rank, path, title):
    return f"{key}|{query}|{rank}|{path}|{title}\n"


def reader_op(archive, workload, key, a, b, out):
    """The two reader workloads, the same for every Python implementation:
    python-libzim's reader API is the one this binding keeps."""
    if workload == "lookups":
        entry = archive.get_entry_by_path(a)
        by_title = archive.get_entry_by_title(b)
        mime = entry.get_item().mimetype
        if out is not None:
            out[0].append(f"{key}|{a}|{entry.title}|{by_title.path}|{mime}\n")
        return None
    content = archive.get_entry_by_path(a).get_item().content
    if out is not None:
        out[0].append(f"{key}|{a}|{len(content)}|{hashlib.sha256(content).hexdigest()}\n")
    return len(content)


# ---------------------------------------------------------------- the scaling benchmarks' workers
# bench/scale.py and bench/size_scaling.py run a worker per binding and archive.


class BindingOps:
    """The classes of whichever libzim is importable (ours, or python-libzim in its
    venv) and the suggestion op they share; each benchmark adds its own search."""

    HITS = 10

    def __init__(self, ours: bool) -> None:
        from libzim.reader import Archive
        from libzim.search import Query, Searcher
        from libzim.suggestion import SuggestionSearcher

        self.ours = ours
        self.Archive, self.Query, self.Searcher = Archive, Query, Searcher
        self.SuggestionSearcher = SuggestionSearcher

    def suggest(self, suggester, q: str, mode: str | None = None) -> int:
        # mode (ours only): "titles" or "auto"; None is python-libzim's call.
        s = suggester.suggest(q) if mode is None else suggester.suggest(q, mode=mode)
        return sum(len(p) for p in s.getResults(0, self.HITS))


def smaps_kib(*fields: str) -> dict[str, int]:
    """This process's /proc/self/smaps_rollup fields ("Rss", "Pss") in KiB; 0 if absent."""
    out = dict.fromkeys(fields, 0)
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            name = line.split(":", 1)[0]
            if name in out:
                out[name] = int(line.split()[1])
    return out


def run_worker(cmd: list[str], impl: str, root, timeout: float, what: str) -> dict:
    """Runs a worker command and returns the JSON of its last stdout line.  Ours
    imports the checkout's libzim (PYTHONPATH=root); the peer must import its
    own, so PYTHONPATH goes and the cwd is outside the checkout."""
    import os
    import subprocess

    env = dict(os.environ)
    if impl == "ours":
        env["PYTHONPATH"] = str(root)
    else:
        env.pop("PYTHONPATH", None)
    p = subprocess.run(cmd, env=env, cwd="/", capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed: {p.stderr.strip()[-800:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])
