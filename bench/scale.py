#!/usr/bin/env python3
"""Wikipedia scale (issue 28): every cost at each synthetic archive size, ours against python-libzim.

    python3 tools/synthetic.py 10000 && python3 tools/synthetic.py 100000   # once (cached)
    python3 tools/synthetic.py --title-only 3000000                          # 5,000,000 entries
    nice python3 bench/scale.py                          # every archive built so far, 3 trials
    nice python3 bench/scale.py --quick --sizes 10000    # 1 trial, fewer passes

Archives: the synthetic ones of tools/synthetic.py found in ~/.cache/libzim-c/scale
(``--sizes``; the title-only ones with ``--titles N,M``), and rustjava (tools/corpus.py
``--combined rustjava``) when built, for the method check: it should tell the
same story as a synthetic archive of its size.  Nothing is built here.

Each (trial, archive, implementation) runs in a fresh process, trials
interleaved, medians of the trials reported.  A worker measures, on one
archive: ``Archive()`` first in the process and again, RSS and PSS added by
the open; the first search (Searcher + 10 hits), then p50/p99 of 10-hit
searches over a mix of common, rare and phrase queries (paths and titles; ours
also with snippets: python-libzim has no snippet API) and their estimated
matches; searches/s at 1, 2 and 8 threads (each thread its own Archive and
Searcher); suggestions for prefixes of 1 to 6 characters of the archive's own
titles (first, then p50/p99), and ours also as type-ahead (``suggest(q,
mode="titles")`` and ``mode="auto"``); random article reads in a fresh Archive (cold
cluster cache) and the same few again (warm); ``Item.text`` (ours); iteration
by path, by title and ``iter_efficient()`` (entries/s, the first
ITER_LIMIT entries); ``libzim.dask.read_archives`` planning time (ours, when
dask is installed).  Each cost is fitted against the entry count on the
synthetic archives (log-log least squares) and the exponent printed.

Writes bench/results/scale.md, scale.json and scale.png (matplotlib, when installed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import _harness  # bench/, this script's folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
PEER_PYTHON = Path.home() / ".cache/libzim-c/python-libzim-3.13.1/bin/python"
HITS = 10
ITER_LIMIT = 300_000
ITER_SECONDS = 6.0
# Single-thread costs are this thread's CPU time: on a machine shared by a dozen
# jobs, wall time mostly measures the scheduler (p99s of 100+ ms on 0.3 ms ops).
CLOCK = time.thread_time
THREADS = (1, 2, 8)
THREAD_SECONDS = 1.5
PREFIX_LENGTHS = range(1, 7)


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- worker (either binding)


def mem_kib() -> tuple[int, int]:
    """(RSS, PSS) of this process in KiB."""
    m = _harness.smaps_kib("Rss", "Pss")
    return m["Rss"], m["Pss"]


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


class Ops(_harness.BindingOps):
    """The operations, for ours (full API) or python-libzim (paths, no snippets)."""

    HITS = HITS

    def search(self, archive, searcher, q: str, snippets: bool = False) -> int:
        """10 hits with path and title (and snippet); returns the estimated matches."""
        if self.ours:
            s = searcher.search(self.Query(q))
            rs = s.get_results(0, HITS, include_snippets=snippets)
            sum(len(r.path) + len(r.title) + (len(r.snippet) if snippets else 0) for r in rs)
            return s.getEstimatedMatches()
        s = searcher.search(self.Query().set_query(q))
        for p in s.getResults(0, HITS):
            archive.get_entry_by_path(p).title
        return s.getEstimatedMatches()


def timed(fn, items, passes: int) -> list[float]:
    lat = []
    clock = CLOCK
    for _ in range(passes):
        for x in items:
            t = clock()
            fn(x)
            lat.append(clock() - t)
    return lat


def worker_main(args: argparse.Namespace) -> None:
    ours = args.worker == "ours"
    # Every pass asks each query's estimate again: ours would serve it from the
    # searcher's kept estimates where python-libzim counts it anew. Count it
    # each time, so both do the same work (zim serve's figures keep them).
    os.environ["LIBZIM_C_ESTIMATE_CACHE"] = "0"
    ops = Ops(ours)
    plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
    path, passes = args.archive, args.passes
    clock = CLOCK
    out: dict[str, object] = {"impl": args.worker}
    rss0, pss0 = mem_kib()
    t = clock()
    archive = ops.Archive(path)
    out["open_ms"] = (clock() - t) * 1e3
    rss1, pss1 = mem_kib()
    out.update(open_rss_kib=rss1 - rss0, open_pss_kib=pss1 - pss0)
    t = clock()
    again = ops.Archive(path)
    out["open_again_ms"] = (clock() - t) * 1e3
    del again
    ms = lambda xs: [x * 1e3 for x in xs]  # noqa: E731

    # Reads first, while no cluster is cached (other Archives of the file may share a cache).
    read = lambda p: len(archive.get_entry_by_path(p).get_item().content)  # noqa: E731
    lat = ms(timed(read, plan["reads"], 1))
    out["read_cold_p50_ms"] = pct(lat, 0.5)
    lat = ms(timed(read, plan["reads"][:8], max(4, passes * 2)))
    out["read_warm_p50_ms"] = pct(lat, 0.5)
    queries = [q for cls in plan["queries"].values() for q in cls]
    if queries and archive.has_fulltext_index:
        t = clock()
        searcher = ops.Searcher(archive)
        ops.search(archive, searcher, queries[0])
        out["first_search_ms"] = (clock() - t) * 1e3
        for cls, qs in plan["queries"].items():
            out[f"matches_{cls}"] = statistics.median(ops.search(archive, searcher, q) for q in qs)
        for q in queries:  # warm-up: the Xapian database's pages
            ops.search(archive, searcher, q)
        lat = ms(timed(lambda q: ops.search(archive, searcher, q), queries, passes))
        out.update(search_p50_ms=pct(lat, 0.5), search_p99_ms=pct(lat, 0.99))
        for cls, qs in plan["queries"].items():
            lat = ms(timed(lambda q: ops.search(archive, searcher, q), qs, passes))
            out[f"search_{cls}_p50_ms"] = pct(lat, 0.5)
        if ours:
            lat = ms(timed(lambda q: ops.search(archive, searcher, q, True), queries, max(1, passes // 2)))
            out.update(snippets_p50_ms=pct(lat, 0.5), snippets_p99_ms=pct(lat, 0.99))
        for n in THREADS:
            out[f"search_x{n}_per_s"] = threads_run(ops, path, queries, n, False)
            if ours:
                out[f"snippets_x{n}_per_s"] = threads_run(ops, path, queries, n, True)
        out["after_search_pss_kib"] = mem_kib()[1] - pss0

    prefixes = plan["prefixes"]
    t = clock()
    suggester = ops.SuggestionSearcher(archive)
    ops.suggest(suggester, prefixes["1"][0])
    out["first_suggest_ms"] = (clock() - t) * 1e3
    for length, ps in prefixes.items():
        timed(lambda q: ops.suggest(suggester, q), ps, 1)  # first pass: warm-up
        lat = ms(timed(lambda q: ops.suggest(suggester, q), ps, passes))
        out[f"suggest_{length}_p50_ms"] = pct(lat, 0.5)
        out[f"suggest_{length}_p99_ms"] = pct(lat, 0.99)
    if ours:  # type-ahead (suggest(mode=...)): python-libzim has no such path
        for mode in ("titles", "auto"):
            t = clock()
            fresh = ops.SuggestionSearcher(archive)
            ops.suggest(fresh, prefixes["1"][0], mode)
            out[f"first_suggest_{mode}_ms"] = (clock() - t) * 1e3
            for length, ps in prefixes.items():
                timed(lambda q: ops.suggest(fresh, q, mode), ps, 1)
                lat = ms(timed(lambda q: ops.suggest(fresh, q, mode), ps, passes))
                out[f"suggest_{mode}_{length}_p50_ms"] = pct(lat, 0.5)
                out[f"suggest_{mode}_{length}_p99_ms"] = pct(lat, 0.99)

    if ours:
        lat = ms(timed(lambda p: archive.get_entry_by_path(p).get_item().text, plan["reads"][:100], 1))
        out["text_p50_ms"] = pct(lat, 0.5)
    for how in ("iter_by_path", "iter_by_title", "iter_efficient"):
        if hasattr(archive, how):
            out[f"{how}_per_s"] = iterate(getattr(archive, how)())
        elif how == "iter_by_path":  # python-libzim: entry ids are in path order
            out[f"{how}_per_s"] = iterate(archive._get_entry_by_id(i) for i in range(archive.entry_count))
    out["pss_end_kib"] = mem_kib()[1] - pss0
    if ours:
        out.update(dask_plan())
    print(json.dumps(out))


def iterate(it) -> float:
    """Entries/s over the first ITER_LIMIT entries (or ITER_SECONDS), reading each title."""
    t0 = time.perf_counter()
    n = 0
    for e in it:
        e.title
        n += 1
        if n >= ITER_LIMIT or (n % 4096 == 0 and time.perf_counter() - t0 > ITER_SECONDS):
            break
    return n / (time.perf_counter() - t0)


def dask_plan() -> dict[str, float]:
    try:
        import dask.dataframe  # noqa: F401 - imported before the clock starts
        from libzim.dask import read_archives
    except ImportError:
        return {}
    read_archives([ARGS.archive])  # the first call imports what planning needs
    t = time.perf_counter()
    ddf = read_archives([ARGS.archive])
    return {"dask_plan_ms": (time.perf_counter() - t) * 1e3, "dask_partitions": ddf.npartitions}


def threads_run(ops: Ops, path: str, queries: list[str], n: int, snippets: bool) -> float:
    """Searches/s with n threads, each its own Archive + Searcher, all searching for
    THREAD_SECONDS (whole passes over the mix) after a warm-up."""
    barrier = threading.Barrier(n + 1)
    errors: list[str] = []
    done = [0] * n
    deadline = [0.0]

    def body(k: int) -> None:
        try:
            a = ops.Archive(path)
            s = ops.Searcher(a)
            for q in queries[: len(queries) // 3]:  # warm-up
                ops.search(a, s, q, snippets)
            barrier.wait()
            barrier.wait()  # the deadline is set
            while time.monotonic() < deadline[0]:
                for q in queries[k % 3::3]:  # threads start in different parts of the mix
                    ops.search(a, s, q, snippets)
                    done[k] += 1
        except BaseException as e:  # noqa: BLE001 - reported
            errors.append(repr(e))
            barrier.abort()

    ths = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for th in ths:
        th.start()
    barrier.wait()
    t = time.monotonic()
    deadline[0] = t + THREAD_SECONDS
    barrier.wait()
    for th in ths:
        th.join()
    dt = time.monotonic() - t
    if errors:
        raise SystemExit("; ".join(errors))
    return sum(done) / dt


# ---------------------------------------------------------------- driver


def make_plan(path: Path, key: str, seed: int = 1) -> dict:
    """The archive's query mix, title prefixes and articles to read, from the generator
    (synthetic archives) or bench/queries/KEY.txt, and the archive's own titles."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tools"))
    from libzim.reader import Archive

    a = Archive(path)
    rng = random.Random(f"scale plan {key}")
    if key.startswith("synthetic"):
        import synthetic

        v = synthetic.Vocabulary.load()
        words = v.words
        # common: content words of high rank; rare: ranks past 5,000; phrase: recurring phrases
        gen_phrases = synthetic.Generator(10, seed, vocabulary=v).phrases
        queries = {"common": words[150:160], "rare": words[5000:9000:400],
                   "phrase": ['"' + " ".join(p) + '"' for p in gen_phrases[:30] if len(p) >= 2][:10]}
    else:
        qfile = HERE / "queries" / f"{key}.txt"
        qs = [q.strip() for q in qfile.read_text(encoding="utf-8").splitlines()
              if q.strip() and not q.startswith("#")]
        queries = {"mixed": qs[:30]}
    titles, reads = [], []
    n = a.entry_count
    for _ in range(4000):
        e = a._get_entry_by_id(rng.randrange(n))
        if e.is_redirect or not e.get_item().mimetype.startswith("text/html"):
            continue
        if len(e.title) >= 6:
            titles.append(e.title)
        reads.append(e.path)
        if len(reads) >= 200 and len(titles) >= 20:
            break
    prefixes = {str(k): [t[:k] for t in titles[:20]] for k in PREFIX_LENGTHS}
    return {"queries": queries if a.has_fulltext_index else {}, "prefixes": prefixes,
            "reads": reads[:200], "entries": a.all_entry_count, "articles": a.article_count,
            "bytes": a.filesize, "fulltext": a.has_fulltext_index}


def archives_to_use(args) -> dict[str, Path]:
    sys.path.insert(0, str(ROOT / "tools"))
    import corpus
    import synthetic

    out = {}
    for n in args.sizes:
        p = synthetic.synthetic_zim_path(n)
        # else one built with --zstd-level (the same blobs, another compression level)
        other = sorted(p.parent.glob(p.stem + "-z*.zim"))
        if p.is_file():
            out[f"synthetic-{n}"] = p
        elif other:  # the archives table gives its file name
            out[f"synthetic-{n}"] = other[0]
            log(f"synthetic-{n}: {other[0].name} (not libzim's zstd level 19)")
        else:
            log(f"skipped: {p} not built (python3 tools/synthetic.py {n})")
    for n in args.titles:
        p = synthetic.synthetic_zim_path(n, title_only=True)
        if p.is_file():
            out[f"synthetic-titles-{n}"] = p
        else:
            log(f"skipped: {p} not built (python3 tools/synthetic.py --title-only {n})")
    if args.rustjava:
        try:
            p = corpus.combined_doc_zim_path("rustjava")
        except RuntimeError as e:
            p = None
            log(f"skipped rustjava: {e}")
        if p is not None and p.is_file():
            out["rustjava"] = p
        elif p is not None:
            log(f"skipped: {p} not built (python3 tools/corpus.py --combined rustjava)")
    for n in args.match:
        p = synthetic.synthetic_zim_path(n)
        if p.is_file():
            out[f"synthetic-{n}"] = p
    if not out:
        raise SystemExit("no archive to measure: build them with tools/synthetic.py first")
    return out


def run_worker(py: str, impl: str, zim: Path, plan: Path, passes: int) -> dict:
    cmd = ["nice", "-n", "5", py, str(Path(__file__).resolve()), "--worker", impl,
           "--archive", str(zim), "--plan", str(plan), "--passes", str(passes)]
    return _harness.run_worker(cmd, impl, ROOT, 1800, f"{impl} on {zim.name}")


ARGS: argparse.Namespace


def main() -> None:
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=("ours", "peer"), help=argparse.SUPPRESS)
    ap.add_argument("--archive", help=argparse.SUPPRESS)
    ap.add_argument("--plan", help=argparse.SUPPRESS)
    ap.add_argument("--passes", type=int, default=3, help="timed passes over each list")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x],
                    default=[10_000, 100_000], help="synthetic article counts (comma-separated)")
    ap.add_argument("--titles", type=lambda s: [int(x) for x in s.split(",") if x and int(x)],
                    default=[300_000, 3_000_000],
                    help="articles of the title-only archives (comma-separated; 0 or '': none); "
                         "3,000,000 = 5,000,000 entries")
    ap.add_argument("--no-rustjava", dest="rustjava", action="store_false")
    ap.add_argument("--match", type=lambda s: [int(x) for x in s.split(",") if x], default=[],
                    help="more synthetic sizes (e.g. rustjava's article count), not fitted")
    ap.add_argument("--quick", action="store_true", help="1 trial, 2 passes")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "scale"), help="results prefix (.md/.json/.png)")
    args = ARGS = ap.parse_args()
    if args.worker:
        worker_main(args)
        return
    if args.quick:
        args.trials, args.passes = 1, 2
    t_start = time.monotonic()
    zims = archives_to_use(args)
    impls = {"ours": sys.executable}
    if not args.no_peer and PEER_PYTHON.exists():
        impls["peer"] = str(PEER_PYTHON)
    plan_dir = ROOT / "bench" / ".cache" / "scale"
    plan_dir.mkdir(parents=True, exist_ok=True)
    plans, facts = {}, {}
    for key, zim in zims.items():
        plan = make_plan(zim, key)
        facts[key] = {k: plan[k] for k in ("entries", "articles", "bytes", "fulltext")}
        facts[key]["path"] = str(zim)
        plans[key] = plan_dir / f"{key}.json"
        plans[key].write_text(json.dumps(plan), encoding="utf-8")
    loads = [os.getloadavg()[0]]
    runs: list[dict] = []
    for trial in range(args.trials):
        for key, zim in zims.items():
            for impl, py in impls.items():
                r = run_worker(py, impl, zim, plans[key], args.passes)
                r.update(trial=trial, archive=key, load1=os.getloadavg()[0])
                runs.append(r)
                log(f"trial {trial} {key:24} {impl:4}: open {r['open_ms']:.1f} ms, search p50 "
                    f"{r.get('search_p50_ms', float('nan')):.2f} ms, suggest(1) p99 "
                    f"{r['suggest_1_p99_ms']:.2f} ms, read cold {r['read_cold_p50_ms']:.2f} ms "
                    f"(load {r['load1']:.1f})")
                loads.append(r["load1"])
    report = summarize(zims, facts, impls, runs, loads, time.monotonic() - t_start, args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {k: v for k, v in report.items() if k != "markdown"}, indent=1), encoding="utf-8")
    chart(report, out.with_suffix(".png"))
    out.with_suffix(".md").write_text(report["markdown"], encoding="utf-8")
    print(report["markdown"])


# name, field, unit, lower is better
METRICS = [
    ("open (first in the process)", "open_ms", "ms", True),
    ("open again", "open_again_ms", "ms", True),
    ("RSS added by the open", "open_rss_kib", "KiB", True),
    ("PSS added by the open", "open_pss_kib", "KiB", True),
    ("first search (Searcher + 10 hits)", "first_search_ms", "ms", True),
    ("search p50 (mix)", "search_p50_ms", "ms", True),
    ("search p99 (mix)", "search_p99_ms", "ms", True),
    ("search p50, common words", "search_common_p50_ms", "ms", True),
    ("search p50, rare words", "search_rare_p50_ms", "ms", True),
    ("search p50, phrases", "search_phrase_p50_ms", "ms", True),
    ("search p50, queries of bench/queries", "search_mixed_p50_ms", "ms", True),
    ("estimated matches, common", "matches_common", "", None),
    ("estimated matches, rare", "matches_rare", "", None),
    ("estimated matches, phrase", "matches_phrase", "", None),
    ("estimated matches, bench/queries", "matches_mixed", "", None),
    ("search + snippets p50", "snippets_p50_ms", "ms", True),
    ("search + snippets p99", "snippets_p99_ms", "ms", True),
    *[(f"searches/s, {n} thread(s)", f"search_x{n}_per_s", "/s", False) for n in THREADS],
    *[(f"snippet searches/s, {n} thread(s)", f"snippets_x{n}_per_s", "/s", False) for n in THREADS],
    ("first suggestion (SuggestionSearcher + 1)", "first_suggest_ms", "ms", True),
    *[(f"suggestions, prefix of {k}: {q}", f"suggest_{k}_{q}_ms", "ms", True)
      for k in PREFIX_LENGTHS for q in ("p50", "p99")],
    *[(f"first type-ahead, mode={m} (SuggestionSearcher + 1)", f"first_suggest_{m}_ms", "ms", True)
      for m in ("titles", "auto")],
    *[(f"type-ahead mode={m}, prefix of {k}: {q}", f"suggest_{m}_{k}_{q}_ms", "ms", True)
      for m in ("titles", "auto") for k in PREFIX_LENGTHS for q in ("p50", "p99")],
    ("article read, cold cluster cache, p50", "read_cold_p50_ms", "ms", True),
    ("article read, warm, p50", "read_warm_p50_ms", "ms", True),
    ("Item.text p50", "text_p50_ms", "ms", True),
    ("iteration by path", "iter_by_path_per_s", "/s", False),
    ("iteration by title", "iter_by_title_per_s", "/s", False),
    ("iteration, iter_efficient()", "iter_efficient_per_s", "/s", False),
    ("read_archives planning", "dask_plan_ms", "ms", True),
    ("PSS at the end of the worker", "pss_end_kib", "KiB", True),
]


def fit(xs: list[float], ys: list[float]) -> float | None:
    """Exponent b of y = a * x^b by least squares on the logs (None under 2 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y and y > 0]
    if len(pts) < 2:
        return None
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def summarize(zims, facts, impls, runs, loads, duration, args) -> dict:
    def med(impl: str, key: str, field: str):
        xs = [r[field] for r in runs if r["impl"] == impl and r["archive"] == key and field in r]
        return statistics.median(xs) if xs else None

    keys = list(zims)
    label = {"ours": "libzim-c", "peer": "python-libzim 3.13.1"}
    fitted = [k for k in keys if k.startswith("synthetic") and k.split("-")[-1].isdigit()
              and int(k.split("-")[-1]) not in args.match]
    table = {}
    lines = [
        "# Wikipedia scale: synthetic archives of 10,000 articles and up (issue 28)", "",
        f"Generated by `python3 bench/scale.py {' '.join(sys.argv[1:])}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {duration:.0f} s. "
        f"{os.cpu_count()} cores **shared with other jobs**: 1-minute load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the run (a quiet machine is under 2), so "
        f"absolute times are inflated and noisy; the ratios come from the same run, trials "
        f"interleaved (fresh process per trial, archive and implementation), medians of "
        f"{args.trials} trials, {args.passes} timed passes after a warm-up pass. Single-thread "
        f"costs (ms) are the thread's CPU time (`time.thread_time`), which the load inflates "
        f"far less than wall time; rates at 1/2/8 threads are wall time.", "",
        "| archive | entries | articles (front) | size | full-text index | file |",
        "|---|---:|---:|---:|---|---|",
    ]
    for k in keys:
        f = facts[k]
        lines.append(f"| {k} | {f['entries']:,} | {f['articles']:,} | {f['bytes'] / 2**20:,.0f} MiB "
                     f"| {'yes' if f['fulltext'] else 'no'} | `{Path(zims[k]).name}` |")
    lines += ["", "Each cell: libzim-c / python-libzim 3.13.1, and the ratio python-libzim ÷ libzim-c "
              "for costs (higher is better for us), libzim-c ÷ python-libzim for rates. The exponent "
              f"columns fit cost ∝ entries^b over the synthetic archives ({', '.join(fitted)}).", "",
              "| measure | " + " | ".join(keys) + " | b (ours) | b (python-libzim) |",
              "|---|" + "---:|" * len(keys) + "---:|---:|"]
    for name, field, unit, lower in METRICS:
        cells, any_value = [], False
        exps = {}
        for impl in impls:
            xs = [facts[k]["entries"] for k in fitted if med(impl, k, field) is not None]
            ys = [med(impl, k, field) for k in fitted if med(impl, k, field) is not None]
            exps[impl] = fit(xs, ys)
        for k in keys:
            a, b = med("ours", k, field), med("peer", k, field) if "peer" in impls else None
            table.setdefault(field, {})[k] = {"ours": a, "peer": b}
            if a is None and b is None:
                cells.append("")
                continue
            any_value = True
            fmt = (lambda v: "–" if v is None else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"))
            cell = f"{fmt(a)} / {fmt(b)}" if b is not None else fmt(a)
            if a and b and lower is not None:
                cell += f" ({(b / a if lower else a / b):.2f}x)"
            cells.append(cell)
        if not any_value:
            continue
        e = lambda v: "" if v is None else f"{v:+.2f}"  # noqa: E731
        lines.append(f"| {name}{' (' + unit + ')' if unit else ''} | " + " | ".join(cells)
                     + f" | {e(exps.get('ours'))} | {e(exps.get('peer'))} |")
        table[field]["exponent"] = exps
    lines.append("")
    return {"archives": {k: str(v) for k, v in zims.items()}, "facts": facts, "fitted": fitted,
            "table": table, "runs": runs, "loads": loads, "duration_s": duration,
            "argv": sys.argv[1:], "markdown": "\n".join(lines)}


def chart(report: dict, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        log("matplotlib not installed: no chart")
        return
    fields = [("open_ms", "open (ms)"), ("search_p50_ms", "search p50 (ms)"),
              ("snippets_p50_ms", "search + snippets p50 (ms)"), ("suggest_1_p99_ms", "suggest 1-char p99 (ms)"),
              ("suggest_3_p99_ms", "suggest 3-char p99 (ms)"), ("read_cold_p50_ms", "read cold p50 (ms)"),
              ("open_pss_kib", "PSS added by open (KiB)"), ("iter_by_title_per_s", "iteration by title (/s)")]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    keys = [k for k in report["facts"] if k.startswith("synthetic")]
    for ax, (field, title) in zip(axes.flat, fields):
        for impl, style in (("ours", "o-"), ("peer", "s--")):
            pts = sorted((report["facts"][k]["entries"], report["table"].get(field, {}).get(k, {}).get(impl))
                         for k in keys)
            pts = [p for p in pts if p[1]]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                        label={"ours": "libzim-c", "peer": "python-libzim 3.13.1"}[impl])
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis,):  # the minor ticks' labels overlap on a short range
            axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("entries", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main()
