#!/usr/bin/env python3
"""Archives to Parquet: libzim.dask.read_archives on Dask against the usual way.

    python3 bench/dask_text.py [--workers 1,2,4] [--trials 3] [--baseline-trials 1]
                               [--partition-size 128] [--archives python3.11-doc,...]
                               [--install] [--quick] [--results STEM]

The job: every HTML article (text/html, redirects excluded) of the bench
archives (tools/corpus.py's Debian documentation archives, as bench/run.py
uses: python3.11-doc, postgresql-doc-15, and linux-doc when installed or with
--install) to a Parquet data set with columns archive, name, uuid, path,
title, mimetype, size, text.

- ours: ``read_archives(paths, partition_size=P).to_parquet(dir)`` on a
  LocalCluster of N worker processes with one thread each (started before the
  clock, kept across trials; planning on the client is timed).
- baseline, "the usual way": python-libzim 3.13.1 (the oracle venv,
  ~/.cache/libzim-c/python-libzim-3.13.1) + BeautifulSoup with the lxml
  parser (script and style removed, get_text("\\n")) in a
  concurrent.futures.ProcessPoolExecutor of N processes: one task per P
  entries of an archive in entry order, each writing its Parquet file with
  pyarrow (as Dask writes one per partition).  The pool is started and its
  processes have imported everything before the clock.  bs4, lxml and
  pyarrow for it are pip-installed into bench/.cache/bs4-lxml (--target; the
  oracle venv itself is not touched).

Both read the same articles at their default 16 MiB cluster cache; the
script checks that both data sets hold the same (archive, path) rows.
Trials interleave ours and the baseline per worker count; the table gives
medians.  Worker CPU: ours from each worker process's CPU time (Dask's own
threads included), the baseline from each task's CPU time (pool overhead
excluded).  The 1-minute load average is recorded around every trial.

Writes bench/results/dask_text.md and dask_text.json (--quick: _quick).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
PEER_SITE = CACHE / "bs4-lxml"
PEER_PACKAGES = ["beautifulsoup4", "lxml", "pyarrow"]
ORACLE = Path.home() / ".cache" / "libzim-c" / "python-libzim-3.13.1" / "bin" / "python"
RESULTS = HERE / "results"
DEFAULT_ARCHIVES = ["python3.11-doc", "postgresql-doc-15", "linux-doc"]
COLUMNS = ["archive", "name", "uuid", "path", "title", "mimetype", "size", "text"]


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------- baseline (oracle python)
# Runs under python-libzim 3.13.1: imports only the stdlib at module level.

_archives: dict = {}


def _bs4_warm(_: int) -> int:
    import bs4  # noqa: F401
    import lxml  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import libzim  # noqa: F401
    time.sleep(0.2)  # keep this process busy so the next warm-up task starts another
    return os.getpid()


def _bs4_task(path: str, start: int, stop: int, out: str) -> tuple[int, float]:
    """Entries [start, stop) of the archive in entry order: the HTML articles'
    rows, written to one Parquet file.  Returns (rows, CPU seconds)."""
    cpu0 = time.process_time()
    import warnings

    import pyarrow as pa
    import pyarrow.parquet as pq
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
    from libzim.reader import Archive

    # postgresql-doc's pages are XHTML; parsed as HTML, as a browser does.
    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)
    if path not in _archives:
        a = Archive(path)
        try:
            name = bytes(a.get_metadata("Name")).decode()
        except Exception:
            name = None
        _archives[path] = (a, name, str(a.uuid))
    archive, name, uuid = _archives[path]
    rows: dict[str, list] = {c: [] for c in COLUMNS}
    for i in range(start, stop):
        entry = archive._get_entry_by_id(i)
        if entry.is_redirect:
            continue
        item = entry.get_item()
        if item.mimetype.split(";")[0].strip() != "text/html":
            continue
        content = bytes(item.content)
        soup = BeautifulSoup(content, "lxml")
        for t in soup(["script", "style"]):
            t.decompose()
        for c, v in zip(COLUMNS, (path, name, uuid, entry.path, entry.title, item.mimetype,
                                  item.size, soup.get_text("\n"))):
            rows[c].append(v)
    schema = pa.schema([(c, pa.int64() if c == "size" else pa.string()) for c in COLUMNS])
    pq.write_table(pa.table(rows, schema=schema), out)
    return len(rows["path"]), time.process_time() - cpu0


def baseline_main(args: argparse.Namespace) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from libzim.reader import Archive

    os.makedirs(args.out)
    jobs = []
    for path in args.paths:
        n = Archive(path).entry_count
        jobs += [(path, s, min(s + args.partition_size, n)) for s in range(0, n, args.partition_size)]
    with ProcessPoolExecutor(args.n) as pool:
        pids = set(pool.map(_bs4_warm, range(4 * args.n)))
        t0 = time.perf_counter()
        futures = [pool.submit(_bs4_task, p, s, e, f"{args.out}/part.{k}.parquet")
                   for k, (p, s, e) in enumerate(jobs)]
        done = [f.result() for f in futures]
        wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "rows": sum(r for r, _ in done),
                      "cpu": sum(c for _, c in done), "processes": len(pids)}))


# ------------------------------------------------------------- driver (ours)

def peer_python() -> dict[str, str]:
    if not ORACLE.exists():
        sys.exit(f"{ORACLE} missing: the oracle venv (python-libzim 3.13.1) comes from "
                 "tools/bootstrap.sh")
    if not (PEER_SITE / "bs4").is_dir() or not (PEER_SITE / "pyarrow").is_dir():
        log("installing", PEER_PACKAGES, "into", PEER_SITE)
        subprocess.run([str(ORACLE), "-m", "pip", "install", "-q", "--target", str(PEER_SITE),
                        *PEER_PACKAGES], check=True)
    env = dict(os.environ, PYTHONPATH=str(PEER_SITE))
    return env


def run_baseline(paths: list[str], n: int, ps: int, out: Path, env: dict[str, str]) -> dict:
    # cwd outside the clone: the oracle must import PyPI's libzim, not ours.
    proc = subprocess.run([str(ORACLE), str(Path(__file__).resolve()), "--baseline-run",
                           "--n", str(n), "--partition-size", str(ps), "--out", str(out),
                           *paths], env=env, cwd="/", capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"baseline failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _dask_warm() -> int:
    # What a worker imports on its first partition (pandas, pyarrow, the
    # Parquet writer), as the baseline's processes import theirs before the clock.
    import dask.dataframe  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import libzim.dask  # noqa: F401
    return os.getpid()


def run_ours(client, paths: list[str], ps: int, out: Path) -> dict:
    from libzim.dask import read_archives

    cpu0 = client.run(time.process_time)
    t0 = time.perf_counter()
    frame = read_archives(paths, partition_size=ps)
    plan = time.perf_counter() - t0  # the client's planning, part of the wall time
    frame.to_parquet(out, write_index=False)
    wall = time.perf_counter() - t0
    cpu1 = client.run(time.process_time)
    import pyarrow.parquet as pq
    rows = pq.ParquetDataset(out).read(columns=["path"]).num_rows
    return {"wall": wall, "plan": plan, "rows": rows, "cpu": sum(cpu1[w] - cpu0[w] for w in cpu1)}


def row_keys(out: Path) -> list[tuple[str, str]]:
    """(archive, path) of every row; none may report an error."""
    import pyarrow.parquet as pq
    d = pq.ParquetDataset(out).read().to_pydict()
    if any(e is not None for e in d.get("error", [])):
        sys.exit(f"rows with an error in {out}")
    return sorted(zip(d["archive"], d["path"]))


def measure(args: argparse.Namespace, paths: list[str], env: dict[str, str]) -> list[dict]:
    import dask.dataframe  # noqa: F401  (its import, 2 s here, is not the job's)
    from distributed import Client, LocalCluster

    records = []
    tmp = Path(tempfile.mkdtemp(prefix="dask_text-"))
    try:
        for n in args.workers:
            log(f"-- {n} worker(s)")
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                              dashboard_address=":0", silence_logs=50) as cluster, \
                    Client(cluster) as client:
                client.wait_for_workers(n, timeout=120)
                client.run(_dask_warm)
                plan = ["ours"] * args.trials
                # Interleaved: the baseline's trials spread among ours.
                for k in range(args.baseline_trials):
                    plan.insert(min(len(plan), 1 + k * 2), "baseline")
                for t, impl in enumerate(plan):
                    out = tmp / f"{impl}-{n}-{t}"
                    load0 = os.getloadavg()[0]
                    r = (run_ours(client, paths, args.partition_size, out) if impl == "ours"
                         else run_baseline(paths, n, args.partition_size, out, env))
                    r.update(impl=impl, workers=n, trial=t, load_before=load0,
                             load_after=os.getloadavg()[0])
                    r["keys"] = row_keys(out)
                    log(f"{impl:8} n={n} {r['rows']} rows {r['wall']:.2f} s "
                        f"{r['rows'] / r['wall']:.0f} articles/s (load {load0:.1f}"
                        f"-{r['load_after']:.1f})")
                    records.append(r)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    keys = {json.dumps(r.pop("keys")) for r in records}
    if len(keys) != 1:
        sys.exit("ours and the baseline wrote different (archive, path) rows")
    return records


def summarize(records: list[dict]) -> list[dict]:
    rows = []
    for n in sorted({r["workers"] for r in records}):
        row = {"workers": n}
        for impl in ("ours", "baseline"):
            rs = [r for r in records if r["workers"] == n and r["impl"] == impl]
            if not rs:  # --baseline-trials 0
                row[impl] = None
                continue
            wall = statistics.median(r["wall"] for r in rs)
            row[impl] = {"articles": rs[0]["rows"], "trials": len(rs), "wall_s": round(wall, 3),
                         "articles_per_s": round(rs[0]["rows"] / wall, 1),
                         "cpu_ms_per_article": round(1000 * statistics.median(
                             r["cpu"] for r in rs) / rs[0]["rows"], 3),
                         "load": [round(min(r["load_before"] for r in rs), 2),
                                  round(max(r["load_after"] for r in rs), 2)]}
            if impl == "ours":
                row[impl]["plan_ms"] = round(1000 * statistics.median(r["plan"] for r in rs), 1)
        row["speedup"] = row["cpu_ratio"] = None
        if row["baseline"]:
            row["speedup"] = round(row["ours"]["articles_per_s"] / row["baseline"]["articles_per_s"], 1)
            # CPU per article: steadier than wall time on a shared machine.
            row["cpu_ratio"] = round(row["baseline"]["cpu_ms_per_article"]
                                     / row["ours"]["cpu_ms_per_article"], 1)
        rows.append(row)
    base1 = rows[0]["ours"]["articles_per_s"]
    for row in rows:
        row["ours"]["vs_first"] = round(row["ours"]["articles_per_s"] / base1, 2)
    return rows


def write_report(rows: list[dict], meta: dict, md: Path) -> None:
    lines = [
        "# Archives to Parquet on Dask (bench/dask_text.py)", "",
        f"Command: `{meta['command']}`; {meta['duration_s']:.0f} s; "
        f"{meta['when']}; {meta['machine']}.", "",
        f"Archives: {', '.join(meta['archives'])}; {meta['articles']} HTML articles; "
        f"partitions (and baseline tasks) of {meta['partition_size']} entries.", "",
        "| workers | ours articles/s | ours CPU ms/article | ours planning ms | "
        "baseline articles/s | baseline CPU ms/article | ours / baseline (wall) | (CPU) | "
        "ours vs 1 worker | load (min-max) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    dash = "—"
    for r in rows:
        o, b = r["ours"], r["baseline"] or {}
        lines.append(f"| {r['workers']} | {o['articles_per_s']:,.0f} | {o['cpu_ms_per_article']} | "
                     f"{o['plan_ms']:,} | "
                     f"{format(b['articles_per_s'], ',.1f') if b else dash} | "
                     f"{b.get('cpu_ms_per_article', dash)} | "
                     f"{str(r['speedup']) + 'x' if b else dash} | "
                     f"{str(r['cpu_ratio']) + 'x' if b else dash} | {o['vs_first']}x | "
                     f"{o['load'][0]}-{max(o['load'][1], b.get('load', [0, 0])[1])} |")
    lines += ["", "ours: `libzim.dask.read_archives(paths).to_parquet(dir)` on a LocalCluster "
              "of N processes, 1 thread each; baseline: python-libzim 3.13.1 + BeautifulSoup "
              "(lxml parser) in a ProcessPoolExecutor(N), one Parquet file per task. Medians of "
              f"{rows[0]['ours']['trials']} (ours) and "
              f"{rows[0]['baseline']['trials'] if rows[0]['baseline'] else 0} "
              "(baseline) interleaved trials; planning is `read_archives()` itself on the "
              "client (inside the wall time); the machine has "
              f"{os.cpu_count()} cores, shared with other jobs (load is the 1-minute average "
              "before and after the trials)."]
    md.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--baseline-trials", type=int, default=2)
    ap.add_argument("--partition-size", type=int, default=128)
    ap.add_argument("--archives", default=None,
                    help="comma-separated tools/corpus.py keys or archive files")
    ap.add_argument("--results", help="results file stem under bench/results (default dask_text)")
    ap.add_argument("--install", action="store_true", help="apt-get install missing doc packages")
    ap.add_argument("--quick", action="store_true",
                    help="python3.11-doc only, workers 1,2, one trial each: shows it works")
    # the baseline's own process (oracle python)
    ap.add_argument("--baseline-run", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline_run:
        return baseline_main(args)

    started = time.monotonic()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tools"))
    import corpus

    if args.quick:
        args.archives, args.workers, args.trials, args.baseline_trials = \
            args.archives or "python3.11-doc", "1,2", 1, 1
    args.workers = [int(w) for w in args.workers.split(",")]
    keys = args.archives.split(",") if args.archives else [
        k for k in DEFAULT_ARCHIVES if k != "linux-doc" or args.install or corpus.package_version(k)]
    # A key that names a file is that archive (tools/synthetic.py's, for example).
    paths = [k if os.path.isfile(k) else str(corpus.ensure_debian_doc_zim(k, install=args.install))
             for k in keys]
    env = peer_python()
    records = measure(args, paths, env)
    rows = summarize(records)
    meta = {
        "command": " ".join(["python3 bench/dask_text.py", *sys.argv[1:]]),
        "duration_s": time.monotonic() - started,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
        "archives": [Path(p).name for p in paths], "articles": rows[0]["ours"]["articles"],
        "partition_size": args.partition_size,
    }
    stem = args.results or ("dask_text_quick" if args.quick else "dask_text")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(
        json.dumps({"meta": meta, "summary": rows, "trials": records}, indent=1) + "\n")
    write_report(rows, meta, RESULTS / f"{stem}.md")
    print((RESULTS / f"{stem}.md").read_text())


if __name__ == "__main__":
    main()
