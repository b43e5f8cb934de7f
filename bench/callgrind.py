#!/usr/bin/env python3
"""Instructions per operation under callgrind: the benchmark that machine load cannot skew.

    python3 bench/callgrind.py                       # paths + results, R=1, all three
    python3 bench/callgrind.py --rounds 2 --workloads paths,results,lookups,content
    python3 bench/callgrind.py --impls ours --keep   # keep callgrind.out files to annotate

Every implementation runs the op list of bench/run.py (every query of every
bench archive, 16 hits) under `valgrind --tool=callgrind`: once warm-up + R
rounds, once warm-up + 3R rounds.  (Ir(3R) - Ir(R)) / (2R x ops) is the cost
of one operation with start-up, imports, archive opening and cold caches
dropped out.  Implementations:

  raw-cpp      bench/raw_search.cpp (--passes), the ceiling
  ours         this binding, under --python (default: the running interpreter)
  peer-debian  Debian's python3-libzim 2.1.0 under /usr/bin/python3

For a fair comparison run this with a venv of /usr/bin/python3 (the same
interpreter build as the peer).  The two Python implementations run the
workers' own `run()` (worker_ours.py / worker_peer.py), so they do exactly
what the timed benchmark does.  The warm-up pass also computes the result
digest, which must agree across implementations.

Writes bench/results/callgrind.md and callgrind.json unless --no-write.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEBIAN_PYTHON = "/usr/bin/python3"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- driver (runs under valgrind)


def drive(args):
    """One implementation: warm-up pass with digests, then `rounds` plain passes."""
    import hashlib

    sys.path.insert(0, str(HERE))
    import _harness

    if args.drive == "ours":
        import worker_ours

        impl = worker_ours.OursImpl()
    else:
        import worker_peer

        impl = worker_peer.PeerImpl()
    specs = [tuple(a.split("=", 1)) for a in args.archive]
    ops = _harness.load_ops(specs, args.inputs, args.workload)
    ctx = impl.open(specs, args.workload)
    run, workload, hits = impl.run, args.workload, args.hits
    d, x = [], []
    for op in ops:
        run(ctx, workload, op, hits, (d, x))
    for _ in range(args.rounds):
        for op in ops:
            run(ctx, workload, op, hits, None)
    print(json.dumps({"op_list_len": len(ops), "digest": hashlib.sha256("".join(d).encode()).hexdigest(),
                      "extra_digest": hashlib.sha256("".join(x).encode()).hexdigest() if x else None}))


# ---------------------------------------------------------------- coordinator


def callgrind_total(path: Path) -> int:
    total = None
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    if total is None:
        raise RuntimeError(f"no totals in {path}")
    return total


def measure(cmd, out_file: Path) -> tuple[int, dict]:
    full = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--dump-instr=no",
            "--trace-children=no"] + cmd
    env = dict(os.environ, PYTHONHASHSEED="0")
    p = subprocess.run(full, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... failed (exit {p.returncode}): {p.stderr.strip()[-800:]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    info = json.loads(lines[-1]) if lines else {}
    return callgrind_total(out_file), info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drive", choices=("ours", "peer"), help=argparse.SUPPRESS)
    ap.add_argument("--archive", action="append", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--hits", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1, help="R: rounds of the short run (the long one is 3R)")
    ap.add_argument("--workloads", default="paths,results")
    ap.add_argument("--impls", default="raw-cpp,ours,peer-debian")
    ap.add_argument("--archives", default="python3.11-doc,postgresql-doc-15,linux-doc")
    ap.add_argument("--python", default=sys.executable, help="interpreter for ours")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the callgrind.out files in bench/out/callgrind")
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch bench/results")
    args = ap.parse_args()
    if args.drive:
        return drive(args)

    bench = _load("_libzim_c_bench_run", HERE / "run.py")
    corpus = bench.corpus
    keys = [k for k in args.archives.split(",") if k]
    archives = {k: corpus.ensure_debian_doc_zim(k, bench.CACHE / "zim") for k in keys}
    raw = bench.build_raw()
    inputs = bench.make_inputs(raw, archives)
    archive_args = [a for k, p in archives.items() for a in ("--archive", f"{k}={p}")]
    me = str(Path(__file__).resolve())
    commands = {"raw-cpp": lambda w, r: [str(raw), *archive_args, "--inputs", str(inputs[w]), "--workload", w,
                                         "--threads", "1", "--hits", str(args.hits), "--passes", str(r)],
                "ours": lambda w, r: [args.python, me, "--drive", "ours", *archive_args, "--inputs",
                                      str(inputs[w]), "--workload", w, "--hits", str(args.hits), "--rounds", str(r)],
                "peer-debian": lambda w, r: [DEBIAN_PYTHON, me, "--drive", "peer", *archive_args, "--inputs",
                                             str(inputs[w]), "--workload", w, "--hits", str(args.hits),
                                             "--rounds", str(r)]}
    impls = [i for i in args.impls.split(",") if i]
    workloads = [w for w in args.workloads.split(",") if w]
    outdir = bench.OUT / "callgrind"
    outdir.mkdir(parents=True, exist_ok=True)
    jobs = []
    for w in workloads:
        for impl in impls:
            for r in (args.rounds, 3 * args.rounds):
                jobs.append((w, impl, r))
    results = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(args.jobs) as pool:
        def one(job):
            w, impl, r = job
            out = (outdir if args.keep else Path(tmp)) / f"callgrind.{impl}.{w}.{r}"
            return job, measure(commands[impl](w, r), out)

        for job, (ir, info) in pool.map(one, jobs):
            results[job] = (ir, info)
            print(f"  {job[1]:12} {job[0]:8} rounds={job[2]}: {ir:,} Ir", file=sys.stderr, flush=True)
    rows = []
    for w in workloads:
        for impl in impls:
            (ir1, i1), (ir3, i3) = results[(w, impl, args.rounds)], results[(w, impl, 3 * args.rounds)]
            nops = i3["op_list_len"]
            rows.append({"workload": w, "impl": impl, "ops": nops, "rounds": args.rounds,
                         "ir_short": ir1, "ir_long": ir3, "per_op": (ir3 - ir1) / (2 * args.rounds * nops),
                         "digest": i3.get("digest"), "extra_digest": i3.get("extra_digest")})
    text = report(rows, args, time.monotonic() - t0)
    print(text)
    if not args.no_write:
        bench.RESULTS.mkdir(parents=True, exist_ok=True)
        (bench.RESULTS / "callgrind.md").write_text(text, encoding="utf-8")
        (bench.RESULTS / "callgrind.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0 if all(ok for ok in _digests_agree(rows).values()) else 1


def _digests_agree(rows):
    """Per workload: every implementation's result digest is the same, and so
    is the score digest of those that have scores (the peer has none)."""
    agree = {}
    for w in dict.fromkeys(r["workload"] for r in rows):
        ds = {r["digest"] for r in rows if r["workload"] == w}
        xs = {r["extra_digest"] for r in rows if r["workload"] == w and r["extra_digest"]}
        agree[w] = len(ds) == 1 and len(xs) <= 1
    return agree


def report(rows, args, secs):
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    by = {(r["workload"], r["impl"]): r for r in rows}
    lines = ["# Instructions per operation (callgrind)", "",
             f"`python3 bench/callgrind.py {' '.join(sys.argv[1:])}`, {time.strftime('%Y-%m-%d')}; "
             f"ours under `{args.python}`, peer under `{DEBIAN_PYTHON}`. "
             f"(Ir(3R) - Ir(R)) / (2R x ops), R = {args.rounds}, {args.hits} hits per search. "
             f"Took {secs:.0f} s.", "",
             "| per op | " + " | ".join(impls) + " |", "| --- | " + " | ".join("---:" for _ in impls) + " |"]
    agree = _digests_agree(rows)
    for w in dict.fromkeys(r["workload"] for r in rows):
        raw = by.get((w, "raw-cpp"))
        cells = []
        for i in impls:
            r = by[(w, i)]
            cell = f"{r['per_op'] / 1e3:.1f}k"
            if raw and i != "raw-cpp":
                cell += f" ({r['per_op'] / raw['per_op']:.3f}x)"
            cells.append(cell)
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    lines += ["", "Result digests: " + ", ".join(
        f"{w} {'agree' if ok else 'DISAGREE'}" for w, ok in agree.items()) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
