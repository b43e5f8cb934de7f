#!/usr/bin/env python3
"""Article text: libzim-c's Item.text against python-libzim + Python HTML parsers.

    python3 bench/text.py [--pages N] [--passes P] [ARCHIVE.zim ...]

Default archive: the python3.11-doc archive tools/corpus.py caches in
~/.cache/libzim-c.  The peers run in a venv of their own (bench/.cache/
venv-text, created here from PyPI: libzim==3.13.1, beautifulsoup4, lxml,
selectolax, resiliparse, trafilatura; see bench/requirements.txt); ours runs
from this clone.  Every implementation reads the same pages (every k-th HTML
article, in path order) and each (implementation, threads) pair runs in a
subprocess of its own.  Both bindings run at their default cluster cache
(16 MiB decoded).

Throughput: the best of P passes over all pages, pages split evenly among
1, 2 and 4 threads; pages/s and MB/s of text produced (UTF-8).  Implementations:

- ours:         item.text (main text: navigation dropped), GIL released
- bs4-lxml:     BeautifulSoup(content, "lxml"), script/style removed, get_text("\\n")
- lxml:         lxml.html.fromstring(content).text_content()
- selectolax:   LexborHTMLParser(content) (selectolax 1.0 dropped Modest), script/style
                stripped, body.text(separator="\\n")
- resiliparse:  extract_plain_text(HTMLTree.parse_from_bytes(content), main_content=True)

Quality, on a sample of the pages: for each page, the share of the other
extractor's distinct words (lowercase \\w+) that ours also has, and the share
of ours that it has; median and 10th percentile over pages.  Ours with
main_only=True against trafilatura (main-content extraction) and resiliparse
(main_content=True); ours with main_only=False against BeautifulSoup's visible
text (script and style removed).

Writes bench/results/text.md and text.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
VENV = CACHE / "venv-text"
RESULTS = HERE / "results"
PEER_PACKAGES = ["libzim==3.13.1", "beautifulsoup4", "lxml", "selectolax", "resiliparse",
                 "trafilatura", "lxml_html_clean"]
IMPLS = ["ours", "bs4-lxml", "lxml", "selectolax", "resiliparse"]
THREADS = [1, 2, 4]


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- extractors

def extractor(name: str):
    """A function bytes -> str for a peer, or item -> str for ours."""
    if name == "ours":
        return lambda item: item.text
    if name == "ours-all":
        return lambda item: item.get_text(main_only=False)
    if name == "bs4-lxml":
        from bs4 import BeautifulSoup

        def bs4_text(data: bytes) -> str:
            soup = BeautifulSoup(data, "lxml")
            for t in soup(["script", "style"]):
                t.decompose()
            return soup.get_text("\n")
        return bs4_text
    if name == "lxml":
        import lxml.html
        return lambda data: lxml.html.fromstring(data).text_content()
    if name == "selectolax":
        from selectolax.lexbor import LexborHTMLParser

        def sx_text(data: bytes) -> str:
            tree = LexborHTMLParser(data)
            tree.strip_tags(["script", "style"])
            body = tree.body
            return body.text(separator="\n") if body is not None else ""
        return sx_text
    if name == "resiliparse":
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree
        return lambda data: extract_plain_text(HTMLTree.parse_from_bytes(data, "utf-8"),
                                               main_content=True)
    if name == "trafilatura":
        import trafilatura
        return lambda data: trafilatura.extract(data.decode("utf-8", "replace")) or ""
    raise ValueError(name)


def worker(args: argparse.Namespace) -> None:
    """One (implementation, threads) measurement; prints a JSON line."""
    import libzim
    from libzim.reader import Archive

    pages = json.loads(Path(args.pages_file).read_text())
    archives = {p: Archive(p) for p in {zim for zim, _ in pages}}
    fn = extractor(args.impl)
    ours = args.impl.startswith("ours")

    def one(zim: str, path: str) -> int:
        item = archives[zim].get_entry_by_path(path).get_item()
        text = fn(item) if ours else fn(bytes(item.content))
        return len(text.encode("utf-8"))

    n = args.threads
    chunks = [pages[i::n] for i in range(n)]
    best = None
    cpu = None
    out_bytes = 0
    for _ in range(args.passes):
        sizes = [0] * n

        def run(k: int) -> None:
            s = 0
            for zim, path in chunks[k]:
                s += one(zim, path)
            sizes[k] = s

        threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
        sw0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
        t0, c0 = time.perf_counter(), time.process_time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        sw = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - sw0
        out_bytes = sum(sizes)
        if best is None or dt < best:
            vcsw = sw  # of the best pass: waits for the GIL or a lock put a thread to sleep
        best = dt if best is None else min(best, dt)
        cpu = dc if cpu is None else min(cpu, dc)
    print(json.dumps({"impl": args.impl, "threads": n, "seconds": best, "pages": len(pages),
                      "text_bytes": out_bytes, "cpu_seconds": cpu, "vcsw": vcsw,
                      "libzim": libzim.__file__}))


def quality_worker(args: argparse.Namespace) -> None:
    """Texts of the sample by one extractor: {zim|path: text}, as JSON."""
    from libzim.reader import Archive

    pages = json.loads(Path(args.pages_file).read_text())
    archives = {p: Archive(p) for p in {zim for zim, _ in pages}}
    fn = extractor(args.impl)
    out = {}
    for zim, path in pages:
        item = archives[zim].get_entry_by_path(path).get_item()
        out[f"{zim}|{path}"] = fn(item) if args.impl.startswith("ours") else fn(bytes(item.content))
    Path(args.out).write_text(json.dumps(out))


# ---------------------------------------------------------------- driver

def peer_python() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        log("creating", VENV)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
    return py


def run_sub(impl: str, extra: list[str], py: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if impl.startswith("ours"):
        env["PYTHONPATH"] = str(ROOT)
        cmd = [sys.executable]
    else:
        env.pop("PYTHONPATH", None)
        cmd = [str(py)]
    # cwd outside the clone: the peers must import PyPI's libzim.
    return subprocess.run([*cmd, str(Path(__file__).resolve()), "--impl", impl, *extra],
                          env=env, cwd="/", capture_output=True, text=True, check=True)


def select_pages(zims: list[Path], n: int) -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT))
    from libzim.reader import Archive

    html = []
    for zim in zims:
        a = Archive(zim)
        for i in range(a.all_entry_count):
            e = a._get_entry_by_id(i)
            if e.is_redirect:
                continue
            if e.get_item().mimetype.split(";")[0].strip() == "text/html":
                html.append((str(zim), e.path))
    step = max(1, len(html) // n)
    return html[::step][:n]


WORD = re.compile(r"\w+")


def words(s: str) -> set[str]:
    return set(WORD.findall(s.lower()))


def overlap(ours: dict[str, str], theirs: dict[str, str]) -> dict[str, float]:
    recall, precision = [], []
    for k, t in theirs.items():
        a, b = words(ours[k]), words(t)
        if b:
            recall.append(len(a & b) / len(b))
        if a:
            precision.append(len(a & b) / len(a))

    def p10(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 10] if xs else float("nan")
    return {"theirs_in_ours_median": statistics.median(recall),
            "theirs_in_ours_p10": p10(recall),
            "ours_in_theirs_median": statistics.median(precision),
            "ours_in_theirs_p10": p10(precision), "pages": len(recall)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("archives", nargs="*", type=Path)
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--quality-pages", type=int, default=150)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--impl")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pages-file")
    ap.add_argument("--quality-out")
    ap.add_argument("--reuse-rows", action="store_true",
                    help="take the throughput rows of the last run (quality only)")
    ap.add_argument("--thread-trials", type=int, metavar="K",
                    help="only ours: 1 and 2 threads (--thread-counts), K interleaved trials per "
                         "archive, medians; writes bench/results/text_threads.md/.json")
    ap.add_argument("--thread-counts", default="1,2")
    args = ap.parse_args()
    if args.impl and args.quality_out:
        args.out = args.quality_out
        quality_worker(args)
        return
    if args.impl:
        worker(args)
        return

    zims = args.archives or sorted(Path.home().glob(".cache/libzim-c/python3.11-doc*.zim"))
    if not zims:
        sys.exit("no archive: pass one, or build python3.11-doc with tools/corpus.py")
    if args.thread_trials:
        thread_scaling(zims, args)
        return
    py = peer_python()
    CACHE.mkdir(parents=True, exist_ok=True)
    pages = select_pages(zims, args.pages)
    pages_file = CACHE / "text-pages.json"
    pages_file.write_text(json.dumps(pages))
    log(f"{len(pages)} pages from {', '.join(z.name for z in zims)}")

    rows_file = CACHE / "text-rows.json"
    rows = json.loads(rows_file.read_text()) if args.reuse_rows else []
    for impl in [] if args.reuse_rows else IMPLS:
        for n in THREADS:
            # Ours takes ~0.1 s a pass: more passes for a steadier best.
            passes = args.passes * (5 if impl == "ours" else 1)
            try:
                r = run_sub(impl, ["--threads", str(n), "--passes", str(passes),
                                   "--pages-file", str(pages_file)], py)
            except subprocess.CalledProcessError as e:
                log(f"{impl} failed, left out:", e.stderr.strip().splitlines()[-1:])
                break
            row = json.loads(r.stdout.strip().splitlines()[-1])
            row["pages_per_s"] = row["pages"] / row["seconds"]
            row["mb_per_s"] = row["text_bytes"] / row["seconds"] / 1e6
            log(f"{impl:12} {n} thr: {row['pages_per_s']:8.1f} pages/s "
                f"{row['mb_per_s']:6.2f} MB/s ({row['libzim']})")
            rows.append(row)

    rows_file.write_text(json.dumps(rows))
    sample = pages[:: max(1, len(pages) // args.quality_pages)][: args.quality_pages]
    sample_file = CACHE / "text-sample.json"
    sample_file.write_text(json.dumps(sample))
    texts = {}
    for impl in ["ours", "ours-all", "trafilatura", "resiliparse", "bs4-lxml"]:
        out = CACHE / f"text-quality-{impl}.json"
        run_sub(impl, ["--pages-file", str(sample_file), "--quality-out", str(out)], py)
        texts[impl] = json.loads(out.read_text())
    quality = {
        "main vs trafilatura": overlap(texts["ours"], texts["trafilatura"]),
        "main vs resiliparse main_content": overlap(texts["ours"], texts["resiliparse"]),
        "all vs BeautifulSoup visible": overlap(texts["ours-all"], texts["bs4-lxml"]),
    }
    write_results(zims, pages, rows, quality)


def thread_scaling(zims: list[Path], args: argparse.Namespace) -> None:
    """Item.text at 1 and 2 threads per archive: interleaved trials, medians.

    On a shared machine a second thread only helps when a second core is
    free, so each row also says how much CPU the process got (CPU s / wall s)
    and how often a thread went to sleep (voluntary context switches per page:
    a wait for the GIL or a lock).  Pages/s per CPU-second staying flat from 1
    to 2 threads, with few switches, means the threads did not wait for each
    other: what is missing from 2x is cores, not the code.
    """
    counts = [int(n) for n in args.thread_counts.split(",")]
    CACHE.mkdir(parents=True, exist_ok=True)
    rows = []
    for zim in zims:
        pages = select_pages([zim], args.pages)
        pages_file = CACHE / f"text-pages-{zim.stem[:40]}.json"
        pages_file.write_text(json.dumps(pages))
        for trial in range(args.thread_trials):
            for n in counts:
                r = json.loads(run_sub("ours", ["--threads", str(n), "--passes", str(args.passes),
                                                "--pages-file", str(pages_file)], Path("-")
                                       ).stdout.strip().splitlines()[-1])
                r.update(archive=zim.name, trial=trial, load1=os.getloadavg()[0],
                         pages_per_s=r["pages"] / r["seconds"],
                         cpu_per_wall=r["cpu_seconds"] / r["seconds"],
                         pages_per_cpu_s=r["pages"] / r["cpu_seconds"],
                         vcsw_per_page=r["vcsw"] / r["pages"])
                rows.append(r)
                if n > 1:
                    rows.append(procs_control(zim, pages, n, args, trial))
                log(f"{zim.name[:30]:30} trial {trial} {n} thr: {r['pages_per_s']:7.0f} pages/s, "
                    f"CPU/wall {r['cpu_per_wall']:.2f}, {r['pages_per_cpu_s']:.0f} pages/CPU-s, "
                    f"{r['vcsw_per_page']:.3f} sleeps/page, load {r['load1']:.2f}")
    med = lambda zim, n, k: statistics.median(r[k] for r in rows  # noqa: E731
                                              if r["archive"] == zim.name and r["threads"] == n
                                              and not r.get("procs"))
    medp = lambda zim, n: statistics.median(r["pages_per_s"] for r in rows  # noqa: E731
                                            if r["archive"] == zim.name and r.get("procs") == n)
    loads = [r["load1"] for r in rows]
    lines = ["# Item.text: 1 thread against 2", "",
             f"`python3 bench/text.py --thread-trials {args.thread_trials} --pages {args.pages} "
             f"--passes {args.passes} ...` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"{os.cpu_count()} cores shared with other jobs, 1-minute load {min(loads):.2f}-{max(loads):.2f}. "
             f"Medians of {args.thread_trials} interleaved trials (fresh process each, best of "
             f"{args.passes} passes over the same pages, split evenly among the threads; one "
             "Archive shared by the threads).", "",
             "| archive | threads | pages/s | x 1 thread | CPU s / wall s | pages per CPU-s | "
             "sleeps per page | MB text/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for zim in zims:
        one = med(zim, counts[0], "pages_per_s")
        for n in counts:
            mb = statistics.median(r["text_bytes"] / r["seconds"] / 1e6 for r in rows
                                   if r["archive"] == zim.name and r["threads"] == n
                                   and not r.get("procs"))
            lines.append(f"| {zim.name} | {n} | {med(zim, n, 'pages_per_s'):.0f} | "
                         f"{med(zim, n, 'pages_per_s') / one:.2f} | {med(zim, n, 'cpu_per_wall'):.2f} | "
                         f"{med(zim, n, 'pages_per_cpu_s'):.0f} | {med(zim, n, 'vcsw_per_page'):.3f} | "
                         f"{mb:.1f} |")
        for n in counts[1:]:
            lines.append(f"| {zim.name} | {n} processes (control) | {medp(zim, n):.0f} | "
                         f"{medp(zim, n) / one:.2f} | | | | |")
    lines += ["", "The control row runs the same split in separate processes (nothing shared: no "
              "GIL, no cache, no lock): when it gains no more than the threads do, the second core "
              "was not there to take, and the threads' shortfall from 2x is the machine's."]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "text_threads.json").write_text(json.dumps({"rows": rows, "argv": sys.argv[1:]}, indent=1))
    (RESULTS / "text_threads.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def procs_control(zim: Path, pages: list, n: int, args: argparse.Namespace, trial: int) -> dict:
    """The n-thread split run as n single-thread processes at once: summed pages/s."""
    files = []
    for k in range(n):
        f = CACHE / f"text-pages-proc{k}.json"
        f.write_text(json.dumps(pages[k::n]))
        files.append(f)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--impl", "ours",
                               "--threads", "1", "--passes", str(args.passes), "--pages-file", str(f)],
                              env=env, cwd="/", stdout=subprocess.PIPE, text=True) for f in files]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    return {"archive": zim.name, "trial": trial, "procs": n, "threads": 1,
            "pages_per_s": sum(o["pages"] / o["seconds"] for o in outs), "load1": os.getloadavg()[0]}


def write_results(zims: list[Path], pages: list, rows: list[dict], quality: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "text.json").write_text(json.dumps(
        {"archives": [z.name for z in zims], "pages": len(pages), "rows": rows,
         "quality": quality}, indent=1))
    by = {(r["impl"], r["threads"]): r for r in rows}
    lines = ["# Article text: libzim-c's Item.text vs python-libzim 3.13.1 + parsers", "",
             f"{len(pages)} HTML pages of {', '.join(z.name for z in zims)}; best of the passes; "
             f"{os.cpu_count()} cores (shared with other jobs while measured).", "",
             "| implementation | threads | pages/s | MB text/s | x ours 1 thread | CPU ms/page |",
             "|---|---:|---:|---:|---:|---:|"]
    ours1 = by[("ours", 1)]["pages_per_s"]
    for r in rows:
        lines.append(f"| {r['impl']} | {r['threads']} | {r['pages_per_s']:.0f} | "
                     f"{r['mb_per_s']:.2f} | {r['pages_per_s'] / ours1:.3f} | "
                     f"{1000 * r.get('cpu_seconds', float('nan')) / r['pages']:.2f} |")
    peers1 = {i: by[(i, 1)]["pages_per_s"] for i in IMPLS if i != "ours" and (i, 1) in by}
    fastest = max(peers1, key=peers1.get)
    lines += ["", f"One thread: ours / fastest peer ({fastest}) = {ours1 / peers1[fastest]:.1f}x; "
              f"ours / bs4-lxml = {ours1 / peers1['bs4-lxml']:.1f}x; "
              f"ours 2 threads / 1 thread = {by[('ours', 2)]['pages_per_s'] / ours1:.2f}x; "
              f"4 / 1 = {by[('ours', 4)]['pages_per_s'] / ours1:.2f}x.", "",
              "## Quality (distinct lowercase words per page)", "",
              "| comparison | pages | theirs in ours, median | p10 | ours in theirs, median | p10 |",
              "|---|---:|---:|---:|---:|---:|"]
    for k, q in quality.items():
        lines.append(f"| {k} | {q['pages']} | {q['theirs_in_ours_median']:.3f} | "
                     f"{q['theirs_in_ours_p10']:.3f} | {q['ours_in_theirs_median']:.3f} | "
                     f"{q['ours_in_theirs_p10']:.3f} |")
    (RESULTS / "text.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
