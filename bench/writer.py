"""Writer benchmark: one HTML corpus written by zimwriterfs (C++), by
python-libzim 3.13.1 and by libzim-c, with the same compression (zstd),
full-text indexing, cluster size and worker count; items/s and peak RSS side
by side.

    python3 bench/writer.py [--trials 3] [--workers 4] [--no-index] [--package python3.11-doc]

Each run is its own process; peak RSS is the child's ru_maxrss (os.wait4).
The Python writers feed every file through FileProvider and read each HTML
title in Python (bench/writer_worker.py), as a scraper would.
python-libzim comes from the venv tools/bootstrap.sh makes
(LIBZIM_C_ORACLE_VENV overrides); it bundles libzim 9, the others use
Debian's libzim 8.1.1.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import corpus  # noqa: E402

WORKER = ROOT / "bench" / "writer_worker.py"
ORACLE = Path(
    os.environ.get("LIBZIM_C_ORACLE_VENV")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "libzim-c" / "python-libzim-3.13.1"
) / "bin" / "python"
ILLUSTRATION = "_bench_illustration_48.png"


def run(cmd, cwd, env=None):
    """Wall seconds and peak RSS (MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    return seconds, usage.ru_maxrss / 1024


def writers(tree, welcome, workers, index):
    fulltext = [] if index else ["--withoutFTIndex"]
    zimwriterfs = [shutil.which("zimwriterfs") or "zimwriterfs", f"--welcome={welcome}",
                   f"--illustration={ILLUSTRATION}", "--language=eng", "--title=Writer benchmark",
                   "--description=bench/writer.py", "--creator=libzim-c", "--publisher=libzim-c",
                   "--name=writer_bench", f"--threads={workers}", *fulltext, str(tree)]
    py_args = [str(WORKER), str(tree), None, str(workers), "1" if index else "0", welcome,
               ILLUSTRATION]
    ours_env = dict(os.environ, PYTHONPATH=str(ROOT))
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = {"zimwriterfs": (lambda zim: zimwriterfs + [zim], None)}
    if ORACLE.exists():
        out["python-libzim 3.13.1"] = (
            lambda zim: [str(ORACLE), "-I"] + [a if a is not None else zim for a in py_args],
            clean_env)
    else:
        print(f"python-libzim 3.13.1 not found at {ORACLE}: run tools/bootstrap.sh; skipped")
    out["libzim-c"] = (
        lambda zim: [sys.executable] + [a if a is not None else zim for a in py_args], ours_env)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--no-index", action="store_true")
    ap.add_argument("--package", default="python3.11-doc")
    args = ap.parse_args()

    src, _ = corpus.debian_doc_html_dir(args.package)
    welcome = corpus._welcome_in(src)
    with tempfile.TemporaryDirectory(prefix="libzim-c-writer-bench-") as tmp:
        tree = Path(tmp) / "html"
        corpus._copy_tree(src, tree)
        corpus.write_png(tree / ILLUSTRATION)
        files = sum(len(fs) for _, _, fs in os.walk(tree))
        size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        print(f"corpus: {args.package}, {files} files, {size / 1e6:.1f} MB; zstd, "
              f"{'full-text index' if not args.no_index else 'no full-text index'}, "
              f"{args.workers} workers; {args.trials} trials, medians")
        results = {}
        for trial in range(args.trials):  # interleaved, so load drifts hit all alike
            for name, (cmd, env) in writers(tree, welcome, args.workers,
                                            not args.no_index).items():
                zim = Path(tmp) / f"{trial}-{name.replace(' ', '_')}.zim"
                seconds, rss = run(cmd(str(zim)), cwd=tmp, env=env)
                results.setdefault(name, []).append((seconds, rss, zim.stat().st_size))
                zim.unlink()
        base = statistics.median(files / s for s, _, _ in results["zimwriterfs"])
        print(f"\n| writer | items/s | vs zimwriterfs | peak RSS MiB | archive MB |")
        print("|---|---|---|---|---|")
        for name, rows in results.items():
            ips = statistics.median(files / s for s, _, _ in rows)
            rss = statistics.median(r for _, r, _ in rows)
            mb = statistics.median(z for _, _, z in rows) / 1e6
            print(f"| {name} | {ips:,.0f} | {ips / base:.2f} | {rss:,.0f} | {mb:.1f} |")


if __name__ == "__main__":
    main()
