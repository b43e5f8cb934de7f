"""``zim demo``, and the demo archive, built by the checkout's tools/corpus.py."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from libzim import ZimError
from libzim.search import Searcher

from .archives import open_archive
from .errors import PROG, CLIError, one_line, print_error
from .output import human_size
from .search import check_limit, digest, print_results, run_search
from .workers import Stats, add_cluster_cache_option, apply_cluster_cache, hammer


DEMO_PACKAGE = "python3-doc"  # the default Python's docs on Debian 12 and 13


DEMO_QUERIES = (
    "asyncio event loop",
    "list comprehension",
    "unicode strings",
    "thread safety",
    "regular expression groups",
)


def checkout() -> Path | None:
    """The source checkout this package runs from (an in-place build), or None when installed."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "tools" / "corpus.py").is_file() and (root / "bench" / "run.py").is_file() else None


def load_corpus(hint: str) -> Any:
    """tools/corpus.py of the checkout, loaded by path: it is not part of the installed package."""
    root = checkout()
    if root is None:
        raise CLIError(
            f"cannot build the {DEMO_PACKAGE} archive: an installed libzim-c has no archive builder; "
            f"give an archive with a full-text index (zim demo ARCHIVE), or run this from a libzim-c source "
            f"checkout (bash tools/bootstrap.sh installs zim-tools and {DEMO_PACKAGE}){hint}"
        )
    spec = importlib.util.spec_from_file_location("_libzim_c_corpus", root / "tools" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def demo_archive(cache: str | None, hint: str = "") -> Path:
    """The path of the demo archive (the python3-doc Debian package as a ZIM), built and cached on
    first use; CLIError if it cannot be built."""
    corpus = load_corpus(hint)

    def announce(line: str) -> None:  # the long steps of the first run, each said before it starts
        sys.stderr.write(f"{PROG}: {line}\n")
        sys.stderr.flush()

    try:
        return Path(corpus.ensure_debian_doc_zim(DEMO_PACKAGE, cache, install=True, announce=announce))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        raise CLIError(f"cannot build the {DEMO_PACKAGE} archive: {one_line(e)}")


def queries_from_titles(archive: Any, count: int = len(DEMO_QUERIES), look: int = 40) -> list[str]:
    """Up to ``count`` queries for an archive the demo does not know: the titles (first three
    words) of HTML articles, one from each of ``count`` evenly spaced stretches of entry ids,
    looking at ``look`` entries at most in each, so a large archive costs what a small one does."""
    total = archive.entry_count
    queries: list[str] = []
    for k in range(count):
        start = k * total // count
        for i in range(start, min(start + look, total)):
            try:
                entry = archive._get_entry_by_id(i)
                if entry.is_redirect or not entry.get_item().mimetype.startswith("text/html"):
                    continue
                words = " ".join(entry.title.split()[:3])
            except ZimError:  # a damaged entry: look at the next one
                continue
            if words and words not in queries:
                queries.append(words)
                break
    return queries


def load_average() -> float | None:
    """The 1-minute load average, or None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


# The N-thread run "got the CPUs" when its threads ran for at least this share of
# the cores they could use (min(N, CPUs)); below it, other processes held them.
GOT_THE_CPUS = 0.9


def throughput_summary(runs: list[Stats], load: float | None, cpus: int | None) -> list[str]:
    """What the throughput runs (1 thread, then N) mean, given the CPU time they got.

    Wall-clock speedup needs the cores: CPU time over wall time says how many
    the threads actually got, and only when they got fewer than they could use
    (other processes held the rest) is the machine called busy and the speedup
    not meaningful. The load average, read before the runs, is reported but not
    used to decide: it lags, and counts processes that may leave the cores idle.
    CPU time per search does not depend on either: equal CPU per search in 1 and
    N threads means the N threads did not slow each other down.
    """
    lines = []
    last = runs[-1]
    usable = min(last.threads, cpus or last.threads)
    busy = last.cores_used < GOT_THE_CPUS * usable
    if len(runs) == 2 and runs[0].per_second > 0:
        one, many = runs
        lines.append(f"speedup with {many.threads} threads: {many.per_second / one.per_second:.2f}x wall clock "
                     f"(the {many.threads} threads got {many.cores_used:.2f} CPUs of {cpus})")
        lines.append(f"CPU per search 1 thread: {one.cpu_per_call * 1000:.2f} ms, {many.threads} threads: "
                     f"{many.cpu_per_call * 1000:.2f} ms")
    where = f"load average {load:.2f} on {cpus} CPUs" if load is not None else "load average unknown"
    if busy:
        got = (f"the {last.threads} threads got {last.cores_used:.2f} CPUs of the {usable} they could use"
               if last.threads > 1 else f"the thread got {last.cores_used:.2f} of a CPU")
        what = "the wall-clock speedup is not meaningful" if len(runs) == 2 else "searches/s is below what an idle machine gives"
        lines.append(f"{where}: the machine is busy ({got}), so {what}; compare the CPU time per search")
    else:
        lines.append(where)
    return lines


def cmd_demo(args: argparse.Namespace) -> int:
    """``zim demo``: search the demo archive (or ARCHIVE) from one thread and then several,
    checking that the answers agree, and print the throughput; returns the exit status."""
    threads = args.threads if args.threads is not None else max(2, min(8, os.cpu_count() or 2))
    if threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    check_limit(args.limit)
    if args.duration <= 0:
        raise CLIError("--duration must be > 0", 2)
    cache_line = apply_cluster_cache(args.cluster_cache)
    path = Path(args.archive) if args.archive else demo_archive(args.cache)
    archive = open_archive(path)
    if not archive.has_fulltext_index:
        raise CLIError(f"{path}: the archive has no full-text index, which zim demo searches")
    queries = tuple(args.query or (DEMO_QUERIES if not args.archive else queries_from_titles(archive)))
    if not queries:
        raise CLIError(f"{path}: found no article titles to search for; give queries with --query", 1)
    searcher = Searcher(archive)
    print(f"Archive: {path}")
    print(f"  {archive.article_count:,} articles, {human_size(archive.filesize)}, full-text index")
    print()

    reference = []
    for q in queries:
        estimated, results = run_search(searcher, q, args.limit, True)
        reference.append(digest(results))
        print_results(q, estimated, results, 1, args.limit)
        print()

    def one(i: int) -> tuple[Any, ...]:
        return digest(run_search(searcher, queries[i], args.limit, True)[1])

    print(
        f"Throughput: the {len(queries)} queries above, top {args.limit} with snippets, "
        f"{args.duration:g} s per run, one Searcher shared by all threads; {cache_line}"
    )
    sys.stdout.flush()
    load = load_average()  # before the runs: the others' load and at most our one thread
    runs = []
    counts = [1] if threads == 1 else [1, threads]
    consistent = True
    for n in counts:
        stats, seen = hammer(one, len(queries), n, duration=args.duration)
        ok = all(values == {reference[i]} for i, values in seen.items())
        consistent &= ok
        runs.append(stats)
        print(f"  {stats.line()}" + ("" if ok else "  RESULTS DIFFER"))
        sys.stdout.flush()
    for line in throughput_summary(runs, load, os.cpu_count()):
        print(f"  {line}")
    if not consistent:
        print_error("threaded searches returned results different from the single-threaded ones")
        return 1
    if not args.archive:
        # Issue 39: where the built archive is, and its book name in zim serve's URLs.
        zim = sys.argv[0] if os.path.basename(sys.argv[0]) == "zim" else f"{sys.executable} -m libzim"
        if os.path.isabs(zim) and zim.startswith(os.getcwd() + os.sep):
            zim = os.path.relpath(zim)  # .venv/bin/zim, as the README runs it
        print(f"\nThe demo archive is {path} (book {path.stem!r}); serve it with: {zim} serve {path}")
    return 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim demo`` and its options."""
    p = sub.add_parser(
        "demo",
        help="search the Python documentation (or ARCHIVE) from many threads",
        description=(
            "Search an archive for a few queries with snippets, then measure searches/s from 1 and N "
            "threads sharing one Searcher, checking that every thread's answers equal the first. "
            f"Without ARCHIVE: a ZIM of Debian's {DEMO_PACKAGE}, built once and cached, which needs a "
            "libzim-c source checkout (its tools/corpus.py) and zim-tools; an installed libzim-c "
            "runs the demo on any ARCHIVE with a full-text index (queries: --query, else titles "
            "of its articles)."
        ),
    )
    p.add_argument("archive", metavar="ARCHIVE", nargs="?", help="a ZIM file with a full-text index "
                   f"(default: the {DEMO_PACKAGE} archive, built from a source checkout)")
    p.add_argument("--query", "-q", action="append", metavar="Q",
                   help="a query to search for (repeat it for more; default: the demo's own for the "
                        f"{DEMO_PACKAGE} archive, titles of its articles for another)")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="threads for the throughput run (default: CPUs, 2..8)")
    p.add_argument("--cache", metavar="DIR", help="cache directory for the built archive")
    p.add_argument("--limit", "-n", type=int, default=3, metavar="N", help="results shown per query (default 3)")
    p.add_argument("--duration", type=float, default=2.0, metavar="S", help="seconds per throughput run (default 2)")
    add_cluster_cache_option(p)
    p.set_defaults(func=cmd_demo)
