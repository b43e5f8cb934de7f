"""One shared Archive against one Archive per thread, interleaved trials.

    python bench/shared_archive.py --python /path/to/python --trials 7 \
        --archive python3.11-doc=PATH --archive postgresql-doc-15=PATH --archive linux-doc=PATH

runs bench/worker_ours.py (the benchmark's reader workloads, lookups and
content) under --python for every trial in the order threads/shared at 1 and 2
threads, the starting configuration alternating from trial to trial, so a
change in the machine's load falls on both sides.  Each run's JSON line gets
the 1-minute load average read just before it; the summary gives the median
ops/s per configuration, the spread (min-max), and shared/private at each
trial and as the ratio of medians.  Timings: the machine's other work shows
in them, so read the load column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def busy_cores(interval: float = 1.0) -> float:
    """Cores busy over the next interval (all processes: nothing of ours runs then)."""
    def sample():
        f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return sum(f), f[3] + f[4]  # idle + iowait
    t0, i0 = sample()
    time.sleep(interval)
    t1, i1 = sample()
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / max(t1 - t0, 1))


def wait_for_quiet(limit: float, patience: float) -> float:
    """Waits (up to patience seconds) until other work keeps fewer than limit
    cores busy: two threads need both cores to overlap at all."""
    deadline = time.monotonic() + patience
    while True:
        busy = busy_cores()
        if busy < limit or time.monotonic() > deadline:
            return busy


def run_one(args, workload, config, threads) -> dict:
    cmd = [args.python, str(HERE / "worker_ours.py"), "--inputs", args.inputs, "--workload", workload,
           "--threads", str(threads), "--config", config, "--duration", str(args.duration)]
    for a in args.archive:
        cmd += ["--archive", a]
    busy = wait_for_quiet(args.quiet_below, args.patience) if args.quiet_below else None
    before = load1()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    rec["load1_before"] = before
    rec["busy_cores_before"] = busy
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--archive", action="append", required=True, metavar="KEY=PATH")
    ap.add_argument("--inputs", default=str(HERE / "out" / "inputs" / "reader"))
    ap.add_argument("--workloads", default="lookups,content")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--quiet-below", type=float, default=0.0,
                    help="before each run wait until other work keeps fewer cores busy (0: do not wait)")
    ap.add_argument("--patience", type=float, default=120.0, help="longest wait for quiet, seconds")
    ap.add_argument("--jsonl", help="append every run's JSON line here")
    args = ap.parse_args()
    records = []
    for trial in range(args.trials):
        for workload in args.workloads.split(","):
            for threads in (1, 2):
                configs = ("threads", "shared") if trial % 2 == 0 else ("shared", "threads")
                for config in configs:
                    rec = run_one(args, workload, config, threads)
                    rec["trial"] = trial
                    records.append(rec)
                    print(f"trial {trial} {workload:8} {config:7} {threads}: {rec['ops_per_s']:9.0f} ops/s"
                          f"  load {rec['load1_before']:.2f} busy {rec['busy_cores_before'] or 0:.2f}", file=sys.stderr, flush=True)
                    if args.jsonl:
                        with open(args.jsonl, "a", encoding="utf-8") as f:
                            f.write(json.dumps(rec) + "\n")
    summarize(records, args.workloads.split(","))


def summarize(records, workloads) -> None:
    digests = {(r["workload"], r["digest"]) for r in records}
    consistent = all(r["threads_consistent"] for r in records) and len(digests) == len(workloads)
    print(f"digests agree across every run and thread: {consistent}")
    print("| workload | threads | private ops/s (median, min-max) | shared ops/s (median, min-max) "
          "| shared/private (median ratio; per-trial min-max) | load1 (min-max) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for workload in workloads:
        for threads in (1, 2):
            sel = [r for r in records if r["workload"] == workload and r["threads"] == threads]
            by = {c: {r["trial"]: r["ops_per_s"] for r in sel if r["config"] == c} for c in ("threads", "shared")}
            p, s = list(by["threads"].values()), list(by["shared"].values())
            ratios = [by["shared"][t] / by["threads"][t] for t in by["threads"] if t in by["shared"]]
            loads = [r["load1_before"] for r in sel]
            print(f"| {workload} | {threads} | {statistics.median(p):,.0f} ({min(p):,.0f}-{max(p):,.0f}) "
                  f"| {statistics.median(s):,.0f} ({min(s):,.0f}-{max(s):,.0f}) "
                  f"| {statistics.median(s) / statistics.median(p):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) "
                  f"| {min(loads):.2f}-{max(loads):.2f} |")


if __name__ == "__main__":
    main()
