"""``zim bench``: the checkout's bench/run.py, or a small built-in benchmark."""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from libzim.search import Searcher

from .capture import quiet
from .demo import checkout, demo_archive
from .errors import PROG, CLIError, print_error
from .output import print_json
from .search import digest, run_search, searchable
from .workers import add_cluster_cache_option, apply_cluster_cache, hammer


BENCH_QUERIES = (
    "function",
    "file",
    "error",
    "list",
    "string",
    "thread",
    "return value",
    "class",
    "system",
    "time",
    "data",
    "unicode",
)


def repo_bench() -> Path | None:
    """The project's bench/run.py when running from a source checkout, else None."""
    root = checkout()
    return None if root is None else root / "bench" / "run.py"


def parse_thread_list(text: str) -> list[int]:
    """Parse --threads ("1,2,4") into a list of positive ints; CLIError (usage) otherwise."""
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise CLIError(f"--threads: expected comma-separated integers, got {text!r}", 2)
    if not values or any(v < 1 for v in values):
        raise CLIError(f"--threads: expected positive integers, got {text!r}", 2)
    return values


def builtin_bench(paths: Sequence[str], threads: list[int], duration: float, limit: int, as_json: bool,
                  cluster_cache_mib: int) -> int:
    """Run the built-in benchmark (fixed queries at each thread count, without and with snippets) and
    print searches/s; returns the exit status."""
    cache_line = apply_cluster_cache(cluster_cache_mib)
    with quiet():
        archives, without = searchable(paths)
        searcher = Searcher(archives)
    queries = BENCH_QUERIES

    def run(i: int, snippets: bool) -> tuple[Any, ...]:
        return digest(run_search(searcher, queries[i], limit, snippets)[1])

    # Reference results, single-threaded; also warms the caches.
    reference = {snip: [run(i, snip) for i in range(len(queries))] for snip in (False, True)}
    hits = sum(len(d) for d in reference[False])
    if not as_json:
        print(
            f"built-in quick benchmark: {len(queries)} queries, top {limit} results each "
            f"({hits} results in all), {duration:g} s per configuration"
        )
        print("archives: " + ", ".join(str(a.filename) for a in archives))
        print(cache_line)
        print(f"{'threads':>7}  {'snippets':>8}  {'searches':>8}  {'searches/s':>10}  {'p50 ms':>8}  {'p95 ms':>8}")
        sys.stdout.flush()
    rows = []
    inconsistent = False
    for snip in (False, True):
        for n in threads:
            stats, seen = hammer(functools.partial(run, snippets=snip), len(queries), n, duration=duration)
            ok = all(values == {reference[snip][i]} for i, values in seen.items())
            inconsistent |= not ok
            row = dict(stats.as_dict(), snippets=snip, consistent=ok)
            rows.append(row)
            if not as_json:
                print(
                    f"{n:>7}  {'yes' if snip else 'no':>8}  {stats.count:>8}  {stats.per_second:>10,.1f}  "
                    f"{stats.p50 * 1000:>8.2f}  {stats.p95 * 1000:>8.2f}" + ("" if ok else "  RESULTS DIFFER")
                )
                sys.stdout.flush()
    if as_json:
        print_json(
            {
                "archives": [str(a.filename) for a in archives],
                "not_searched": without,
                "queries": list(queries),
                "limit": limit,
                "duration": duration,
                "cluster_cache_mib": cluster_cache_mib,
                "runs": rows,
            }
        )
    if inconsistent:
        print_error("some searches returned results different from the single-threaded reference")
        return 1
    return 0


def cmd_bench(args: argparse.Namespace, extra: list[str]) -> int:
    """``zim bench``: bench/run.py in a checkout without ARCHIVE arguments, else the built-in
    benchmark; returns the exit status."""
    run_py = None if (args.builtin or args.archives) else repo_bench()
    if run_py is not None:
        if args.json:
            raise CLIError("--json is for the built-in benchmark (give ARCHIVE paths or --builtin)", 2)
        cmd = [sys.executable, str(run_py)]
        if args.quick:
            cmd.append("--quick")
        if args.threads is not None:
            cmd += ["--threads", args.threads]
        if args.duration is not None:
            cmd += ["--duration", str(args.duration)]
        cmd += extra
        sys.stderr.write(f"{PROG}: running {' '.join(cmd)}\n")
        sys.stderr.flush()
        return subprocess.call(cmd)
    if extra:
        raise CLIError(f"unrecognized arguments: {' '.join(extra)}", 2)
    threads = parse_thread_list(args.threads or "1,2")
    duration = args.duration if args.duration is not None else (0.5 if args.quick else 1.0)
    if duration <= 0:
        raise CLIError("--duration must be > 0", 2)
    paths = list(args.archives)
    if not paths:
        paths = [str(demo_archive(args.cache, ", or give ARCHIVE paths"))]
    return builtin_bench(paths, threads, duration, args.limit, args.json, args.cluster_cache)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim bench`` and its options."""
    p = sub.add_parser(
        "bench",
        help="benchmark search throughput",
        description=(
            "In a source checkout without ARCHIVE arguments, run the project's benchmark "
            "(bench/run.py; extra options are passed on to it). Given ARCHIVE paths, or "
            "with --builtin, run a small built-in benchmark: a fixed set of queries, 1 and 2 "
            "threads, without and with snippets, printing searches/s."
        ),
    )
    p.add_argument("archives", metavar="ARCHIVE", nargs="*", help="ZIM files with a full-text index")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--builtin", action="store_true", help="use the built-in benchmark even in a checkout")
    p.add_argument("--threads", default=None, metavar="LIST", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="seconds per configuration (built-in default 1, 0.5 with --quick)")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="results per search (built-in; default 10)")
    p.add_argument("--cache", metavar="DIR", help="where the demo archive is cached (built-in without ARCHIVE)")
    p.add_argument("--json", action="store_true", help="print JSON (built-in benchmark)")
    add_cluster_cache_option(p)
    p.set_defaults(func=cmd_bench)
