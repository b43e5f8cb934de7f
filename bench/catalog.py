"""The OPDS catalog at 1,000 and 10,000 books: the book index's build time and memory, and
the latency of catalog queries, in the index and through the server.

    python3 bench/catalog.py [--books 1000 10000] [--repeat 200] [--out bench/results/catalog.md]

The books are synthetic library-file records (no archives: remote books, which the server
lists in catalog-only mode), with a seeded random vocabulary of titles, descriptions, 12
languages, 8 categories and tags, so the run is the same every time. Memory is the process's
resident set before and after building the index (Xapian's in-memory database is C++, which
tracemalloc does not see). Latencies are the median and 95th percentile of ``--repeat``
calls, each query in turn; through the server, one in-process client (starlette's
TestClient), whole responses. Bounded: at most ``--repeat`` calls per query and size.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from xml.sax.saxutils import quoteattr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = ("ray charles jazz music history science biology chemistry physics mathematics football "
         "cooking travel africa europe asia america ocean mountain river city village language "
         "poetry novel theatre cinema medicine health computer software network energy climate").split()
LANGS = ("eng", "fra", "deu", "spa", "ita", "por", "rus", "ara", "hin", "zho", "jpn", "swa")
CATS = ("wikipedia", "wiktionary", "wikibooks", "gutenberg", "ted", "stack_exchange", "phet", "other")
QUERIES = [
    ("match all (first page)", ""),
    ("q=one word", "q=jazz"),
    ("q=two words", "q=ray%20charles"),
    ('q="phrase"', "q=%22ray%20charles%22"),
    ("q=title:prefix", "q=title:jazz"),
    ("q=word -exclusion", "q=music%20-jazz"),
    ("lang=", "lang=fra"),
    ("category=a,b", "category=ted,phet"),
    ("tag= and notag=", "tag=_videos:yes&notag=_pictures:no"),
    ("q= and lang=, count=-1", "q=science&lang=eng&count=-1"),
]


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def library_xml(n: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        title = " ".join(rnd.choice(WORDS) for _ in range(3)).title()
        desc = " ".join(rnd.choice(WORDS) for _ in range(12))
        cat = rnd.choice(CATS)
        tags = f"{cat};_category:{cat};_pictures:{rnd.choice(('yes', 'no'))};_videos:{rnd.choice(('yes', 'no'))}"
        rows.append(
            f'  <book id="book-{i:06d}" path="./missing/book{i}.zim" url="https://example.org/book{i}.zim" '
            f"title={quoteattr(title)} description={quoteattr(desc)} language={quoteattr(rnd.choice(LANGS))} "
            f'creator="Bench" publisher="Bench" date="2026-01-01" name="bench_{i}" tags={quoteattr(tags)} '
            f'articleCount="{rnd.randint(10, 10**6)}" mediaCount="{rnd.randint(0, 10**4)}" '
            f'size="{rnd.randint(100, 10**8)}" />')
    return '<library version="20110515">\n' + "\n".join(rows) + "\n</library>\n"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def run(n: int, repeat: int) -> dict[str, object]:
    warnings.filterwarnings("ignore")
    from starlette.datastructures import QueryParams
    from starlette.testclient import TestClient

    from libzim.serve import create_app
    from libzim.serve.bookquery import index_of
    from libzim.serve.core import Options
    from libzim.serve.libraryfile import Source

    with tempfile.TemporaryDirectory() as tmp:
        lf = Path(tmp) / "library.xml"
        lf.write_text(library_xml(n))
        t0 = time.perf_counter()
        library = Source(library_files=[str(lf)]).load()
        load_s = time.perf_counter() - t0
    before = rss_kib()
    t0 = time.perf_counter()
    idx = index_of(library)
    build_s = time.perf_counter() - t0
    index_kib = rss_kib() - before
    out: dict[str, object] = {"books": n, "load_s": load_s, "build_s": build_s, "index_kib": index_kib,
                              "index": {}, "http": {}}
    from libzim.serve.bookquery import FILTER_PARAMS
    for label, qs in QUERIES:
        q = QueryParams(qs)
        params = {k: q.get(k) for k in FILTER_PARAMS}
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            found = idx.select(params, True)
            times.append(time.perf_counter() - t0)
        out["index"][label] = (statistics.median(times) * 1e3, percentile(times, 0.95) * 1e3, len(found))
    app = create_app(library, threads=2, options=Options(catalog_only=True))
    with TestClient(app) as c:
        for label, qs in QUERIES:
            times, size = [], 0
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = c.get("/catalog/v2/entries" + ("?" + qs if qs else ""))
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200, (qs, r.status_code)
                size = len(r.content)
            out["http"][label] = (statistics.median(times) * 1e3, percentile(times, 0.95) * 1e3, size)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--books", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lines = [f"# Catalog queries at {', '.join(f'{n:,}' for n in args.books)} books (bench/catalog.py)", "",
             f"Load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; "
             f"{args.repeat} calls per query; times in ms (median / p95).", ""]
    for n in args.books:
        r = run(n, args.repeat)
        lines += [f"## {n:,} books", "",
                  f"Library file read: {r['load_s']:.2f} s; index built in {r['build_s']:.2f} s, "
                  f"{r['index_kib'] / 1024:.1f} MiB resident ({r['index_kib'] * 1024 / n:,.0f} bytes a book).", "",
                  "| query | index: median | p95 | books | HTTP: median | p95 | bytes |", "|---|---|---|---|---|---|---|"]
        for label, _ in QUERIES:
            im, ip, nb = r["index"][label]  # type: ignore[index]
            hm, hp, size = r["http"][label]  # type: ignore[index]
            lines.append(f"| {label} | {im:.3f} | {ip:.3f} | {nb:,} | {hm:.2f} | {hp:.2f} | {size:,} |")
        lines.append("")
    lines.append(f"Load average at end: {os.getloadavg()[0]:.2f}.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
