#!/usr/bin/env python3
"""Instructions per content read under callgrind, warm and cold, for the shim's cluster reader.

    python3 bench/callgrind_clusters.py                 # R = 2, 1,500-article synthetic archive
    python3 bench/callgrind_clusters.py --rounds 3 --keep

What bench/callgrind.py does for its op lists, for content reads only, on
archives that need no Debian package or zimwriterfs: tools/synthetic.py's
archive (zstd clusters, libzim's level 19) and a copy of it with every cluster
re-encoded as xz (tools/zimedit.py's to_xz), both cached in
~/.cache/libzim-c/callgrind-clusters/.  Each read is what `zim serve` and
bench/_harness.py do: ``archive.get_entry_by_path(p).get_item().content``.

- warm: every entry of the first compressed clusters (at most --warm-ops),
  whose clusters all fit the default 16 MiB cluster cache: after the warm-up
  pass every read finds its blob decoded (the lock-free path).
- cold (zstd, xz): one read per compressed cluster, of the cluster's last
  blob (so the whole cluster is decoded), the cache emptied before each round
  (set_cluster_cache_max_size(0), then the default again): every read is the
  first read of its cluster, with the map pools and decoder contexts in the
  steady state a churning cache has.

Each workload runs under ``valgrind --tool=callgrind`` twice, warm-up + R rounds
and warm-up + 3R rounds; (Ir(3R) - Ir(R)) / (2R x ops) is one read with
start-up, imports and opening dropped out.  Callgrind counts instructions, so
machine load does not move the numbers; compare two builds by running each
checkout's copy of this script on the same archives.  Prints a table; writes
nothing under bench/results (paste the line you want to keep).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import importlib.util
import json
import os
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path.home() / ".cache" / "libzim-c" / "callgrind-clusters"
WORKLOADS = ("warm", "cold-zstd", "cold-xz")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- the archive's layout, from its bytes


def content_entries(path: str) -> dict[int, list[tuple[int, str]]]:
    """Per compressed (zstd or xz) cluster: its entries' (blob, path), from the
    header, the dirents and each cluster's first byte (no libzim)."""
    data = Path(path).read_bytes()
    entries, clusters = struct.unpack_from("<II", data, 24)
    path_ptr, cluster_ptr = struct.unpack_from("<Q", data, 32)[0], struct.unpack_from("<Q", data, 48)[0]
    out: dict[int, list[tuple[int, str]]] = {}
    for i in range(entries):
        at = struct.unpack_from("<Q", data, path_ptr + 8 * i)[0]
        mime, _param_len, ns = struct.unpack_from("<HBc", data, at)
        if mime >= 0xFFFD:  # redirect, link target, deleted
            continue
        cluster, blob = struct.unpack_from("<II", data, at + 8)
        if cluster >= clusters or data[struct.unpack_from("<Q", data, cluster_ptr + 8 * cluster)[0]] & 0x0F not in (4, 5):
            continue
        end = data.index(b"\0", at + 16)
        name = data[at + 16:end].decode()
        if ns == b"C":
            out.setdefault(cluster, []).append((blob, name))
    return out


def op_lists(path: str, warm_ops: int, warm_clusters: int) -> dict[str, list[str]]:
    by_cluster = content_entries(path)
    order = sorted(by_cluster)
    warm = [p for c in order[:warm_clusters] for _, p in sorted(by_cluster[c])][:warm_ops]
    cold = [max(by_cluster[c])[1] for c in order]
    return {"warm": warm, "cold": cold}


# ---------------------------------------------------------------- driver (runs under valgrind)


def drive(args) -> None:
    sys.path.insert(0, str(Path(args.root)))  # the checkout whose build is measured
    import libzim
    from libzim.reader import Archive

    ops = json.loads(Path(args.ops).read_text())
    archive = Archive(args.archive)
    cold = args.workload != "warm"
    paths = ops["cold" if cold else "warm"]
    budget = libzim.reader.get_cluster_cache_max_size()

    def one_round(digest=None):
        if cold:
            libzim.reader.set_cluster_cache_max_size(0)
            libzim.reader.set_cluster_cache_max_size(budget)
        n = 0
        for p in paths:
            content = archive.get_entry_by_path(p).get_item().content
            n += len(content)
            if digest is not None:
                digest.update(bytes(content))
        return n

    d = hashlib.sha256()
    one_round(d)  # warm-up, with the digest of what was read
    for _ in range(args.rounds):
        one_round()
    print(json.dumps({"ops": len(paths), "digest": d.hexdigest(), "module": libzim._libzim.__file__}))


# ---------------------------------------------------------------- coordinator


def ensure_archives(articles: int) -> dict[str, Path]:
    CACHE.mkdir(parents=True, exist_ok=True)
    synthetic = _load("_libzim_c_synthetic", ROOT / "tools" / "synthetic.py")
    zimedit = _load("_libzim_c_zimedit", ROOT / "tools" / "zimedit.py")
    zstd = synthetic.ensure_synthetic_zim(articles, cache_dir=CACHE)
    xz = zstd.with_name(zstd.stem + "-xz.zim")
    if not xz.is_file():
        tmp = xz.with_suffix(".tmp")
        tmp.write_bytes(zimedit.to_xz(zstd.read_bytes()))
        os.replace(tmp, xz)
    return {"zstd": zstd, "xz": xz}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drive", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--archive", help=argparse.SUPPRESS)
    ap.add_argument("--ops", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=str(ROOT), help="the checkout whose libzim is measured (default: this one)")
    ap.add_argument("--rounds", type=int, default=2, help="R: rounds of the short run (the long one is 3R)")
    ap.add_argument("--articles", type=int, default=1500, help="size of the synthetic archive")
    ap.add_argument("--warm-ops", type=int, default=300)
    ap.add_argument("--warm-clusters", type=int, default=4, help="clusters the warm reads come from")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the callgrind.out files in bench/out/callgrind-clusters")
    args = ap.parse_args()
    if args.drive:
        drive(args)
        return 0

    sys.path.insert(0, str(Path(args.root)))  # the archive is written with the measured checkout's libzim
    cg = _load("_libzim_c_callgrind", HERE / "callgrind.py")
    archives = ensure_archives(args.articles)
    ops = {k: op_lists(str(p), args.warm_ops, args.warm_clusters) for k, p in archives.items()}
    workloads = [w for w in args.workloads.split(",") if w]
    outdir = HERE / "out" / "callgrind-clusters"
    with tempfile.TemporaryDirectory() as tmp:
        opfiles = {}
        for k, v in ops.items():
            opfiles[k] = Path(tmp) / f"ops-{k}.json"
            opfiles[k].write_text(json.dumps(v))

        def one(job):
            w, r = job
            key = "xz" if w == "cold-xz" else "zstd"
            if args.keep:
                outdir.mkdir(parents=True, exist_ok=True)
            out = (outdir if args.keep else Path(tmp)) / f"callgrind.{w}.{r}"
            cmd = [args.python, str(Path(__file__).resolve()), "--drive", "1", "--workload", w, "--archive",
                   str(archives[key]), "--ops", str(opfiles[key]), "--root", args.root, "--rounds", str(r)]
            return job, cg.measure(cmd, out)

        jobs = [(w, r) for w in workloads for r in (args.rounds, 3 * args.rounds)]
        results = {}
        with cf.ThreadPoolExecutor(args.jobs) as pool:
            for job, (ir, info) in pool.map(one, jobs):
                results[job] = (ir, info)
                print(f"  {job[0]:9} rounds={job[1]}: {ir:,} Ir", file=sys.stderr, flush=True)
    module = results[jobs[0]][1]["module"]
    print(f"libzim._libzim: {module}; archive {archives['zstd'].name} (+ -xz), R = {args.rounds}")
    print("| workload | reads per round | Ir(R) | Ir(3R) | Ir per read | content digest |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for w in workloads:
        (ir1, _), (ir3, info) = results[(w, args.rounds)], results[(w, 3 * args.rounds)]
        per = (ir3 - ir1) / (2 * args.rounds * info["ops"])
        print(f"| {w} | {info['ops']} | {ir1:,} | {ir3:,} | {per:,.1f} | {info['digest'][:12]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
