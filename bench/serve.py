"""zim serve against kiwix-serve 3.3.0, with wrk: requests/s and latency.

    apt-get install -y kiwix-tools wrk python3.11-doc   # and pip install 'libzim-c[serve]'
    python bench/serve.py [--trials 3] [--duration 8] [--connections 16] [--threads 2]

Both servers serve the same archive (the python3.11-doc demo archive that
tools/corpus.py builds, linked as pydoc.zim so both call the book "pydoc") on
127.0.0.1 with the same number of worker threads.  Three workloads, each a
list of URLs that wrk's Lua script cycles through (every connection walks the
list from its own position): ``content`` (300 HTML articles), ``search`` (the
queries of bench/queries/python3.11-doc.txt, result page 1, HTML) and
``suggest`` (prefixes of those queries, 10 suggestions).  Per trial the
server order alternates, each run follows a 2 s warm-up on the same URLs, and
the 1-minute load average is recorded before each run: the machine's other
work shows in the figures.  kiwix-serve 3.3 inserts its toolbar into every
HTML article, so its content responses are a little larger.

Writes bench/results/serve.md and serve.json.
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
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

LUA = r"""
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local counter = 0
setup = function(thread) thread:set("offset", counter * 97); counter = counter + 1 end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[((i + offset) % #paths) + 1])
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


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


def workloads(archive: Path) -> dict[str, list[str]]:
    """Book-relative URL tails: content paths, search patterns, suggestion terms."""
    from libzim.reader import Archive

    a = Archive(archive)
    paths: list[str] = []
    for e in a.iter_by_path():
        if len(paths) >= 300:
            break
        if e.is_redirect:
            continue
        item = e.get_item()
        if item.mimetype.startswith("text/html") and item.size > 2000:
            paths.append(e.path)
    queries = [q.strip() for q in (HERE / "queries" / "python3.11-doc.txt").read_text().splitlines()
               if q.strip() and not q.startswith("#")]
    terms = sorted({q.split()[0][:n] for q in queries for n in (3, 5) if len(q.split()[0]) >= n})
    return {"content": paths, "search": queries, "suggest": terms}


def urls(server: str, kind: str, items: list[str]) -> list[str]:
    if kind == "content":
        prefix = "/pydoc/" if server == "kiwix-serve" else "/content/pydoc/"
        return [prefix + quote(p, safe="/") for p in items]
    if kind == "search":
        return [f"/search?books.name=pydoc&pattern={quote(q)}" for q in items]
    return [f"/suggest?content=pydoc&term={quote(t)}&count=10" for t in items]


class WrkFailed(Exception):
    pass


def wrk(port: int, paths: list[str], duration: float, connections: int, script: Path, workdir: Path
        ) -> dict[str, float]:
    plist = workdir / "paths.txt"
    plist.write_text("\n".join(paths) + "\n")
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--timeout", "10s", "--latency",
           "-s", str(script), f"http://127.0.0.1:{port}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60,
                          env=dict(os.environ, WRK_PATHS=str(plist)))
    out = proc.stdout
    if proc.returncode != 0 or "Requests/sec" not in out:
        raise WrkFailed(f"wrk failed ({proc.returncode}): {out[-300:]} {proc.stderr[-300:]}".strip())
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def ms(label: str) -> float:
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if m is None:
            return float("nan")
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    return {"rps": rps, "p50_ms": ms("50"), "p99_ms": ms("99"), "non2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(0) if errors else ""}  # type: ignore[dict-item]


def start(server: str, archive: Path, port: int, threads: int) -> subprocess.Popen[bytes]:
    if server == "kiwix-serve":
        cmd = ["kiwix-serve", "--address", "127.0.0.1", "--port", str(port), "--threads", str(threads), str(archive)]
    else:
        cmd = [sys.executable, "-m", "libzim", "serve", "--address", "127.0.0.1", "--port", str(port),
               "--threads", str(threads), "--no-access-log", str(archive)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--duration", type=int, default=8)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--threads", type=int, default=2, help="worker threads of both servers")
    p.add_argument("--archive", help="a full-text-indexed ZIM (default: the python3.11-doc demo archive)")
    p.add_argument("--out", default=str(HERE / "results" / "serve"))
    args = p.parse_args()
    for tool in ("kiwix-serve", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y kiwix-tools wrk")
    if args.archive:
        src = Path(args.archive)
    else:
        from corpus import ensure_debian_doc_zim

        src = ensure_debian_doc_zim("python3.11-doc")
    kiwix_version = ", ".join(line.strip(" +") for line in subprocess.run(
        ["kiwix-serve", "--version"], capture_output=True, text=True).stdout.splitlines() if line.strip())
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        archive = work / "pydoc.zim"
        archive.symlink_to(src.resolve())
        script = work / "rotate.lua"
        script.write_text(LUA)
        loads = workloads(archive)
        runs: list[dict[str, object]] = []
        servers = ["zim serve", "kiwix-serve"]
        procs = {s: (start(s, archive, port := free_port(), args.threads), port) for s in servers}
        for s, (proc, port) in procs.items():
            wait_up(f"http://127.0.0.1:{port}/", proc)
        try:
            for trial in range(args.trials):
                order = servers if trial % 2 == 0 else servers[::-1]
                for kind, items in loads.items():
                    for s in order:
                        proc, port = procs[s]
                        u = urls(s, kind, items)
                        la = load1()
                        row: dict[str, object] = {"trial": trial, "server": s, "workload": kind, "load1": la}
                        try:
                            wrk(port, u, 2, args.connections, script, work)  # warm-up
                            row.update(wrk(port, u, args.duration, args.connections, script, work))
                        except WrkFailed as e:
                            row["failed"] = str(e)
                        time.sleep(0.5)
                        if proc.poll() is not None:  # it crashed: say so, start it again for the next run
                            row["crashed"] = proc.returncode
                            proc = start(s, archive, port := free_port(), args.threads)
                            wait_up(f"http://127.0.0.1:{port}/", proc)
                            procs[s] = (proc, port)
                        runs.append(row)
                        print(json.dumps(row), flush=True)
        finally:
            for proc, _ in procs.values():
                stop(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    out = Path(args.out)
    meta = {"archive": str(src), "kiwix": kiwix_version, "threads": args.threads,
            "connections": args.connections, "duration_s": args.duration, "trials": args.trials,
            "cpus": os.cpu_count(), "urls": {k: len(v) for k, v in loads.items()}}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1) + "\n")
    lines = [
        "# zim serve against kiwix-serve",
        "",
        f"`python bench/serve.py --trials {args.trials} --duration {args.duration:g} --connections "
        f"{args.connections} --threads {args.threads}`; {kiwix_version or 'kiwix-serve'}; archive "
        f"`{src.name}`; {os.cpu_count()} CPUs shared with other work (load column: 1-minute load "
        "average before each run). wrk: 1 thread, medians over the trials (min-max).",
        "",
        "| workload | server | requests/s | p50 ms | p99 ms | non-2xx/3xx | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in loads:
        for s in servers:
            every = [r for r in runs if r["workload"] == kind and r["server"] == s]
            crashes = [r for r in every if "crashed" in r or "failed" in r]
            rs = [r for r in every if r not in crashes]
            if crashes:
                codes = sorted({str(r.get("crashed", "wrk failed")) for r in crashes})
                note = f"crashed in {len(crashes)} of {len(every)} runs (exit {', '.join(codes)})"
                if not rs:
                    lines.append(f"| {kind} | {s} | {note} | | | | |")
                    continue
                s_label = f"{s} ({note}; figures of the other runs)"
            else:
                s_label = s
            rps = [float(r["rps"]) for r in rs]  # type: ignore[arg-type]
            p50 = statistics.median(float(r["p50_ms"]) for r in rs)  # type: ignore[arg-type]
            p99 = statistics.median(float(r["p99_ms"]) for r in rs)  # type: ignore[arg-type]
            bad = sum(int(r["non2xx"]) for r in rs)  # type: ignore[call-overload]
            la = statistics.median(float(r["load1"]) for r in rs)  # type: ignore[arg-type]
            lines.append(f"| {kind} | {s_label} | {statistics.median(rps):,.0f} ({min(rps):,.0f}-{max(rps):,.0f}) | "
                         f"{p50:.1f} | {p99:.1f} | {bad} | {la:.1f} |")
    lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
