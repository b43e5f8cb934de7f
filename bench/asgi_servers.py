#!/usr/bin/env python3
"""The same app (``libzim.serve.create_app``) under different ASGI servers: which costs
least per request? Issue 42 asks to measure before choosing one.

    python3 bench/asgi_servers.py --archive A.zim                 # content and suggest, 1 and 8 clients
    python3 bench/asgi_servers.py --archive A.zim --servers zim,granian --kinds content --trials 5

Servers (each one process and one event loop, 2 worker threads for the app's jobs, on
127.0.0.1; pick with ``--servers``):

- ``zim``: ``zim serve`` as shipped: uvicorn, httptools, uvloop, our connection rules
  and our access log (on; to ``--log``'s file).
- ``zim-nolog``: the same with ``--no-access-log``.
- ``uvicorn``: plain uvicorn (httptools, uvloop, its own access log to a file) on a
  factory that calls ``create_app``: what a user mounting the app gets.
- ``granian``, ``granian-log``: Granian (Rust's hyper and tokio parse HTTP; Python runs
  the app on its event loop), one worker, uvloop, without and with its access log.
  Needs ``pip install granian`` (not a dependency of the project).

Each server is driven by wrk (bench/serve.py's script: the URLs cycled, Accept-Encoding
as a browser sends it unless ``--no-gzip``), one warm-up second, then ``--duration``
seconds; the servers are up at once and the order rotates per trial, so they share the
machine's noise. CPU per request: utime+stime of the server's process and its children
(/proc), over the requests wrk counted. Medians of the trials (range).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import request_path as rp  # noqa: E402  (the workloads, zim serve's start)
import serve as wrkbench  # noqa: E402  (wrk's script and its output's parser)

# A factory for the servers that import an app: create_app as a user mounting it calls it.
FACTORY = '''
import os
from libzim.serve import create_app

def make():
    return create_app([os.environ["LIBZIM_C_BENCH_ARCHIVE"]], threads=2)
'''


def tree_cpu(pid: int) -> float:
    """utime+stime of ``pid`` and every live descendant (Granian runs its worker as a child)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    family, frontier = {pid}, [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in family:
                family.add(child)
                frontier.append(child)
    total = 0.0
    for p in family:
        try:
            total += rp._cpu(p)
        except OSError:
            pass
    return total


def start(name: str, archive: Path, port: int, work: Path, log: Path) -> subprocess.Popen[bytes]:
    if name in ("zim", "zim-nolog"):
        return rp.start_server(archive, port, ["--no-access-log"] if name == "zim-nolog" else [], [], log)
    link = work / f"{rp.BOOK}.zim"
    if not link.exists():
        link.symlink_to(archive.resolve())
    (work / "bench_asgi_app.py").write_text(FACTORY)
    env = {**os.environ, "LIBZIM_C_BENCH_ARCHIVE": str(link), "PYTHONPATH": f"{work}:{ROOT}"}
    bindir = Path(sys.executable).parent
    if name == "uvicorn":
        cmd = [sys.executable, "-m", "uvicorn", "--factory", "bench_asgi_app:make", "--host", "127.0.0.1",
               "--port", str(port), "--http", "httptools", "--loop", "uvloop", "--no-use-colors"]
    elif name in ("granian", "granian-log"):
        granian = bindir / "granian"
        if not granian.exists():
            raise SystemExit("granian is not installed here: pip install granian")
        cmd = [str(granian), "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1", "--loop", "uvloop", "--no-ws", "bench_asgi_app:make"]
        if name == "granian-log":
            cmd.insert(-1, "--access-log")
    else:
        raise SystemExit(f"unknown server {name}")
    proc = subprocess.Popen(cmd, cwd=work, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env)
    rp.wait_up(port, proc, log, 120)
    return proc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archive", required=True)
    p.add_argument("--servers", default="zim,zim-nolog,uvicorn,granian,granian-log")
    p.add_argument("--kinds", default="content,suggest")
    p.add_argument("--clients-list", default="1,8")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--no-gzip", action="store_true", help="send no Accept-Encoding")
    p.add_argument("--log", default="/var/tmp/libzim-c-bench/asgi_servers.log")
    args = p.parse_args()
    gzip = not args.no_gzip
    names = args.servers.split(",")
    archive = Path(args.archive)
    log = Path(args.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="asgi-servers-"))
    script = work / "paths.lua"
    script.write_text(wrkbench.LUA)
    procs: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    rows: dict[tuple[str, int, str], list[tuple[float, float]]] = collections.defaultdict(list)
    try:
        for name in names:
            port = rp.free_port()
            procs[name] = (port, start(name, archive, port, work, log))
        workloads = {kind: rp.workload(archive, kind) for kind in args.kinds.split(",")}
        for trial in range(args.trials):
            for kind, urls in workloads.items():
                for clients in (int(c) for c in args.clients_list.split(",")):
                    k = trial % len(names)
                    for name in names[k:] + names[:k]:  # the order rotates per trial
                        port, proc = procs[name]
                        rows[(kind, clients, name)].append(
                            rp.wrk_trial(f"{name} {kind} {clients}", port, proc.pid, urls, clients, args.duration,
                                         script, work, gzip, tree_cpu))
        load = os.getloadavg()[0]
        print(f"\n{args.trials} rotated trials of {args.duration:g} s, medians (range); Accept-Encoding: "
              f"{'gzip, deflate' if gzip else 'none'}; load at the end {load:.1f}")
        print("| kind | clients | server | req/s | server CPU ms per request |")
        print("|---|---|---|---|---|")
        for kind in workloads:
            for clients in (int(c) for c in args.clients_list.split(",")):
                for name in names:
                    rps = sorted(r for r, _ in rows[(kind, clients, name)])
                    ms = sorted(m for _, m in rows[(kind, clients, name)])
                    print(f"| {kind} | {clients} | {name} | {rps[len(rps) // 2]:,.0f} ({rps[0]:,.0f}-{rps[-1]:,.0f}) "
                          f"| {ms[len(ms) // 2]:.3f} ({ms[0]:.3f}-{ms[-1]:.3f}) |")
    finally:
        for _, proc in procs.values():
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
