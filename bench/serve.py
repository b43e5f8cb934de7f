"""zim serve against kiwix-serve 3.3.0, with wrk: requests/s, latency, errors, memory.

    apt-get install -y kiwix-tools wrk python3.11-doc   # and pip install 'libzim-c[serve]' matplotlib
    python bench/serve.py                 # the full matrix (about 11 minutes on 2 cores)
    python bench/serve.py --quick         # every workload once, briefly (about 1 minute)
    python bench/serve.py --archive a.zim --archive b.zim   # several archives served together

Both servers serve the same archives (default: the python3.11-doc demo
archive that tools/corpus.py builds) on 127.0.0.1 with the same number of
worker threads.  Each archive is linked into a work folder under a short name
(its bench query file's name), so both servers give its book that name.
Workloads, each a list of URLs that wrk's Lua script cycles through (every
connection from its own position; the URLs rotate over the books):

- ``content``: 300 HTML articles per book;
- ``content-gzip`` (only with ``--kinds content-gzip``): the same, asked as a browser asks
  them (``Accept-Encoding: gzip, deflate``): each server's gzip is in the CPU per request;
- ``search-10`` / ``search-25``: the bench queries (bench/queries/KEY.txt; for
  tools/synthetic.py's archives bench/scale.py's mix of common, rare and phrase
  queries), an HTML result page with snippets of 10 / 25 results;
- ``suggest``: prefixes of those queries, 10 suggestions;
- ``suggest+search``: suggestions from ``--mixed-suggest`` connections while 8
  other connections ask search pages (two wrk at once): the suggestions' p99;
- ``soak``: ``--soak`` seconds of 16 connections asking suggestions (once per
  server, after the trials).

Every workload runs with each of ``--clients`` connections (wrk -c), in each
of ``--trials`` trials; per trial the server order alternates and each run
follows a 1 s warm-up.  Recorded per run: requests/s, p50/p99 latency, the
server's CPU time per request (utime+stime of its process: less sensitive to
the machine's other work than requests/s), the 1-minute load average, errors
of every kind (non-2xx/3xx answers, wrk's connect/read/write/timeout errors, a
server that died) and the server's peak PSS (``/proc/PID/smaps_rollup``,
sampled every 0.2 s).  A run with any error is a failed run: its figures are
left out of the medians, and the table says how many runs failed.
kiwix-serve 3.3.0 dies (SIGSEGV in libxapian) under concurrent /suggest: the
harness records the crash and starts it again for the next run.

Writes bench/results/serve.md, serve.json and serve.png (--out to change).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

SERVERS = ("zim serve", "kiwix-serve")
MIXED_SEARCH_CLIENTS = 8
SOAK_CLIENTS = 16

LUA = r"""
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local counter = 0
setup = function(thread) thread:set("offset", counter * 97); counter = counter + 1 end
local i = 0
local ae = os.getenv("WRK_ACCEPT_ENCODING")  -- content-gzip: what a browser sends
local headers = ae and {["Accept-Encoding"] = ae} or nil
request = function()
  i = i + 1
  return wrk.format("GET", paths[((i + offset) % #paths) + 1], headers)
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pss_kib(pid: int) -> int | None:
    try:
        m = re.search(r"^Pss:\s+(\d+) kB", Path(f"/proc/{pid}/smaps_rollup").read_text(), re.M)
    except OSError:  # it exited
        return None
    return int(m.group(1)) if m else None


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
                return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {proc.args}")
            if time.monotonic() > deadline:
                raise SystemExit(f"server not up: {proc.args}")
            time.sleep(0.2)


# -- workloads ---------------------------------------------------------------

@dataclass
class Book:
    name: str  # the book name both servers give the linked file
    source: Path
    content: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)


def book_key(path: Path) -> str:
    """The bench query file's name for an archive built by tools/corpus.py
    (``python3.11-doc__...zim`` -> ``python3.11-doc``), else the file's stem."""
    stem = path.name.split("__")[0]
    return re.sub(r"\.zim$", "", stem)


def read_book(name: str, link: Path, source: Path) -> Book:
    from libzim.reader import Archive

    a = Archive(link)
    if not a.has_fulltext_index:
        raise SystemExit(f"{source}: no full-text index (the search workloads need one)")
    book = Book(name, source)
    for e in a.iter_by_path():
        if len(book.content) >= 300:
            break
        if e.is_redirect:
            continue
        item = e.get_item()
        if item.mimetype.startswith("text/html") and item.size > 2000:
            book.content.append(e.path)
    qfile = HERE / "queries" / f"{name}.txt"
    if qfile.is_file():
        book.queries = [q.strip() for q in qfile.read_text().splitlines() if q.strip() and not q.startswith("#")]
    elif name.startswith("synthetic"):  # tools/synthetic.py's: bench/scale.py's mix
        from scale import make_plan

        book.queries = [q for cls in make_plan(source, name)["queries"].values() for q in cls]
    else:  # no query list: the first word of article titles
        words = {(e.title.split() or [""])[0] for e in a.iter_by_path() if not e.is_redirect}
        book.queries = sorted(w for w in words if len(w) >= 4 and w.isalpha())[:80]
    firsts = [q.strip('"').split()[0] for q in book.queries]
    book.terms = sorted({w[:n] for w in firsts for n in (3, 5) if len(w) >= n})
    return book


def _interleave(lists: list[list[str]]) -> list[str]:
    out: list[str] = []
    for i in range(max(map(len, lists), default=0)):
        out += [lst[i] for lst in lists if i < len(lst)]
    return out


def urls(server: str, kind: str, books: list[Book]) -> list[str]:
    """The URLs of a workload, rotating over the books."""
    if kind in ("content", "content-gzip"):  # kiwix-serve 3.3's content URL is /BOOK/PATH
        prefix = "/" if server == "kiwix-serve" else "/content/"
        return _interleave([[f"{prefix}{quote(b.name)}/{quote(p, safe='/')}" for p in b.content] for b in books])
    if kind.startswith("search-"):
        n = kind.split("-")[1]
        return _interleave([[f"/search?books.name={quote(b.name)}&pattern={quote(q)}&pageLength={n}"
                             for q in b.queries] for b in books])
    assert kind == "suggest", kind
    return _interleave([[f"/suggest?content={quote(b.name)}&term={quote(t)}&count=10" for t in b.terms]
                        for b in books])


# -- servers -----------------------------------------------------------------

class Servers:
    """Both servers, restarted when one dies, with a PSS sampler over them."""

    def __init__(self, archives: list[Path], threads: int, log: Path, zim_args: list[str] | None = None,
                 access_log: bool = False) -> None:
        self.archives = archives
        self.access_log = access_log  # zim serve's default; off unless asked (kiwix-serve logs nothing)
        self.threads = threads
        self.zim_args = zim_args or []
        self.log = log
        self.procs: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        self.peak: dict[str, int] = {s: 0 for s in SERVERS}  # KiB, over the whole benchmark
        self.run_peak: dict[str, int] = {s: 0 for s in SERVERS}  # KiB, since reset_peak()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def start(self, server: str) -> None:
        port = free_port()
        if server == "kiwix-serve":
            cmd = ["kiwix-serve", "--address", "127.0.0.1", "--port", str(port), "--threads", str(self.threads),
                   *map(str, self.archives)]
        else:
            cmd = [sys.executable, "-m", "libzim", "serve", "--address", "127.0.0.1", "--port", str(port),
                   "--threads", str(self.threads), *([] if self.access_log else ["--no-access-log"]), *self.zim_args,
                   *map(str, self.archives)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        with self.log.open("ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        wait_up(f"http://127.0.0.1:{port}/", proc)
        self.procs[server] = (proc, port)

    def __enter__(self) -> Servers:
        for s in SERVERS:
            self.start(s)
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sampler.join()
        for proc, _ in self.procs.values():
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for s, (proc, _) in list(self.procs.items()):
                kib = pss_kib(proc.pid)
                if kib is not None:
                    self.peak[s] = max(self.peak[s], kib)
                    self.run_peak[s] = max(self.run_peak[s], kib)

    def reset_peak(self) -> None:
        self.run_peak = {s: 0 for s in SERVERS}

    def check(self, server: str) -> int | None:
        """None if the server lives; else its exit status (and it is started again)."""
        proc, _ = self.procs[server]
        time.sleep(0.3)  # a crash under the last requests shows a moment later
        if proc.poll() is None:
            return None
        code = proc.returncode
        self.start(server)
        return code


# -- wrk ---------------------------------------------------------------------

def wrk_cmd(port: int, duration: float, connections: int, script: Path) -> list[str]:
    return ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", "--timeout", "10s", "--latency",
            "-s", str(script), f"http://127.0.0.1:{port}"]


def start_wrk(port: int, paths: list[str], duration: float, connections: int, script: Path,
              plist: Path, gzip: bool = False) -> subprocess.Popen[str]:
    """wrk over ``paths``; with ``gzip``, each request says ``Accept-Encoding: gzip, deflate``."""
    plist.write_text("\n".join(paths) + "\n")
    env = dict(os.environ, WRK_PATHS=str(plist))
    env.pop("WRK_ACCEPT_ENCODING", None)
    if gzip:
        env["WRK_ACCEPT_ENCODING"] = "gzip, deflate"
    return subprocess.Popen(wrk_cmd(port, duration, connections, script), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wrk_result(proc: subprocess.Popen[str], duration: float) -> dict[str, object]:
    """requests/s, p50/p99 ms, requests, and the errors wrk saw (non-2xx/3xx, socket errors)."""
    try:
        out, err = proc.communicate(timeout=duration + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    if proc.returncode != 0 or "Requests/sec" not in out:
        return {"rps": 0.0, "requests": 0, "errors": 1, "error_text": f"wrk failed ({proc.returncode}): "
                f"{out[-300:]} {err[-300:]}".strip()}

    def ms(label: str) -> float:
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if m is None:
            return float("nan")
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = int(bad.group(1)) if bad else 0
    socket_errors = sum(int(g) for g in sock.groups()) if sock else 0
    row: dict[str, object] = {
        "rps": float(m.group(1)) if m else 0.0, "requests": int(total.group(1)) if total else 0,
        "p50_ms": ms("50"), "p99_ms": ms("99"), "non2xx": non2xx, "socket_errors": socket_errors,
        "errors": non2xx + socket_errors,
    }
    if sock:
        row["error_text"] = sock.group(0)
    return row


class Bench:
    def __init__(self, servers: Servers, books: list[Book], work: Path, args: argparse.Namespace) -> None:
        self.servers = servers
        self.books = books
        self.work = work
        self.args = args
        self.script = work / "rotate.lua"
        self.script.write_text(LUA)
        self.runs: list[dict[str, object]] = []

    def _one(self, server: str, kind: str, clients: int, duration: float, trial: int,
             warmup: float) -> dict[str, object]:
        """One measured wrk run (after a warm-up); with kind suggest+search, two wrk at once."""
        srv = self.servers
        _, port = srv.procs[server]
        u = urls(server, "suggest" if kind in ("suggest+search", "soak") else kind, self.books)
        gz = kind == "content-gzip"
        if warmup > 0:
            wrk_result(start_wrk(port, u, warmup, clients, self.script, self.work / "warm.txt", gz), warmup)
        row: dict[str, object] = {"trial": trial, "server": server, "workload": kind, "clients": clients,
                                  "duration_s": duration, "load1": load1()}
        proc = srv.procs[server][0]
        srv.reset_peak()
        cpu0 = cpu_seconds(proc.pid)
        main = start_wrk(port, u, duration, clients, self.script, self.work / "main.txt", gz)
        other = None
        if kind == "suggest+search":
            other = start_wrk(port, urls(server, "search-10", self.books), duration, MIXED_SEARCH_CLIENTS,
                              self.script, self.work / "other.txt")
        row.update(wrk_result(main, duration))
        if other is not None:
            o = wrk_result(other, duration)
            row["search_rps"] = o["rps"]
            row["search_p99_ms"] = o.get("p99_ms")
            row["errors"] = int(row["errors"]) + int(o["errors"])  # type: ignore[call-overload]
        try:
            cpu = cpu_seconds(proc.pid) - cpu0
            reqs = int(row["requests"]) + (0 if other is None else int(o["rps"] * duration))  # type: ignore[call-overload]
            row["cpu_ms_per_req"] = 1e3 * cpu / reqs if reqs else None
        except OSError:  # it died
            pass
        row["pss_mib"] = srv.run_peak[server] / 1024
        crashed = srv.check(server)
        if crashed is not None:
            row["crashed"] = crashed
            row["errors"] = int(row["errors"]) + 1  # type: ignore[call-overload]
        row["failed"] = bool(row["errors"])
        self.runs.append(row)
        print(json.dumps(row), flush=True)
        return row

    def matrix(self) -> None:
        a = self.args
        kinds = [k for k in ("content", "content-gzip", *(f"search-{n}" for n in a.page_lengths), "suggest")
                 if k == "content-gzip" and a.kinds is not None and k in a.kinds  # only when named
                 or k != "content-gzip" and (a.kinds is None or k.split("-")[0] in a.kinds)]
        for trial in range(a.trials):
            order = SERVERS if trial % 2 == 0 else SERVERS[::-1]
            for kind in kinds:
                for clients in a.clients:
                    for s in order:
                        self._one(s, kind, clients, a.duration, trial, a.warmup)
            if a.kinds is None or "suggest+search" in a.kinds:
                for s in order:
                    self._one(s, "suggest+search", a.mixed_suggest, a.duration, trial, a.warmup)
        if a.soak > 0 and (a.kinds is None or "soak" in a.kinds):
            for s in SERVERS:
                self._one(s, "soak", SOAK_CLIENTS, a.soak, 0, 0)


# -- report ------------------------------------------------------------------

def _med(rows: list[dict[str, object]], key: str) -> float:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]  # type: ignore[arg-type]
    vals = [v for v in vals if v == v]  # no NaN
    return statistics.median(vals) if vals else float("nan")


def _cell(rows: list[dict[str, object]]) -> tuple[str, float]:
    """'rps (min-max)' over the runs without error, and the median (nan if none)."""
    ok = [r for r in rows if not r["failed"]]
    failed = len(rows) - len(ok)
    crashes = [r for r in rows if "crashed" in r]
    note = ""
    if failed:
        what = f"{len(crashes)} crashed (exit {', '.join(sorted({str(r['crashed']) for r in crashes}))})" \
            if crashes else "errors"
        note = f" **{failed}/{len(rows)} failed**: {what}"
    if not ok:
        return note.strip(), float("nan")
    rps = [float(r["rps"]) for r in ok]  # type: ignore[arg-type]
    med = statistics.median(rps)
    spread = f" ({min(rps):,.0f}-{max(rps):,.0f})" if len(rps) > 1 else ""
    return f"{med:,.0f}{spread}{note}", med


def _fmt(x: float, digits: int = 1) -> str:
    return "" if x != x else f"{x:,.{digits}f}"


def report(runs: list[dict[str, object]], meta: dict[str, object], peak: dict[str, int]) -> str:
    lines = [
        "# zim serve against kiwix-serve",
        "",
        f"`{meta['command']}`; {meta['kiwix']}; archives {', '.join(f'`{a}`' for a in meta['archives'])}; "  # type: ignore[union-attr]
        f"both servers with {meta['threads']} worker threads (zim serve: and its lane for quick requests); {meta['cpus']} CPUs shared with other work. "
        f"wrk: 1 thread, {meta['duration_s']} s runs after a {meta['warmup_s']} s warm-up, {meta['trials']} "
        "trial(s), server order alternating; requests/s: median over the runs without error (min-max); "
        "p50/p99 ms, CPU ms per request (the server process's utime+stime) and load (1-minute load "
        "average before the run): medians. A run with any error (non-2xx/3xx, socket error, the server "
        "died) is failed and left out of the medians.",
        "",
    ]
    loads = meta.get("load1_start_end")
    if meta.get("note") and isinstance(loads, list):
        lines += [f"Conditions: {meta['note']} (1-minute load average {_fmt(float(loads[0]))} at the start, "
                  f"{_fmt(float(loads[1]))} at the end.)", ""]
    by = {}
    for r in runs:
        by.setdefault((r["workload"], r["clients"], r["server"]), []).append(r)
    kinds = sorted({str(r["workload"]) for r in runs if r["workload"] not in ("suggest+search", "soak")},
                   key=lambda k: ("content", "content-gzip", "search-10", "search-25", "suggest").index(k)
                   if k in ("content", "content-gzip", "search-10", "search-25", "suggest") else 9)
    lines += ["| workload | clients | zim serve req/s | p50 | p99 | CPU ms/req | kiwix-serve req/s | p50 | p99 "
              "| CPU ms/req | ratio | load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind in kinds:
        for c in sorted({int(r["clients"]) for r in runs if r["workload"] == kind}):  # type: ignore[call-overload]
            cells = []
            meds = []
            every: list[dict[str, object]] = []
            for s in SERVERS:
                rows = by.get((kind, c, s), [])
                every += rows
                ok = [r for r in rows if not r["failed"]]
                text, med = _cell(rows)
                meds.append(med)
                cells.append(f"{text} | {_fmt(_med(ok, 'p50_ms'))} | {_fmt(_med(ok, 'p99_ms'))} | "
                             f"{_fmt(_med(ok, 'cpu_ms_per_req'), 2)}")
            ratio = meds[0] / meds[1] if meds[1] == meds[1] and meds[1] > 0 and meds[0] == meds[0] else float("nan")
            lines.append(f"| {kind} | {c} | {cells[0]} | {cells[1]} | {_fmt(ratio)}x | {_fmt(_med(every, 'load1'))} |")
    mixed = [r for r in runs if r["workload"] == "suggest+search"]
    if mixed:
        lines += ["", f"Suggestions while {MIXED_SEARCH_CLIENTS} other connections ask search pages (two wrk at "
                  "once; the suggestion connections' figures, and the search pages/s beside them):", "",
                  "| server | suggest clients | suggest req/s | p50 ms | p99 ms | search pages/s | load |",
                  "|---|---|---|---|---|---|---|"]
        for s in SERVERS:
            rows = [r for r in mixed if r["server"] == s]
            if not rows:
                continue
            ok = [r for r in rows if not r["failed"]]
            text, _ = _cell(rows)
            lines.append(f"| {s} | {rows[0]['clients']} | {text} | {_fmt(_med(ok, 'p50_ms'))} | "
                         f"{_fmt(_med(ok, 'p99_ms'))} | {_fmt(_med(ok, 'search_rps'), 0)} | {_fmt(_med(rows, 'load1'))} |")
    soak = [r for r in runs if r["workload"] == "soak"]
    if soak:
        lines += ["", f"Soak: {SOAK_CLIENTS} connections asking suggestions for {soak[0]['duration_s']} s:", "",
                  "| server | requests | errors | p99 ms | result | load |", "|---|---|---|---|---|---|"]
        for r in soak:
            result = f"died (exit {r['crashed']})" if "crashed" in r else ("failed" if r["failed"] else "ok")
            lines.append(f"| {r['server']} | {int(r['requests']):,} | {r['errors']} | {_fmt(float(r.get('p99_ms', float('nan'))))} "  # type: ignore[call-overload,arg-type]
                         f"| {result} | {_fmt(float(r['load1']))} |")  # type: ignore[arg-type]
    lines += ["", "Peak memory (PSS, sampled every 0.2 s over the whole benchmark; a restarted kiwix-serve "
              "starts again from its start-up size):", "", "| server | peak PSS MiB |", "|---|---|"]
    for s in SERVERS:
        lines.append(f"| {s} | {peak[s] / 1024:,.1f} |")
    failed = [r for r in runs if r["failed"]]
    lines += ["", f"Failed runs: {len(failed)} of {len(runs)} "
              f"({', '.join(sorted({str(r['server']) for r in failed})) or 'none'}).", ""]
    lines += goals(runs, peak)
    return "\n".join(lines) + "\n"


def goals(runs: list[dict[str, object]], peak: dict[str, int]) -> list[str]:
    """Issue 18's goals, each met / not met / not measured in this run."""
    def med(kind: str, clients: int, server: str, key: str = "rps") -> float:
        return _med([r for r in runs if r["workload"] == kind and r["clients"] == clients
                     and r["server"] == server and not r["failed"]], key)

    out = ["Issue 18's goals in this run:", ""]

    def goal(text: str, value: float, ok: bool | None) -> None:
        verdict = "not measured" if value != value else ("met" if ok else "**not met**")
        out.append(f"- {text}: {_fmt(value)} ({verdict})")

    for c, want in ((1, 4), (8, 8)):
        r = med("search-10", c, "zim serve") / med("search-10", c, "kiwix-serve")
        goal(f"search pages (10 results) with {c} client(s), ratio to kiwix-serve >= {want}", r, r >= want)
    zs = [r for r in runs if r["server"] == "zim serve"]
    p99 = _med([r for r in zs if r["workload"] == "suggest" and r["clients"] == 16 and not r["failed"]], "p99_ms")
    goal("suggest p99 ms with 16 clients <= 20", p99, p99 <= 20)
    p99m = _med([r for r in zs if r["workload"] == "suggest+search" and not r["failed"]], "p99_ms")
    goal(f"suggest p99 ms while {MIXED_SEARCH_CLIENTS} clients search <= 50", p99m, p99m <= 50)
    soak = [r for r in zs if r["workload"] == "soak"]
    errs = float(sum(int(r["errors"]) for r in soak)) if soak else float("nan")  # type: ignore[call-overload]
    goal(f"errors in the {SOAK_CLIENTS}-client suggest soak = 0", errs, errs == 0)
    for c in (1, 8):
        r = med("content", c, "zim serve") / med("content", c, "kiwix-serve")
        goal(f"content with {c} client(s), ratio to kiwix-serve >= 1", r, r >= 1)
    mem = peak["zim serve"] / peak["kiwix-serve"] if peak["kiwix-serve"] else float("nan")
    goal("peak PSS, ratio to kiwix-serve's <= 1", mem, mem <= 1)
    return out


def chart(runs: list[dict[str, object]], path: Path, archives: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("search-10", "search-25", "content", "suggest") if any(r["workload"] == k for r in runs)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(4 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for s, style in zip(SERVERS, ("o-", "s--")):
            cs = sorted({int(r["clients"]) for r in runs if r["workload"] == kind})  # type: ignore[call-overload]
            pts = [(c, _med([r for r in runs if r["workload"] == kind and r["clients"] == c and r["server"] == s
                             and not r["failed"]], "rps")) for c in cs]
            pts = [(c, v) for c, v in pts if v == v]
            failed = [c for c in cs if any(r["failed"] for r in runs if r["workload"] == kind and r["clients"] == c
                                           and r["server"] == s)]
            ax.plot([c for c, _ in pts], [v for _, v in pts], style, label=s)
            for c in failed:
                ax.annotate("x", (c, 0), color="red", ha="center", annotation_clip=False)
        ax.set_title({"search-10": "search, 10 results", "search-25": "search, 25 results"}.get(kind, kind))
        ax.set_xlabel("concurrent clients (wrk -c)")
        ax.set_ylabel("requests/s")
        ax.set_xscale("log", base=2)
        ticks = sorted({int(r["clients"]) for r in runs if r["workload"] == kind})  # type: ignore[call-overload]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    names = ", ".join(book_key(Path(a)) for a in archives)
    fig.suptitle(f"zim serve vs kiwix-serve 3.3.0 on {names} (medians of runs without error; red x: a failed run)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--archive", action="append", default=[],
                   help="a full-text-indexed ZIM; repeat to serve several together (default: the python3.11-doc "
                        "demo archive)")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--duration", type=float, default=4.0, help="seconds per measured run (default 4)")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds of warm-up before each run (default 1)")
    p.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 8, 16],
                   help="wrk connections, comma-separated (default 1,4,8,16)")
    p.add_argument("--page-lengths", type=lambda s: [int(x) for x in s.split(",")], default=[10, 25],
                   help="search pageLength values (default 10,25)")
    p.add_argument("--mixed-suggest", type=int, default=2,
                   help=f"suggestion connections beside {MIXED_SEARCH_CLIENTS} searching ones (default 2)")
    p.add_argument("--soak", type=float, default=60.0,
                   help=f"seconds of {SOAK_CLIENTS} suggestion connections per server, 0 to skip (default 60)")
    p.add_argument("--threads", type=int, default=2, help="worker threads of both servers (default 2)")
    p.add_argument("--zim-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for zim serve, e.g. --zim-arg=--suggest-mode=auto (repeatable)")
    p.add_argument("--kinds", type=lambda s: set(s.split(",")), default=None,
                   help="only these workloads, comma-separated, of content, search, suggest, suggest+search, soak "
                        "(default: all), e.g. --kinds content,suggest for the per-request rows of issue 42; "
                        "content-gzip (only when named): the content pages asked as a browser asks them, "
                        "Accept-Encoding: gzip, deflate")
    p.add_argument("--access-log", action="store_true",
                   help="zim serve with its access log on, as by default (else --no-access-log: kiwix-serve logs "
                        "no requests); the log goes to a file")
    p.add_argument("--quick", action="store_true",
                   help="1 trial of 2 s runs, 1 and 8 clients, pageLength 10, a 5 s soak: checks the harness")
    p.add_argument("--out", default=str(HERE / "results" / "serve"), help="output path without suffix")
    p.add_argument("--note", default="", help="a line for the results about the run's conditions (e.g. who else "
                   "used the machine); written under the table's header and into the JSON's meta")
    args = p.parse_args()
    if args.quick:
        args.trials, args.duration, args.warmup = 1, 2.0, 0.5
        args.clients, args.page_lengths, args.soak = [1, 8], [10], min(args.soak, 5.0)
    for tool in ("kiwix-serve", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y kiwix-tools wrk")
    if args.archive:
        sources = [Path(a) for a in args.archive]
    else:
        from corpus import ensure_debian_doc_zim

        sources = [ensure_debian_doc_zim("python3.11-doc")]
    kiwix_version = ", ".join(line.strip(" +") for line in subprocess.run(
        ["kiwix-serve", "--version"], capture_output=True, text=True).stdout.splitlines() if line.strip())
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    t0 = time.monotonic()
    load_start = load1()
    try:
        books, links = [], []
        for src in sources:
            name = book_key(src)
            if any(b.name == name for b in books):
                raise SystemExit(f"two archives named {name}")
            link = work / f"{name}.zim"
            link.symlink_to(src.resolve())
            links.append(link)
            books.append(read_book(name, link, src))
        with Servers(links, args.threads, work / "servers.log", args.zim_arg, args.access_log) as servers:
            bench = Bench(servers, books, work, args)
            bench.matrix()
            peak = dict(servers.peak)
        runs = bench.runs
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - t0

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python bench/serve.py" + (" --quick" if args.quick else "") + (
        f" --kinds {','.join(sorted(args.kinds))}" if args.kinds else "") + (
        " --access-log" if args.access_log else "") + "".join(
        f" --archive {s.name}" for s in sources if args.archive) + "".join(f" --zim-arg={a}" for a in args.zim_arg)
    meta = {"command": command, "archives": [s.name for s in sources], "kiwix": kiwix_version,
            "threads": args.threads, "clients": args.clients, "page_lengths": args.page_lengths,
            "duration_s": args.duration, "warmup_s": args.warmup, "trials": args.trials, "soak_s": args.soak,
            "cpus": os.cpu_count(), "elapsed_s": round(elapsed), "peak_pss_kib": peak, "note": args.note,
            "load1_start_end": [load_start, load1()],
            "urls": {b.name: {"content": len(b.content), "search": len(b.queries), "suggest": len(b.terms)}
                     for b in books}}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1) + "\n")
    text = report(runs, meta, peak) + f"\nThe run took {elapsed / 60:.1f} minutes.\n"
    out.with_suffix(".md").write_text(text)
    try:
        chart(runs, out.with_suffix(".png"), meta["archives"])  # type: ignore[arg-type]
    except ImportError:
        print("no chart: pip install matplotlib (bench/requirements.txt)", file=sys.stderr)
    print(text)
    return 1 if any(r["failed"] and r["server"] == "zim serve" for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
