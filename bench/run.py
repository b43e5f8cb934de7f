#!/usr/bin/env python3
"""The libzim-c benchmark: our binding vs python-libzim vs the raw C++ loop.

    python3 bench/run.py                 # full run (3 trials), ~30 min
    python3 bench/run.py --quick         # 1 trial, short, fewer configurations
    python3 bench/run.py --install       # also apt-get install linux-doc

Builds the ZIM archives (tools/corpus.py, cached in bench/.cache/), compiles
bench/raw_search.cpp, runs every (implementation, workload, configuration)
in its own subprocess while sampling the PSS of its process tree, checks that
all implementations return the same results (digests), and writes
bench/results/{results.md,results.json,chart.png}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
OUT = HERE / "out"
RESULTS = HERE / "results"
PYPI_VENV = CACHE / "venv-pypi"
DEBIAN_PYTHON = "/usr/bin/python3"

sys.path.insert(0, str(ROOT / "tools"))
import corpus  # noqa: E402  (stdlib only: no need for the built extension)

DEFAULT_ARCHIVES = ["python3.11-doc", "postgresql-doc-15", "linux-doc"]
WORKLOADS = ["paths", "results", "snippets", "lookups", "content"]
WORKLOAD_DOC = {
    "paths": "search, 16 hits, paths only",
    "results": "search, 16 hits, path+title+score (peer: paths + title lookup by path)",
    "snippets": "search, 16 hits, path+title+score+snippet (every 4th query)",
    "lookups": "get_entry_by_path + get_entry_by_title + item mimetype (200 entries/archive)",
    "content": "get_entry_by_path(...).get_item().content, len() only (300 random items/archive)",
}
LOOKUP_SAMPLE = 200
CONTENT_SAMPLE = 300
SNIPPET_QUERY_STRIDE = 4  # snippets cost ~1000x a plain search; keep runs bounded


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- setup


def ensure_archive(key: str, cache: Path, install: bool = False) -> Path:
    """The archive for an --archives key: a Debian doc package, or a combined
    archive of tools/corpus.py (``rustjava``, ~42,000 pages).  A combined one
    lives in corpus.py's default cache whatever ``cache`` says: it takes
    minutes to build, and bench/size_scaling.py and text.py read it there."""
    if key in corpus.COMBINED_ARCHIVES:
        return corpus.ensure_combined_doc_zim(key, install=install)
    return corpus.ensure_debian_doc_zim(key, cache, install=install)


def build_raw(force=False) -> Path:
    exe = OUT / "raw_search"
    src = HERE / "raw_search.cpp"
    if not force and exe.exists() and exe.stat().st_mtime >= src.stat().st_mtime:
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libzim"], capture_output=True, text=True, check=True)
    cmd = ["g++", "-O2", "-std=c++17", str(src), "-o", str(exe), *flags.stdout.split(), "-pthread"]
    log("compiling:", " ".join(cmd))
    subprocess.run(cmd, check=True)
    return exe


def ensure_pypi_venv() -> Path | None:
    py = PYPI_VENV / "bin" / "python"
    if not py.exists():
        log("creating", PYPI_VENV, "with PyPI libzim")
        try:
            subprocess.run([sys.executable, "-m", "venv", str(PYPI_VENV)], check=True)
            subprocess.run([str(py), "-m", "pip", "install", "-q", "libzim"], check=True)
        except (subprocess.CalledProcessError, OSError) as e:
            log("PyPI libzim unavailable:", e)
            return None
    ok = subprocess.run([str(py), "-c", "import libzim.search"], capture_output=True)
    return py if ok.returncode == 0 else None


def ours_available() -> tuple[bool, bool, str]:
    """(reader importable, search importable, why not) for our in-place build."""
    def try_import(stmt):
        p = subprocess.run([sys.executable, "-c", stmt], cwd=ROOT, capture_output=True, text=True)
        return p.returncode == 0, (p.stderr.strip().splitlines() or [""])[-1]

    reader, why = try_import("import libzim._libzim; from libzim.reader import Archive")
    if not reader:
        return False, False, why
    search, why = try_import("from libzim.search import Query, Searcher")
    return True, search, why


def debian_peer_available() -> bool:
    p = subprocess.run([DEBIAN_PYTHON, "-c", "import libzim.search"], capture_output=True)
    return p.returncode == 0


def make_inputs(raw: Path, archives: dict[str, Path]) -> dict[str, Path]:
    """Write the op lists every implementation reads; returns workload -> input dir."""
    dirs = {w: OUT / "inputs" / w for w in ("search", "snippets", "reader")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    for key, zim in archives.items():
        qfile = HERE / "queries" / f"{key}.txt"
        queries = [q.strip() for q in qfile.read_text(encoding="utf-8").splitlines()
                   if q.strip() and not q.startswith("#")]
        (dirs["search"] / f"{key}.queries.txt").write_text("\n".join(queries) + "\n", encoding="utf-8")
        (dirs["snippets"] / f"{key}.queries.txt").write_text(
            "\n".join(queries[::SNIPPET_QUERY_STRIDE]) + "\n", encoding="utf-8")
        listing = subprocess.run([str(raw), "--list-entries", str(zim)], capture_output=True, check=True)
        entries = []
        for line in listing.stdout.decode("utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                entries.append(parts)
        entries.sort()
        rng = random.Random(f"lookups:{key}")
        html = [e for e in entries if e[2].startswith("text/html") and e[1]]
        sample = rng.sample(html, min(LOOKUP_SAMPLE, len(html)))
        (dirs["reader"] / f"{key}.lookups.tsv").write_text(
            "".join(f"{p}\t{t}\n" for p, t, _m in sample), encoding="utf-8")
        rng = random.Random(f"content:{key}")
        sample = rng.sample(entries, min(CONTENT_SAMPLE, len(entries)))
        (dirs["reader"] / f"{key}.content.txt").write_text("".join(f"{p}\n" for p, _t, _m in sample), encoding="utf-8")
    return {"paths": dirs["search"], "results": dirs["search"], "snippets": dirs["snippets"],
            "lookups": dirs["reader"], "content": dirs["reader"]}


# ---------------------------------------------------------------- measuring


def _tree_pids(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str], timeout: float) -> tuple[dict, float]:
    """Run one worker; return (its JSON or an error record, peak PSS of its tree in MiB)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], sum(_pss_kib(p) for p in _tree_pids(proc.pid)))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        done.set()
        return {"error": f"timeout after {timeout:.0f}s"}, peak[0] / 1024
    done.set()
    sampler.join()
    if proc.returncode != 0:
        rc = proc.returncode
        what = f"killed by signal {-rc}" if rc < 0 else f"exit {rc}"
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        return {"error": f"{what}: {' | '.join(tail)}"}, peak[0] / 1024
    lines = [l for l in out.decode(errors="replace").splitlines() if l.startswith("{")]
    if not lines:
        return {"error": "no JSON output: " + err.decode(errors="replace")[-300:]}, peak[0] / 1024
    return json.loads(lines[-1]), peak[0] / 1024


# ---------------------------------------------------------------- reporting


def machine_info() -> dict:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    libzim = subprocess.run(["pkg-config", "--modversion", "libzim"], capture_output=True, text=True).stdout.strip()
    try:
        debian = Path("/etc/debian_version").read_text().strip()
    except OSError:
        debian = "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "libzim": libzim,
            "debian": debian, "python": platform.python_version(), "memory_gib": round(
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def summarize(records: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["impl"], r["workload"], r["config"], r["threads"]), []).append(r)
    rows = []
    for (impl, workload, config, threads), rs in groups.items():
        ok = [r for r in rs if "ops_per_s" in r]
        row = {"impl": impl, "workload": workload, "config": config, "threads": threads,
               "trials": len(ok), "errors": [r["error"] for r in rs if "error" in r],
               "unsupported": next((r["unsupported"] for r in rs if "unsupported" in r), None)}
        if ok:
            med = lambda k: statistics.median(r[k] for r in ok)  # noqa: E731
            row.update(ops_per_s=med("ops_per_s"), p50_ms=med("p50_ms"), p95_ms=med("p95_ms"),
                       cpu_ms_per_op=statistics.median(r["cpu_s"] * 1e3 / r["ops"] for r in ok),
                       pss_mib=med("pss_mib"), digests=sorted({r["digest"] for r in ok}),
                       extra_digests=sorted({r["extra_digest"] for r in ok if r.get("extra_digest")}),
                       consistent=all(r.get("threads_consistent") for r in ok))
        rows.append(row)
    return rows


def check_digests(rows: list[dict]) -> list[str]:
    """Every implementation must return what the raw C++ loop returns."""
    problems = []
    for w in WORKLOADS:
        ref = [r for r in rows if r["workload"] == w and r["impl"] == "raw-cpp" and r.get("digests")]
        if not ref:
            continue
        want, want_x = ref[0]["digests"], ref[0]["extra_digests"]
        for r in rows:
            if r["workload"] != w or not r.get("digests"):
                continue
            label = f"{r['impl']} {w} {r['config']}x{r['threads']}"
            if r["digests"] != want:
                problems.append(f"{label}: result digest {r['digests']} != raw C++ {want}")
            # libzim-c's snippets come from its own engine: only paths and titles compare.
            own_snippets = w == "snippets" and r["impl"] == "ours"
            if r["extra_digests"] and want_x and r["extra_digests"] != want_x and not own_snippets:
                problems.append(f"{label}: score/snippet digest {r['extra_digests']} != raw C++ {want_x}")
            if not r["consistent"]:
                problems.append(f"{label}: threads/processes disagreed with each other")
    return problems


IMPL_LABEL = {
    "raw-cpp": "raw C++ (libzim {libzim})",
    "ours": "libzim-c (ours)",
    "peer-debian": "python-libzim 2.1.0 (Debian)",
    "peer-pypi": "python-libzim {pypi} (PyPI, bundles libzim {pypi_libzim})",
}


def write_report(rows, problems, info, meta, path_md: Path):
    raw = {(r["workload"], r["threads"]): r.get("ops_per_s") for r in rows
           if r["impl"] == "raw-cpp" and r["config"] == "threads"}
    labels = {k: v.format(**meta) for k, v in IMPL_LABEL.items()}
    order = {k: i for i, k in enumerate(IMPL_LABEL)}
    cfg_order = {"threads": 0, "shared": 1, "procs": 2}
    lines = [
        "# libzim-c benchmark results",
        "",
        f"Generated by `python3 bench/run.py {' '.join(meta['argv'])}` on {meta['date']}.",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB RAM, Linux {info['kernel']}, "
        f"Debian {info['debian']}, system libzim {info['libzim']}, Python {info['python']}.",
        "",
        "Archives (built by `tools/corpus.py` with zimwriterfs, full-text index): "
        + ", ".join(f"`{k}` ({v / 2**20:.1f} MiB)" for k, v in meta["archive_sizes"].items()) + ".",
        f"Queries: `bench/queries/<archive>.txt`; one search = one query against one archive. "
        f"Medians of {meta['trials']} trials of >= {meta['duration']} s (whole passes over the op list).",
        "",
        "Configurations: `threads` = N threads, each with its own Archive+Searcher; "
        "`shared` = N threads sharing one Archive+Searcher per ZIM; `procs` = N processes (multiprocessing, fork), "
        "each with its own objects. *vs C++* = throughput / raw C++ loop with the same number of threads. "
        "CPU ms/op = process CPU time in the timed window / ops. Peak PSS = whole process tree, sampled every 50 ms.",
        "",
        "Implementations: " + "; ".join(f"`{k}` = {labels[k]}" for k in meta["impls"]) + ".",
        "",
    ]
    if problems:
        lines += ["## ⚠ RESULT MISMATCHES", ""] + [f"- {p}" for p in problems] + [""]
    else:
        lines += ["All implementations returned identical results (digests of archive|query|rank|path|title, "
                  "and of scores/snippets where available) in every configuration.", ""]
    for n in meta.get("notes", []):
        lines.append(f"Note: {n}")
    lines.append("")
    for w in WORKLOADS:
        wrows = [r for r in rows if r["workload"] == w]
        if not wrows:
            continue
        wrows.sort(key=lambda r: (order.get(r["impl"], 9), cfg_order.get(r["config"], 9), r["threads"]))
        lines += [f"## {w}: {WORKLOAD_DOC[w]}", "",
                  "| implementation | config | N | ops/s | vs C++ | CPU ms/op | p50 ms | p95 ms | peak PSS MiB |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in wrows:
            head = f"| {r['impl']} | {r['config']} | {r['threads']} "
            if r.get("ops_per_s") is None:
                why = r["unsupported"] or ("; ".join(r["errors"]) if r["errors"] else "n/a")
                why = why.replace("|", "/").replace("\n", " ")[:140]
                lines.append(head + f"| n/a | | | | | | {why} |")
                continue
            base = raw.get((w, r["threads"]))
            ratio = f"{r['ops_per_s'] / base:.2f}" if base else ""
            lines.append(head + f"| {r['ops_per_s']:,.0f} | {ratio} | {r['cpu_ms_per_op']:.3f} | "
                         f"{r['p50_ms']:.3f} | {r['p95_ms']:.3f} | {r['pss_mib']:.0f} |"
                         + (f" {len(r['errors'])} failed trial(s)" if r["errors"] else ""))
        lines.append("")
    path_md.write_text("\n".join(lines), encoding="utf-8")


def write_chart(rows, meta, path_png: Path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing (pip install -r bench/requirements.txt, or --install): no chart")
        return False
    workloads = [w for w in WORKLOADS if any(r["workload"] == w for r in rows)]
    fig, axes = plt.subplots(1, len(workloads), figsize=(4.2 * len(workloads), 4.4), squeeze=False)
    styles = {"threads": "-", "shared": "--", "procs": ":"}
    colors = {"raw-cpp": "black", "ours": "tab:blue", "peer-debian": "tab:orange", "peer-pypi": "tab:green"}
    for ax, w in zip(axes[0], workloads):
        series: dict[tuple, list] = {}
        for r in rows:
            if r["workload"] == w and r.get("ops_per_s"):
                series.setdefault((r["impl"], r["config"]), []).append((r["threads"], r["ops_per_s"]))
        for (impl, config), pts in sorted(series.items()):
            one = series.get((impl, "threads"), [])
            if config != "threads" and not any(p[0] == 1 for p in pts):
                pts = pts + [p for p in one if p[0] == 1]  # N=1 is the same run for every config
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(config, "-"), marker="o",
                    color=colors.get(impl), label=f"{impl} {config}")
        ax.set_title(w)
        ax.set_xlabel("threads / processes")
        ax.set_xticks(sorted({r["threads"] for r in rows}))
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("ops/s (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        h, l = ax.get_legend_handles_labels()
        for hh, ll in zip(h, l):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8)
    fig.suptitle(f"libzim-c benchmark ({meta['date']}, {meta['cores']} cores)")
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(path_png, dpi=110)
    return True


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 trial of 1 s, threads 1 and 2 only")
    ap.add_argument("--archives", default=None,
                    help=f"comma-separated Debian doc packages (default: {','.join(DEFAULT_ARCHIVES)}; "
                         "linux-doc only if installed or --install), or rustjava: the ~42,000-page "
                         "archive of tools/corpus.py --combined (built here if missing: minutes)")
    ap.add_argument("--install", action="store_true",
                    help="install what is missing: doc packages and python3-libzim (apt), matplotlib (pip)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per timed window")
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--impls", default="raw-cpp,ours,peer-debian,peer-pypi")
    ap.add_argument("--no-write", action="store_true", help="print the summary, do not touch bench/results")
    args = ap.parse_args()
    if args.quick:
        args.trials, args.duration = 1, 1.0
        if args.threads == "1,2,4":
            args.threads = "1,2"
    thread_counts = [int(t) for t in args.threads.split(",")]
    workloads = [w for w in args.workloads.split(",") if w]
    impls = [i for i in args.impls.split(",") if i]
    notes = []

    if args.install and importlib.util.find_spec("matplotlib") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r",
                        str(HERE / "requirements.txt")], check=False)

    CACHE.mkdir(parents=True, exist_ok=True)
    keys = args.archives.split(",") if args.archives else [
        k for k in DEFAULT_ARCHIVES if k != "linux-doc" or args.install or corpus.package_version(k)]
    archives = {}
    for key in keys:
        log(f"archive {key} ...")
        archives[key] = ensure_archive(key, CACHE / "zim", install=args.install)
    raw = build_raw()
    inputs = make_inputs(raw, archives)
    archive_args = [a for k, p in archives.items() for a in ("--archive", f"{k}={p}")]

    commands = {}
    ours_search_missing = False
    if "raw-cpp" in impls:
        commands["raw-cpp"] = [str(raw)]
    meta_extra = {"pypi": "?", "pypi_libzim": "?"}
    if "ours" in impls:
        reader_ok, search_ok, why = ours_available()
        if reader_ok:
            commands["ours"] = [sys.executable, str(HERE / "worker_ours.py")]
        if not search_ok:
            ours_search_missing = True
            notes.append(f"ours: search workloads skipped, libzim.search not importable ({why})")
            log("ours search skipped:", why)
    if "peer-debian" in impls:
        if not debian_peer_available() and args.install:
            subprocess.run(["apt-get", "install", "-y", "-qq", "python3-libzim"], check=False)
        if debian_peer_available():
            commands["peer-debian"] = [DEBIAN_PYTHON, str(HERE / "worker_peer.py")]
        else:
            notes.append("peer-debian skipped: apt-get install -y python3-libzim")
    if "peer-pypi" in impls:
        py = ensure_pypi_venv()
        if py:
            commands["peer-pypi"] = [str(py), str(HERE / "worker_peer.py")]
            v = subprocess.run([str(py), "-I", "-c", "import importlib.metadata as m, libzim.version as v;"
                                "print(m.version('libzim'), v.get_libzim_version())"],
                               capture_output=True, text=True, cwd="/").stdout.split()
            if len(v) == 2:
                meta_extra = {"pypi": v[0], "pypi_libzim": v[1]}
        else:
            notes.append("peer-pypi skipped: pip install libzim failed")

    plan = []
    for w in workloads:
        for impl, cmd in commands.items():
            if impl == "ours" and ours_search_missing and w in ("paths", "results", "snippets"):
                continue
            configs = [("threads", n) for n in thread_counts]
            if impl != "raw-cpp":
                configs += [("shared", n) for n in thread_counts if n > 1]
                configs += [("procs", n) for n in thread_counts if n > 1]
            for config, n in configs:
                plan.append((w, impl, config, n, cmd))
    log(f"{len(plan)} configurations x {args.trials} trials")

    records = []
    crashed_shared = set()
    for trial in range(args.trials):
        for w, impl, config, n, cmd in plan:
            if config == "shared" and (impl, w) in crashed_shared:
                continue  # a segfaulting configuration is reported once, not re-run
            full = cmd + archive_args + ["--inputs", str(inputs[w]), "--workload", w, "--threads", str(n),
                                         "--duration", str(args.duration)]
            if impl != "raw-cpp":
                full += ["--config", config]
            rec, pss = run_measured(full, timeout=120 + 40 * args.duration)
            rec.update(impl=impl, workload=w, config=config, threads=n, trial=trial, pss_mib=pss)
            records.append(rec)
            if "error" in rec:
                log(f"  !! {impl} {w} {config}x{n}: {rec['error']}")
                if config == "shared" and impl.startswith("peer"):
                    crashed_shared.add((impl, w))
            elif "unsupported" in rec:
                pass
            else:
                log(f"  trial {trial} {w:8} {impl:11} {config:7} x{n}: {rec['ops_per_s']:10.1f} ops/s "
                    f"p50 {rec['p50_ms']:.3f} ms  cpu {rec['cpu_s'] * 1e3 / rec['ops']:.3f} ms/op  "
                    f"pss {pss:.0f} MiB")

    rows = summarize(records)
    problems = check_digests(rows)
    for p in problems:
        log("!!!! MISMATCH:", p)
    info = machine_info()
    meta = {"argv": sys.argv[1:], "date": time.strftime("%Y-%m-%d"), "trials": args.trials,
            "duration": args.duration, "impls": list(commands), "cores": info["cores"], "libzim": info["libzim"],
            "archive_sizes": {k: p.stat().st_size for k, p in archives.items()}, "notes": notes, **meta_extra}
    dest = OUT / "results-last" if args.no_write else RESULTS
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "results.json").write_text(json.dumps(
        {"machine": info, "meta": meta, "summary": rows, "problems": problems,
         "records": [{k: v for k, v in r.items()} for r in records]}, indent=1), encoding="utf-8")
    write_report(rows, problems, info, meta, dest / "results.md")
    write_chart(rows, meta, dest / "chart.png")
    log(f"wrote {dest}/results.md, results.json, chart.png")
    print((dest / "results.md").read_text(encoding="utf-8"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
