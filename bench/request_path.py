#!/usr/bin/env python3
"""Where one request's CPU goes in ``zim serve``: layers by profile, instructions by callgrind.

    python bench/request_path.py profile --archive A.zim      # py-spy over a bounded load
    python bench/request_path.py callgrind --archive A.zim    # instructions per request
    python bench/request_path.py callgrind --archive A.zim --extra=--no-access-log
    python bench/request_path.py ab --archive A.zim --baseline ../before   # two builds, wrk, interleaved

Both run the real ``zim serve`` (its defaults: access log on, httptools, uvloop)
on 127.0.0.1 and drive it with a bounded Python client (``--clients``
keep-alive connections, a fixed number of requests, URLs cycled):

- ``profile``: py-spy samples every thread of the server (CPU only) while the
  client runs; each sample is charged to the innermost frame that belongs to a
  known layer (uvicorn's protocol, Starlette's router, a middleware, our
  handler, the worker pool, the access log, ...). Time inside C called from
  Python (libzim, httptools' parser, uvloop) is charged to the Python frame
  that called it, so "event loop (uvloop C)" is uvloop's own work (sockets,
  callbacks) seen from its ``run`` frame.
- ``callgrind``: the server under ``valgrind --tool=callgrind``, once with
  W + R requests and once with W + 3R; (Ir(3R) - Ir(R)) / 2R is one request's
  instructions, start-up and warm-up cancelled (the warm-up asks each URL once from
  one connection first, so both runs keep the same answers). The split is by shared object
  (the interpreter, httptools, uvloop, the binding, libzim, zstd, ...), self
  cost only.
- ``ab``: this checkout's ``zim serve`` against another checkout's (``--baseline``,
  its extension built), both up at once, driven by wrk (bench/serve.py's script) in
  interleaved trials, the order alternating: requests/s and server CPU per request
  (/proc), medians, and B/A. For a change's effect on time where callgrind counts
  instructions: the two servers share the machine's noise.

Endpoints: ``content`` (the HTML articles bench/serve.py asks for) and
``suggest`` (prefixes of 1-4 letters of titles, 10 suggestions).
"""

from __future__ import annotations

import argparse
import collections
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ZIM = [sys.executable, "-c", "import sys; from libzim.cli import main; sys.exit(main())"]
BOOK = "b"  # the served name (the archive linked as b.zim)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def workload(archive: Path, kind: str, n: int = 300, max_bytes: int | None = None) -> list[str]:
    """The URLs of one endpoint's workload (content: pages of at most ``max_bytes`` when given)."""
    sys.path.insert(0, str(ROOT))
    from libzim.reader import Archive

    a = Archive(archive)
    out: list[str] = []
    if kind in ("content", "raw"):
        for e in a.iter_by_path():
            if len(out) >= n:
                break
            if e.is_redirect:
                continue
            item = e.get_item()
            if item.mimetype.startswith("text/html") and 2000 < item.size <= (max_bytes or item.size):
                prefix = f"/content/{BOOK}/" if kind == "content" else f"/raw/{BOOK}/content/"
                out.append(prefix + quote(e.path, safe="/"))
        return out
    titles = []
    for e in a.iter_by_path():
        if len(titles) >= n:
            break
        t = e.title.strip()
        if not e.is_redirect and t[:1].isalpha():
            titles.append(t)
    terms = sorted({t[:k].lower() for t in titles for k in (1, 2, 3, 4) if len(t) >= k})
    return [f"/suggest?content={BOOK}&term={quote(t)}&count=10" for t in terms]


GZIP = {"Accept-Encoding": "gzip, deflate"}  # what browsers send; --no-gzip: none, as wrk


def drive(port: int, urls: list[str], total: int, clients: int, timeout: float = 600.0) -> tuple[int, int]:
    """``total`` GETs over ``clients`` keep-alive connections (bounded in count and time);
    (answered, non-2xx/3xx)."""
    done = [0, 0]
    lock = threading.Lock()
    counter = iter(range(total))
    deadline = time.monotonic() + timeout

    def one(offset: int) -> None:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        while time.monotonic() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            c.request("GET", urls[(i + offset) % len(urls)], headers=GZIP)
            r = c.getresponse()
            r.read()
            with lock:
                done[0] += 1
                done[1] += r.status >= 400
        c.close()

    ts = [threading.Thread(target=one, args=(k * 97,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return done[0], done[1]


def start_server(archive: Path, port: int, extra: list[str], prefix: list[str], log: Path,
                 env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.Popen[bytes]:
    work = Path(tempfile.mkdtemp(prefix="reqpath-"))
    (work / f"{BOOK}.zim").symlink_to(archive.resolve())
    cmd = [*prefix, *ZIM, "serve", "-p", str(port), "-i", "127.0.0.1", "-t", "2", *extra, str(work / f"{BOOK}.zim")]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env)
    wait_up(port, proc, log)
    return proc


def wait_up(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 300) -> None:
    """Until the server on ``port`` answers its book's main page (a valgrind'ed one takes a while)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", f"/content/{BOOK}/")
            c.getresponse().read()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited ({proc.returncode}); see {log}")
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the server did not start; see {log}")


# -- profile -------------------------------------------------------------------

LAYERS: list[tuple[str, str]] = [  # (layer, regex on "function (file)"), tried from the leaf outwards
    ("access log (logging)", r"[( /]logging/|uvicorn/logging\.py"),
    ("our handler: content", r"libzim/serve/content\.py"),
    ("our handler: suggest", r"libzim/serve/search\.py|libzim/serve/pages\.py"),
    ("our library/book lookup", r"libzim/serve/library\.py|libzim/serve/shelf\.py|libzim/_cache"),
    ("Guard (limits, CORS)", r"^(__call__|send_with_cors) .*libzim/serve/core\.py"),
    ("our response helpers (core)", r"libzim/serve/core\.py"),
    ("our protocol (connection rules)", r"libzim/serve/protocol\.py"),
    ("Starlette responses/headers", r"starlette/(responses|datastructures|background)\.py"),
    ("Starlette request", r"starlette/requests\.py"),
    ("Starlette routing", r"starlette/(routing|convertors|_utils)\.py"),
    ("Starlette middleware + exception layers", r"starlette/(middleware/|_exception_handler|applications|exceptions)"),
    ("worker pool (futures, threads)", r"concurrent/futures/|/threading\.py|/queue\.py"),
    ("uvicorn protocol (httptools parser)", r"uvicorn/protocols/http/"),
    ("event loop (uvloop C, under uvicorn's server)", r"uvicorn/(server|main)\.py|asyncio/runners\.py|base_events\.py"),
    ("uvicorn other", r"uvicorn/"),
    ("asyncio (futures, tasks)", r"/asyncio/"),
]


def classify(stack: list[str]) -> str:
    """The layer of one sample: the innermost frame that belongs to a known layer."""
    for frame in reversed(stack):  # py-spy's raw stacks are root first
        for layer, rx in LAYERS:
            if re.search(rx, frame):
                return layer
    if any("uvloop" in f or "run_forever" in f or "run (" in f for f in stack):
        return "event loop (uvloop C)"
    return "other: " + (stack[-1] if stack else "?")


def profile(args: argparse.Namespace) -> None:
    port = free_port()
    log = Path(args.log)
    proc = start_server(Path(args.archive), port, args.extra, [], log)
    rows: dict[str, dict[str, float]] = {}
    try:
        for kind in args.kinds.split(","):
            urls = workload(Path(args.archive), kind)
            drive(port, urls, min(500, args.requests), args.clients)  # warm-up
            out = Path(tempfile.mkstemp(suffix=".txt")[1])
            spy = subprocess.Popen(["py-spy", "record", "-p", str(proc.pid), "-r", str(args.rate), "-f", "raw",
                                    "-o", str(out), "-d", str(int(args.seconds) + 30), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            t0 = time.monotonic()
            cpu0 = _cpu(proc.pid)
            n, bad = drive(port, urls, args.requests, args.clients, timeout=args.seconds)
            cpu = _cpu(proc.pid) - cpu0
            wall = time.monotonic() - t0
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
            counts: collections.Counter[str] = collections.Counter()
            leaves: collections.Counter[tuple[str, str]] = collections.Counter()
            for line in out.read_text().splitlines():
                stack, _, num = line.rpartition(" ")
                if not stack:
                    continue
                frames = stack.split(";")
                layer = classify(frames)
                counts[layer] += int(num)
                leaves[(layer, frames[-1])] += int(num)
            total = sum(counts.values()) or 1
            print(f"\n{kind}: {n} requests ({bad} errors) in {wall:.1f} s, {args.clients} clients: "
                  f"{n / wall:,.0f} req/s, server CPU {cpu / n * 1000:.3f} ms/request; {total} samples")
            rows[kind] = {}
            for layer, c in counts.most_common():
                share = c / total
                rows[kind][layer] = share
                print(f"  {share * 100:5.1f}%  {share * cpu / n * 1000:6.3f} ms  {layer}")
                if args.detail:
                    for (lay, leaf), k in leaves.most_common():
                        if lay == layer and k / total >= 0.01:
                            print(f"        {k / total * 100:5.1f}%  {leaf}")
            out.unlink()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- callgrind -----------------------------------------------------------------

def self_cost_by_object(path: Path) -> dict[str, int]:
    """Self Ir per shared object of a callgrind.out file (calls' inclusive costs excluded)."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    ob = "?"
    out: collections.Counter[str] = collections.Counter()
    skip_next = False

    def name(kind: str, text: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), "?")

    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("ob="):
            ob = name("ob", line[3:])
        elif line.startswith(("cob=", "cfi=", "cfl=", "cfn=")):
            k = line[1:3] if line[1:3] != "fi" else "fl"
            name("ob" if k == "ob" else ("fn" if k == "fn" else "fl"), line.split("=", 1)[1])
        elif line.startswith(("fl=", "fi=", "fe=")):
            name("fl", line[3:])
        elif line.startswith("fn="):
            name("fn", line[3:])
        elif line.startswith("calls="):
            skip_next = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                out[Path(ob).name] += int(parts[1])
    return dict(out)


def callgrind(args: argparse.Namespace) -> None:
    counts: dict[int, dict[str, int]] = {}
    urls = workload(Path(args.archive), args.kind, args.urls, args.max_bytes)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)  # valgrind will not make it
    for rounds in (1, 3):
        port = free_port()
        out = Path(args.workdir) / f"callgrind.{args.kind}.{rounds}.out"
        prefix = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no"]
        env = {**os.environ, **({"PYTHONMALLOC": "malloc"} if args.malloc else {})}
        proc = start_server(Path(args.archive), port, args.extra, prefix, Path(args.log), env)
        try:
            # Each URL once from one connection first: what is kept after the warm-up is then
            # the same in both runs (8 connections asking a new URL at once would each make
            # its answer, as many times as happened to coincide: noise that does not cancel).
            drive(port, urls, len(urls), 1)
            drive(port, urls, args.warmup, args.clients)
            n, bad = drive(port, urls, args.requests * rounds, args.clients)
            assert n == args.requests * rounds, (n, args.requests * rounds)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(300)
        counts[rounds] = self_cost_by_object(out)
        print(f"{args.kind} x{rounds}R: total Ir {sum(counts[rounds].values()):,} ({bad} errors)", flush=True)
    r = args.requests
    per = {k: (counts[3].get(k, 0) - counts[1].get(k, 0)) / (2 * r) for k in set(counts[1]) | set(counts[3])}
    total = sum(per.values())
    print(f"\n{args.kind} {' '.join(args.extra)}: {total:,.0f} instructions per request "
          f"(R={r}, {args.clients} clients)")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
        if abs(v) >= total * 0.005:
            print(f"  {v:12,.0f}  {v / total * 100:5.1f}%  {k}")


# -- ab ------------------------------------------------------------------------

def wrk_trial(label: str, port: int, pid: int, urls: list[str], clients: int, duration: float, script: Path,
              work: Path, gzip: bool, cpu: Callable[[int], float] = _cpu) -> tuple[float, float]:
    """One second of wrk to warm up, then ``duration`` seconds: (requests/s, the server's CPU ms
    per request, ``cpu(pid)`` before and after); SystemExit on any error."""
    sys.path.insert(0, str(HERE))
    import serve as wrkbench  # bench/serve.py: wrk's script and its output's parser

    warm = wrkbench.start_wrk(port, urls, 1, clients, script, work / "warm.txt", gzip)
    wrkbench.wrk_result(warm, 1)
    cpu0 = cpu(pid)
    run = wrkbench.start_wrk(port, urls, duration, clients, script, work / "run.txt", gzip)
    out = wrkbench.wrk_result(run, duration)
    spent = cpu(pid) - cpu0
    n = int(out["requests"])  # type: ignore[call-overload]
    if out["errors"] or not n:
        raise SystemExit(f"{label}: {out}")
    return float(out["rps"]), spent / n * 1000  # type: ignore[arg-type]


def ab(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    import serve as wrkbench  # bench/serve.py: wrk's script and its output's parser

    base = Path(args.baseline).resolve()
    if not list((base / "libzim").glob("_libzim*.so")):
        raise SystemExit(f"{base}: no built extension in libzim/ (build it there first)")
    log = Path(args.log)
    work = Path(tempfile.mkdtemp(prefix="reqpath-ab-"))
    script = work / "paths.lua"
    script.write_text(wrkbench.LUA)
    servers: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    try:
        for name, root in (("this", ROOT), ("baseline", base)):
            port = free_port()
            servers[name] = (port, start_server(Path(args.archive), port, args.extra, [], log, cwd=root))
        rows: dict[tuple[str, int, str], list[tuple[float, float]]] = collections.defaultdict(list)
        for trial in range(args.trials):
            for kind in args.kinds.split(","):
                urls = workload(Path(args.archive), kind)
                for clients in (int(c) for c in args.clients_list.split(",")):
                    order = ("this", "baseline") if (trial + clients) % 2 == 0 else ("baseline", "this")
                    for name in order:
                        port, proc = servers[name]
                        rows[(kind, clients, name)].append(
                            wrk_trial(f"{name} {kind} {clients}", port, proc.pid, urls, clients, args.duration, script,
                                      work, bool(GZIP)))
        print(f"\n{args.trials} interleaved trials of {args.duration:g} s, medians (range); extra: {' '.join(args.extra)}"
              f"; Accept-Encoding: {GZIP.get('Accept-Encoding', 'none')}")
        print("| kind | clients | this: req/s | this: CPU ms | baseline: req/s | baseline: CPU ms | CPU this/baseline |")
        print("|---|---|---|---|---|---|---|")
        for kind in args.kinds.split(","):
            for clients in (int(c) for c in args.clients_list.split(",")):
                cells = []
                med = {}
                for name in ("this", "baseline"):
                    rps = sorted(r for r, _ in rows[(kind, clients, name)])
                    ms = sorted(m for _, m in rows[(kind, clients, name)])
                    med[name] = ms[len(ms) // 2]
                    cells += [f"{rps[len(rps) // 2]:,.0f} ({rps[0]:,.0f}-{rps[-1]:,.0f})",
                              f"{med[name]:.3f} ({ms[0]:.3f}-{ms[-1]:.3f})"]
                print(f"| {kind} | {clients} | " + " | ".join(cells) + f" | {med['this'] / med['baseline']:.2f} |")
    finally:
        for _, proc in servers.values():
            proc.send_signal(signal.SIGINT)
            proc.wait(30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("profile", "callgrind", "ab"):
        s = sub.add_parser(name)
        s.add_argument("--archive", required=True)
        s.add_argument("--clients", type=int, default=8)
        s.add_argument("--extra", action="append", default=[], help="an argument for zim serve (repeat)")
        s.add_argument("--log", default="/var/tmp/libzim-c-bench/request_path.log")
    pr = sub.choices["profile"]
    pr.add_argument("--kinds", default="content,suggest")
    pr.add_argument("--requests", type=int, default=20000)
    pr.add_argument("--seconds", type=float, default=12.0)
    pr.add_argument("--rate", type=int, default=400)
    pr.add_argument("--detail", action="store_true", help="the leaf frames of each layer (1%% and more)")
    cg = sub.choices["callgrind"]
    cg.add_argument("--kind", default="content")
    cg.add_argument("--requests", type=int, default=300)
    cg.add_argument("--warmup", type=int, default=300)
    cg.add_argument("--workdir", default="/var/tmp/libzim-c-bench")
    cg.add_argument("--urls", type=int, default=300,
                    help="the workload's size (default 300); a few dozen: every answer kept after the warm-up")
    cg.add_argument("--max-bytes", type=int, default=None,
                    help="content pages of at most this size (with --urls 40 --max-bytes 131072: every page kept)")
    cg.add_argument("--malloc", action="store_true", help="PYTHONMALLOC=malloc: allocations show as libc's")
    abp = sub.choices["ab"]
    abp.add_argument("--baseline", required=True, help="another checkout of this repository, its extension built")
    abp.add_argument("--kinds", default="content,suggest")
    abp.add_argument("--clients-list", default="1,8", help="wrk connections, comma-separated")
    abp.add_argument("--trials", type=int, default=3)
    abp.add_argument("--duration", type=float, default=6.0)
    for s in sub.choices.values():
        s.add_argument("--no-gzip", action="store_true", help="send no Accept-Encoding (as bench/serve.py's wrk)")
    args = p.parse_args()
    if args.no_gzip:
        GZIP.clear()
    Path("/var/tmp/libzim-c-bench").mkdir(parents=True, exist_ok=True)
    {"profile": profile, "callgrind": callgrind, "ab": ab}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
