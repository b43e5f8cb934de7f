#!/usr/bin/env python3
"""``zim serve`` against kiwix-serve 3.3.0 on libraries of many small archives.

    python3 bench/library_scale.py --books 100 1000 [--touch 200] [--out bench/results/library-scale.json]

For each size N: tools/library_books.py's N books (20 archives written by
libzim.writer, copied with ids of their own), listed in a library file made by
``kiwix-manage add`` (both servers read that same file). Each server runs with
``RLIMIT_NOFILE`` 1,024 (``ulimit -n 1024``), 4 worker threads, on 127.0.0.1, and
is measured from outside: wall time and CPU time (utime + stime of /proc/PID/stat)
from its start to its first answer; the full OPDS catalog (median of 3); then
``--touch`` random books (the same for both servers), each read (one article) and
searched (its word) once: the first-touch p50; the same books again: the warm
p50; PSS (/proc/PID/smaps_rollup) and open descriptors after start and after the
books; every answer checked (its word in it), errors counted. ``zim serve`` runs
twice: with its record cache empty (``--book-cache`` a new file) and with it
filled by the first run (a restart). The machine's load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import library_books  # noqa: E402

NOFILE = 1024
CLK = os.sysconf("SC_CLK_TCK")


def kiwix_library(n: int) -> Path:
    """The kiwix-manage library file of N books (made once, beside the books)."""
    lib = library_books.build(n)
    out = lib.parent / "kiwix-library.xml"
    if not out.is_file():
        books = sorted(p.name for p in lib.parent.glob("book*.zim"))
        for i in range(0, len(books), 500):
            subprocess.run(["kiwix-manage", str(out), "add", *books[i:i + 500]], cwd=lib.parent, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def _get(url: str, timeout: float = 60) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def pss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Server:
    def __init__(self, kind: str, lib: Path, port: int, book_cache: Path, extra: list[str] | None = None) -> None:
        self.kind = kind
        if kind == "kiwix":
            argv = ["kiwix-serve", "--library", str(lib), "-p", str(port), "-i", "127.0.0.1", "-t", "4"]
        else:
            argv = [sys.executable, "-m", "libzim", "serve", "--library", str(lib), "-p", str(port), "-t", "4",
                    "--no-access-log", "--book-cache", str(book_cache)]
        argv += extra or []
        self.base = f"http://127.0.0.1:{port}"
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_limit,
                                     cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        deadline = time.monotonic() + 300
        while True:
            try:
                status, _ = _get(self.base + "/catalog/v2/root.xml", 5)
                if status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{kind} did not start")
            time.sleep(0.02)
        self.first_answer_s = time.perf_counter() - self.t0
        self.first_answer_cpu_s = cpu_seconds(self.proc.pid)

    def content_url(self, name: str, path: str) -> str:
        # kiwix-serve 3.3.0 (libkiwix 11) serves content at /BOOK/A/PATH
        return f"{self.base}/{name}/A/{path}" if self.kind == "kiwix" else f"{self.base}/content/{name}/{path}"

    def search_url(self, name: str, word: str) -> str:
        return f"{self.base}/search?content={name}&pattern={word}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def timed(url: str, must: bytes) -> tuple[float, bool]:
    t = time.perf_counter()
    try:
        status, body = _get(url)
    except OSError:
        return time.perf_counter() - t, False
    return time.perf_counter() - t, status == 200 and must in body


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 2) if xs else 0.0


def run_one(kind: str, n: int, lib: Path, touch: list[int], port: int, book_cache: Path) -> dict[str, object]:
    s = Server(kind, lib, port, book_cache)
    try:
        row: dict[str, object] = {"server": kind, "books": n, "first_answer_s": round(s.first_answer_s, 3),
                                  "first_answer_cpu_s": round(s.first_answer_cpu_s, 2)}
        row["pss_start_mib"] = round(pss_mib(s.proc.pid), 1)
        row["fds_start"] = fds(s.proc.pid)
        cat = []
        for _ in range(3):
            t = time.perf_counter()
            status, body = _get(s.base + "/catalog/v2/entries?count=-1")
            cat.append(time.perf_counter() - t)
            assert status == 200 and body.count(b"<entry>") == n, (kind, status, body.count(b"<entry>"))
        row["catalog_ms"] = p50(cat)
        errors = 0
        lat: dict[str, list[float]] = {"content_first": [], "search_first": [], "content_warm": [], "search_warm": []}
        for phase in ("first", "warm"):
            for i in touch:
                name, word = f"book{i:05d}", library_books.base_word(i % 20)
                dt, ok = timed(s.content_url(name, "a3.html"), word.encode())
                lat[f"content_{phase}"].append(dt)
                errors += not ok
                dt, ok = timed(s.search_url(name, word), b"a3.html")
                lat[f"search_{phase}"].append(dt)
                errors += not ok
        for k, v in lat.items():
            row[f"{k}_p50_ms"] = p50(v)
        row["errors"] = errors
        row["pss_after_mib"] = round(pss_mib(s.proc.pid), 1)
        row["fds_after"] = fds(s.proc.pid)
        row["cpu_total_s"] = round(cpu_seconds(s.proc.pid), 2)
        return row
    finally:
        s.stop()


def wide_search(n: int, port: int, book_cache: Path, queries: int = 10) -> list[dict[str, object]]:
    """One search over every book (``books.filter.lang=eng``, all N), with the caches
    and the open-file limit raised to hold them all (``--searcher-cache N``,
    ``--archive-cache N``, ``ulimit -n`` 8 N): the first (every archive and a searcher
    over all opened) and the next ``queries`` (other words, the same searcher) p50; PSS
    and descriptors after; kiwix-serve with the same limit and ``-s 0``."""
    global NOFILE
    lib = kiwix_library(n)
    saved, NOFILE = NOFILE, max(1024, 8 * n)
    rows = []
    try:
        for kind in ("zim", "kiwix"):
            s = Server(kind, lib, port, book_cache,
                       extra=["--searcher-cache", str(n), "--archive-cache", str(n)] if kind == "zim" else ["-s", "0"])
            try:
                words = [library_books.base_word(k) for k in range(20)]
                times, errors = [], 0
                for w in words[:queries + 1]:
                    dt, ok = timed(f"{s.base}/search?books.filter.lang=eng&pattern={w}&pageLength=10", b"a")
                    times.append(dt)
                    errors += not ok
                rows.append({"server": kind, "books": n, "first_ms": round(times[0] * 1000, 1),
                             "next_p50_ms": p50(times[1:]), "errors": errors, "pss_mib": round(pss_mib(s.proc.pid), 1),
                             "fds": fds(s.proc.pid), "loadavg": os.getloadavg()[0]})
            finally:
                s.stop()
    finally:
        NOFILE = saved
    return rows


def reload_gap(n: int, port: int, book_cache: Path, seconds: float = 4.0) -> dict[str, object]:
    """zim serve on N books: 20 books read, then one client reads them in a loop for
    ``seconds`` while SIGHUP reloads the library (twice); the longest gap between two
    answers, against the same loop without a reload, and the .zim descriptors before
    and after (unchanged books keep their open archives)."""
    lib = kiwix_library(n)
    s = Server("zim", lib, port, book_cache)

    def zim_fds() -> int:
        k = 0
        for fd in os.listdir(f"/proc/{s.proc.pid}/fd"):
            try:
                k += os.readlink(f"/proc/{s.proc.pid}/fd/{fd}").endswith(".zim")
            except OSError:
                pass
        return k

    def loop(hup_at: tuple[float, ...]) -> tuple[float, int]:
        urls = [s.content_url(f"book{i:05d}", "a3.html") for i in range(20)]
        t0 = last = time.perf_counter()
        gap, errors, k, pending = 0.0, 0, 0, list(hup_at)
        while time.perf_counter() - t0 < seconds:
            if pending and time.perf_counter() - t0 >= pending[0]:
                pending.pop(0)
                s.proc.send_signal(signal.SIGHUP)
            status, _ = _get(urls[k % 20])
            k += 1
            errors += status != 200
            now = time.perf_counter()
            gap, last = max(gap, now - last), now
        return gap, errors

    try:
        for i in range(20):
            _get(s.content_url(f"book{i:05d}", "a3.html"))
        before = zim_fds()
        quiet, e1 = loop(())
        reloading, e2 = loop((1.0, 2.5))
        time.sleep(0.5)
        return {"books": n, "longest_gap_quiet_ms": round(quiet * 1000, 1),
                "longest_gap_reloading_ms": round(reloading * 1000, 1), "errors": e1 + e2,
                "zim_fds_before": before, "zim_fds_after": zim_fds(), "loadavg": os.getloadavg()[0]}
    finally:
        s.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--books", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--touch", type=int, default=200, help="random books read and searched (default 200)")
    ap.add_argument("--servers", nargs="+", default=["zim-cold", "zim-warm", "kiwix"])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--port", type=int, default=18650)
    ap.add_argument("--reload", action="store_true", help="measure the longest gap in answers during SIGHUP reloads")
    ap.add_argument("--wide", action="store_true", help="measure a search over every book")
    args = ap.parse_args()
    if args.wide:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "libzim-c" / "bench-bookinfo-wide.json"
        rows = [r for n in args.books for r in wide_search(n, args.port, cache)]
        for row in rows:
            print(json.dumps(row), flush=True)
        if args.out:
            args.out.write_text(json.dumps({"wide": rows}, indent=1) + "\n")
        return 0
    if args.reload:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "libzim-c" / "bench-bookinfo-reload.json"
        rows = [reload_gap(n, args.port, cache) for n in args.books]
        for row in rows:
            print(json.dumps(row), flush=True)
        if args.out:
            args.out.write_text(json.dumps({"nofile": NOFILE, "reload": rows}, indent=1) + "\n")
        return 0
    rows = []
    for n in args.books:
        lib = kiwix_library(n)
        touch = random.Random(n).sample(range(n), min(args.touch, n))
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "libzim-c" / f"bench-bookinfo-{n}.json"
        for kind in args.servers:
            if kind == "zim-cold" and cache.exists():
                cache.unlink()
            row = run_one("kiwix" if kind == "kiwix" else "zim", n, lib, touch, args.port, cache)
            row["server"] = kind
            row["loadavg"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"nofile": NOFILE, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
