#!/usr/bin/env python3
"""How each cost grows from the smallest bench archive to the ~42,000-page one.

    python3 tools/corpus.py --install --combined rustjava    # once: the big archive (minutes)
    python3 bench/size_scaling.py                            # ~5 min: 3 interleaved trials
    python3 bench/size_scaling.py --quick                    # 1 trial, fewer passes

Archives: ``small`` = python3.11-doc, ``big`` = "rustjava" (rust-doc and
openjdk-17-doc in one archive), both built by tools/corpus.py in its default
cache (~/.cache/libzim-c).  The big one is never built here unless --build is
given: it takes minutes, and CI does not need it.

Measured, each in a fresh subprocess per (trial, archive, implementation),
trials interleaved, medians reported:

- open: ``Archive(path)``; first search: ``Searcher(archive)`` + the first
  query's 10 results (opens the Xapian database);
- search p50: 10 hits with path and title (python-libzim: paths, then a title
  lookup per hit, as bench/run.py's "results"); with snippets (ours only:
  python-libzim has no snippet API); suggestions p50: 10 suggestions of the
  same query strings; all over bench/queries/<archive>.txt after one warm-up pass;
- text (ours only): ``Item.text`` over up to 400 HTML pages (every k-th in
  path order), best of the passes, pages/s and MB/s of text;
- PSS (/proc/self/smaps_rollup) after the searches, snippets and suggestions
  ran in 1 and in 4 threads, each thread with its own Archive and searchers
  (bench/run.py's "threads" configuration), and the PSS before opening.

The growth column is big / small; a cost that grows faster than the full-text
index does is flagged.  Writes bench/results/size_scaling.md and .json.
Implementations: ``ours`` = this checkout's build; ``peer`` = python-libzim
3.13.1 from the oracle venv (skipped if the venv is missing).
"""

from __future__ import annotations

import argparse
import json
import os
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
TEXT_PAGES = 400


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- worker (either binding)


def pss_kib() -> int:
    return _harness.smaps_kib("Pss")["Pss"]


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


class Ops(_harness.BindingOps):
    """The operations, for ours (full API) or python-libzim (paths, no snippets)."""

    HITS = HITS

    def search(self, archive, searcher, q: str, snippets: bool = False) -> int:
        if self.ours:
            rs = searcher.search(self.Query(q)).get_results(0, HITS, include_snippets=snippets)
            return sum(len(r.path) + len(r.title) + (len(r.snippet) if snippets else 0) for r in rs)
        paths = list(searcher.search(self.Query().set_query(q)).getResults(0, HITS))
        return sum(len(p) + len(archive.get_entry_by_path(p).title) for p in paths)


def timed_passes(fn, queries: list[str], passes: int) -> list[float]:
    for q in queries:  # warm-up: caches and the Xapian database's pages
        fn(q)
    lat = []
    clock = time.perf_counter
    for _ in range(passes):
        for q in queries:
            t = clock()
            fn(q)
            lat.append(clock() - t)
    return lat


def index_sizes(archive) -> dict[str, int]:
    """Sizes of the full-text and title Xapian indexes (the last entries, namespace X)."""
    out = {}
    n = archive.all_entry_count
    for i in range(n - 1, max(-1, n - 200), -1):
        e = archive._get_entry_by_id(i)
        if e.path in ("fulltext/xapian", "X/fulltext/xapian"):
            out["fulltext_index_bytes"] = e.get_item().size
        elif e.path in ("title/xapian", "X/title/xapian"):
            out["title_index_bytes"] = e.get_item().size
    return out


def html_paths(archive) -> tuple[list[str], list[str]]:
    """(HTML pages in path order, the same in cluster order: iter_efficient)."""
    def is_html(e) -> bool:
        return not e.is_redirect and e.get_item().mimetype.split(";")[0].strip() == "text/html"
    by_path = sorted(e.path for e in (archive._get_entry_by_id(i) for i in range(archive.all_entry_count))
                     if is_html(e))
    return by_path, [e.path for e in archive.iter_efficient() if is_html(e)]


def worker_main(args: argparse.Namespace) -> None:
    ours = args.worker == "ours"
    ops = Ops(ours)
    queries = [q.strip() for q in Path(args.queries).read_text(encoding="utf-8").splitlines()
               if q.strip() and not q.startswith("#")]
    out: dict[str, object] = {"impl": args.worker, "pss_start_kib": pss_kib()}
    if args.mem_threads:
        out.update(memory_run(ops, args.archive, queries, args.mem_threads))
        print(json.dumps(out))
        return

    clock = time.perf_counter
    t = clock()
    archive = ops.Archive(args.archive)
    out["open_ms"] = (clock() - t) * 1e3
    t = clock()
    searcher = ops.Searcher(archive)
    ops.search(archive, searcher, queries[0])
    out["first_search_ms"] = (clock() - t) * 1e3
    t = clock()
    suggester = ops.SuggestionSearcher(archive)
    ops.suggest(suggester, queries[0])
    out["first_suggest_ms"] = (clock() - t) * 1e3

    out["search_p50_ms"] = p50(timed_passes(lambda q: ops.search(archive, searcher, q),
                                            queries, args.passes)) * 1e3
    out["suggest_p50_ms"] = p50(timed_passes(lambda q: ops.suggest(suggester, q),
                                             queries, args.passes)) * 1e3
    if ours:
        out["snippets_p50_ms"] = p50(timed_passes(
            lambda q: ops.search(archive, searcher, q, snippets=True), queries,
            max(1, args.passes // 2))) * 1e3
        out.update(text_run(archive, args.text_pages, args.passes))
        out.update(index_sizes(archive))
        out.update(entries=archive.all_entry_count, articles=archive.article_count,
                   archive_bytes=archive.filesize)
    print(json.dumps(out))


def text_run(archive, limit: int, passes: int) -> dict[str, float]:
    """Item.text on `limit` pages two ways: a sample spread over the archive
    (every k-th page in path order: nearly every page needs a cluster of its
    own decompressed, as random access does) and the first `limit` pages in
    cluster order (how a corpus job reads: each cluster decompressed once)."""
    by_path, by_cluster = html_paths(archive)
    step = max(1, len(by_path) // limit)
    out: dict[str, float] = {"html_pages": len(by_path)}
    for name, paths in (("text", by_path[::step][:limit]), ("text_seq", by_cluster[:limit])):
        html_bytes = sum(archive.get_entry_by_path(p).get_item().size for p in paths)
        best, out_bytes = None, 0
        for _ in range(max(3, passes)):
            t = time.perf_counter()
            n = 0
            for p in paths:  # each pass looks the entry up again, as a reader would
                n += len(archive.get_entry_by_path(p).get_item().text.encode("utf-8"))
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
            out_bytes = n
        out.update({f"{name}_pages": len(paths), f"{name}_pages_per_s": len(paths) / best,
                    f"{name}_mb_per_s": out_bytes / best / 1e6,
                    f"{name}_html_mb_per_s": html_bytes / best / 1e6,
                    f"{name}_html_kib_per_page": html_bytes / len(paths) / 1024})
    return out


def memory_run(ops: Ops, path: str, queries: list[str], nthreads: int) -> dict[str, object]:
    errors: list[str] = []

    def body() -> None:
        try:
            archive = ops.Archive(path)
            searcher = ops.Searcher(archive)
            suggester = ops.SuggestionSearcher(archive)
            for q in queries:
                ops.search(archive, searcher, q)
                if ops.ours:
                    ops.search(archive, searcher, q, snippets=True)
                ops.suggest(suggester, q)
            keep.append((archive, searcher, suggester))  # measured while still open
        except BaseException as e:  # noqa: BLE001 - reported
            errors.append(repr(e))

    keep: list[object] = []
    threads = [threading.Thread(target=body) for _ in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise SystemExit("; ".join(errors))
    return {"threads": nthreads, "pss_kib": pss_kib()}


# ---------------------------------------------------------------- driver


def archives_to_use(build: bool) -> dict[str, Path]:
    sys.path.insert(0, str(ROOT / "tools"))
    import corpus

    small = corpus.ensure_debian_doc_zim("python3.11-doc", install=build)
    big = corpus.combined_doc_zim_path("rustjava") if not build else \
        corpus.ensure_combined_doc_zim("rustjava", install=True)
    if not big.is_file():
        raise SystemExit(f"{big} is not built: run  python3 tools/corpus.py --install --combined "
                         "rustjava  (minutes), or pass --build")
    return {"python3.11-doc": small, "rustjava": big}


def run_worker(py: str, impl: str, zim: Path, key: str, extra: list[str]) -> dict:
    cmd = [py, str(Path(__file__).resolve()), "--worker", impl, "--archive", str(zim),
           "--queries", str(HERE / "queries" / f"{key}.txt"), *extra]
    return _harness.run_worker(cmd, impl, ROOT, 900, f"{impl} on {key}")


def load1() -> float:
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=("ours", "peer"), help=argparse.SUPPRESS)
    ap.add_argument("--archive", help=argparse.SUPPRESS)
    ap.add_argument("--queries", help=argparse.SUPPRESS)
    ap.add_argument("--mem-threads", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--passes", type=int, default=5, help="timed passes over the queries")
    ap.add_argument("--text-pages", type=int, default=TEXT_PAGES)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 trial, 2 passes")
    ap.add_argument("--build", action="store_true",
                    help="build (and apt-get install) what is missing, the big archive included")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker_main(args)
        return
    if args.quick:
        args.trials, args.passes = 1, 2

    t_start = time.monotonic()
    zims = archives_to_use(args.build)
    impls = {"ours": sys.executable}
    if not args.no_peer and PEER_PYTHON.exists():
        impls["peer"] = str(PEER_PYTHON)
    loads = [load1()]
    runs: list[dict] = []
    for trial in range(args.trials):
        for key, zim in zims.items():
            for impl, py in impls.items():
                r = run_worker(py, impl, zim, key, ["--passes", str(args.passes),
                                                    "--text-pages", str(args.text_pages)])
                r.update(trial=trial, archive=key, load1=load1())
                runs.append(r)
                log(f"trial {trial} {key:15} {impl:4}: open {r['open_ms']:.2f} ms, search p50 "
                    f"{r['search_p50_ms']:.3f} ms, suggest p50 {r['suggest_p50_ms']:.3f} ms"
                    + (f", snippets p50 {r['snippets_p50_ms']:.2f} ms, text "
                       f"{r['text_pages_per_s']:.0f} / {r['text_seq_pages_per_s']:.0f} pages/s"
                       if impl == "ours" else "")
                    + f" (load {r['load1']:.2f})")
        loads.append(load1())
    mem: list[dict] = []
    for n in (1, 4):
        for key, zim in zims.items():
            for impl, py in impls.items():
                r = run_worker(py, impl, zim, key, ["--mem-threads", str(n)])
                r.update(archive=key)
                mem.append(r)
                log(f"memory {key:15} {impl:4} x{n}: PSS {r['pss_kib'] / 1024:.1f} MiB "
                    f"(at start {r['pss_start_kib'] / 1024:.1f})")
    loads.append(load1())
    duration = time.monotonic() - t_start
    report = summarize(zims, impls, runs, mem, loads, duration, args)
    if args.no_write:
        print(report["markdown"])
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "size_scaling.json").write_text(json.dumps(
        {k: v for k, v in report.items() if k != "markdown"}, indent=1), encoding="utf-8")
    (RESULTS / "size_scaling.md").write_text(report["markdown"], encoding="utf-8")
    print(report["markdown"])
    log(f"wrote bench/results/size_scaling.md and .json in {duration:.0f} s")


def summarize(zims, impls, runs, mem, loads, duration, args) -> dict:
    def med(impl: str, key: str, field: str) -> float | None:
        xs = [r[field] for r in runs if r["impl"] == impl and r["archive"] == key and field in r]
        return statistics.median(xs) if xs else None

    def memv(impl: str, key: str, n: int, field: str = "pss_kib") -> float | None:
        xs = [r[field] for r in mem if r["impl"] == impl and r["archive"] == key and r["threads"] == n]
        return xs[0] / 1024 if xs else None

    small, big = list(zims)
    facts = {k: {f: med("ours", k, f) for f in ("archive_bytes", "entries", "articles",
                                                "fulltext_index_bytes", "title_index_bytes",
                                                "html_pages", "text_html_kib_per_page",
                                                "text_seq_html_kib_per_page")} for k in zims}
    index_growth = facts[big]["fulltext_index_bytes"] / facts[small]["fulltext_index_bytes"]
    rows = []

    def row(name: str, impl: str, a: float | None, b: float | None, unit: str, higher_better=False,
            note: str = "") -> None:
        if a is None or b is None:
            return
        growth = (a / b if higher_better else b / a) if a and b else float("nan")
        rows.append({"cost": name, "impl": impl, "small": a, "big": b, "unit": unit,
                     "growth": growth, "faster_than_index": growth > index_growth, "note": note})

    for impl in impls:
        row("open (Archive())", impl, med(impl, small, "open_ms"), med(impl, big, "open_ms"), "ms")
        row("first search (Searcher + 1 query)", impl, med(impl, small, "first_search_ms"),
            med(impl, big, "first_search_ms"), "ms")
        row("search p50, 10 hits, no snippets", impl, med(impl, small, "search_p50_ms"),
            med(impl, big, "search_p50_ms"), "ms")
        row("search p50, 10 hits + snippets", impl, med(impl, small, "snippets_p50_ms"),
            med(impl, big, "snippets_p50_ms"), "ms")
        row("first suggestion (SuggestionSearcher + 1 query)", impl,
            med(impl, small, "first_suggest_ms"), med(impl, big, "first_suggest_ms"), "ms")
        row("suggestions p50, 10", impl, med(impl, small, "suggest_p50_ms"),
            med(impl, big, "suggest_p50_ms"), "ms")
        for n in (1, 4):
            a, b = memv(impl, small, n), memv(impl, big, n)
            a0, b0 = memv(impl, small, n, "pss_start_kib"), memv(impl, big, n, "pss_start_kib")
            row(f"PSS after the run, {n} thread(s)", impl, a, b, "MiB")
            if a is not None and a0 is not None:
                row(f"PSS added by the run, {n} thread(s)", impl, a - a0, b - b0, "MiB")
        for pre, how in (("text", "spread sample"), ("text_seq", "cluster order")):
            a, b = med(impl, small, f"{pre}_pages_per_s"), med(impl, big, f"{pre}_pages_per_s")
            row(f"Item.text ms per page, {how} (1 thread)", impl, a and 1e3 / a, b and 1e3 / b, "ms")
            row(f"Item.text ms per MB of HTML, {how}", impl,
                *(x and 1e3 / x for x in (med(impl, small, f"{pre}_html_mb_per_s"),
                                          med(impl, big, f"{pre}_html_mb_per_s"))), "ms")

    size_rows = [
        ("archive size", "archive_bytes", 2**20, "MiB"),
        ("entries (all namespaces)", "entries", 1, ""),
        ("articles (HTML pages)", "articles", 1, ""),
        ("full-text index (X/fulltext/xapian)", "fulltext_index_bytes", 2**20, "MiB"),
        ("title index (X/title/xapian)", "title_index_bytes", 2**20, "MiB"),
        ("HTML pages stored (not redirects)", "html_pages", 1, ""),
        ("HTML per page, spread sample", "text_html_kib_per_page", 1, "KiB"),
        ("HTML per page, cluster-order sample", "text_seq_html_kib_per_page", 1, "KiB"),
    ]
    lines = [
        "# Size scaling: python3.11-doc to the ~42,000-page rust-doc + openjdk-17-doc archive", "",
        f"Generated by `python3 bench/size_scaling.py {' '.join(sys.argv[1:])}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {duration:.0f} s; "
        f"{os.cpu_count()} cores shared with other jobs, 1-minute load average "
        f"{min(loads):.2f}-{max(loads):.2f} during the run. Medians of {args.trials} interleaved "
        f"trials (fresh process each), {args.passes} timed passes over the queries after a warm-up pass.",
        "",
        f"Small: `{zims[small].name}`. Big: `{zims[big].name}` (tools/corpus.py "
        "`--combined rustjava`). Queries: `bench/queries/python3.11-doc.txt` and `rustjava.txt` "
        "(each archive's own list, so per-query costs compare topics, not the same words).", "",
        "| archive | small | big | growth |", "|---|---:|---:|---:|",
    ]
    for name, field, div, unit in size_rows:
        a, b = facts[small][field], facts[big][field]
        if a and b:
            fmt = (lambda v: f"{v:,.0f}") if unit == "" else (lambda v: f"{v / div:,.1f} {unit}")
            lines.append(f"| {name} | {fmt(a)} | {fmt(b)} | {b / a:.1f}x |")
    lines += ["", f"Growth of each cost (big / small; for MB/s, small / big), against the full-text "
              f"index's {index_growth:.1f}x. ⚠ = grows faster than the index.", "",
              "| cost | impl | small | big | growth | |", "|---|---|---:|---:|---:|---|"]
    label = {"ours": "libzim-c", "peer": "python-libzim 3.13.1"}
    for r in rows:
        flag = "⚠" if r["faster_than_index"] else ""
        lines.append(f"| {r['cost']} | {label[r['impl']]} | {r['small']:.3f} {r['unit']} | "
                     f"{r['big']:.3f} {r['unit']} | {r['growth']:.2f}x | {flag} |")
    ratios = []
    for key in zims:
        for f, name in (("open_ms", "open"), ("search_p50_ms", "search p50"),
                        ("suggest_p50_ms", "suggestions p50")):
            a, b = med("ours", key, f), med("peer", key, f)
            if a and b:
                ratios.append(f"{key} {name}: python-libzim / libzim-c = {b / a:.2f}")
    if ratios:
        lines += ["", "Ratios to python-libzim 3.13.1 (same process shape): " + "; ".join(ratios) + "."]
    lines += ["", "## Reading it", "",
              "- Per-query costs compare each archive's own query list: the rustjava queries "
              "match more pages (common words over 42,000 pages), so their posting lists are longer.",
              "- Open: a few milliseconds of wall time either way, dominated by noise on a shared "
              "machine; in instructions (callgrind, `Archive(path)` minus the import) it was 6.2 M "
              "(small) and 10.3 M (big) for libzim-c, 6.1 M and 9.6 M for python-libzim 3.13.1: "
              "1.6x for 40x the entries.",
              "- Snippets and Item.text cost per page, not per archive: most of a snippet search is "
              "reading and decompressing the hits' clusters and walking their HTML, and the big "
              "archive's pages are smaller (see the HTML per page rows). Per MB of HTML, the spread "
              "sample decompresses about one cluster per page on the big archive (pages scattered "
              "over many clusters) but shares clusters on the small one (400 of its 530 pages); in "
              "cluster order (iter_efficient) the difference is the markup density of rustdoc and "
              "javadoc pages.",
              "- PSS is bounded by the cluster caches (ZIM_CLUSTERCACHE clusters, for the shim's "
              "cache and libzim's own), not by the archive: the small archive's PSS is the higher "
              "one (its pages are 3-5x larger; cluster sizes not measured). 4 threads x 4 "
              "Archives hold 4 libzim caches. python-libzim reads no content in this run (no snippets), hence its flat PSS.",
              ""]
    return {"archives": {k: str(v) for k, v in zims.items()}, "facts": facts,
            "index_growth": index_growth, "rows": rows, "runs": runs, "memory": mem,
            "loads": loads, "duration_s": duration, "argv": sys.argv[1:],
            "markdown": "\n".join(lines)}


if __name__ == "__main__":
    main()
