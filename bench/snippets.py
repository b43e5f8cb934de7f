#!/usr/bin/env python3
"""Snippets: libzim-c's engine against libzim's getSnippet(), side by side.

    python3 bench/snippets.py                # 3 trials x 4 s per throughput configuration
    python3 bench/snippets.py --quick        # 1 trial x 1.5 s

Same archives and queries as bench/run.py (every 4th query, 16 hits).  Writes
bench/results/snippets.md and snippets.json:

- per-snippet cost (bench/snippet_engine.cpp, no Python): thread CPU time of
  libzim's getSnippet() and of our engine on the same article, already read,
  median and p95 per archive; and the reading floor (getData);
- snippet-search throughput at 1, 2 and 4 threads: the raw C++ loop with
  libzim's snippets (bench/raw_search.cpp) against libzim-c at its defaults,
  and libzim-c with snippet_engine="libzim";
- quality, from the articles' HTML parsed here with html.parser: the share of
  snippets highlighting a query word when the visible text has one, and the
  share carrying text found only in nav/header/footer/aside/script/style or
  role="navigation" elements.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (archives, inputs, raw loop, measuring)

ROOT = run.ROOT
OUT = run.OUT
RESULTS = run.RESULTS
# Read before `import libzim` (quality()) sets libzim-c's default in this
# process: the raw C++ loop must run at libzim's own default.
USER_CLUSTERCACHE = os.environ.get("ZIM_CLUSTERCACHE")


def build_engine_bench() -> Path:
    exe = OUT / "snippet_engine"
    # The engine reads compressed articles through the shim's cluster reader (zimshim_cluster*.cpp).
    srcs = ([HERE / "snippet_engine.cpp"]
            + [ROOT / "src" / f"zimshim_{n}.cpp" for n in ("snippet", "snippet_cache", "core", "file")]
            + sorted((ROOT / "src").glob("zimshim_cluster*.cpp")))
    deps = srcs + [ROOT / "src" / f"zimshim_{n}.hpp" for n in ("snippet", "impl", "cluster")]
    if exe.exists() and all(exe.stat().st_mtime >= p.stat().st_mtime for p in deps):
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libzim", "libzstd", "liblzma"], capture_output=True, text=True, check=True)
    cmd = ["g++", "-O2", "-std=c++17", f"-I{ROOT / 'src'}", *map(str, srcs), "-o", str(exe), *flags.stdout.split()]
    run.log("compiling:", " ".join(cmd))
    subprocess.run(cmd, check=True)
    return exe


# ---------------------------------------------------------------- quality

NAV_TAGS = {"nav", "header", "footer", "aside", "script", "style", "head", "noscript", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


class Split(HTMLParser):
    """Visible text vs text inside navigation elements, as a browser-ish parser sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: inside navigation?
        self.main: list[str] = []
        self.nav: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        a = dict(attrs)
        inside = bool(self.stack and self.stack[-1])
        self.stack.append(inside or tag in NAV_TAGS or a.get("role") == "navigation")

    def handle_endtag(self, tag):
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        (self.nav if self.stack and self.stack[-1] else self.main).append(data)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def quality(dump: Path, archives: dict[str, Path]) -> dict:
    import snowballstemmer

    from libzim.reader import Archive

    stem = snowballstemmer.stemmer("english").stemWord
    opened = {k: Archive(p) for k, p in archives.items()}
    pages: dict[tuple[str, str], tuple[set, str, str]] = {}
    counts = {e: {"n": 0, "eligible": 0, "highlighted": 0, "nav": 0} for e in ("libzim", "ours")}
    examples = []
    for line in dump.read_text(encoding="utf-8").splitlines():
        key, query, path, s_libzim, s_ours = line.split("\t")[:5]
        if (key, path) not in pages:
            content = bytes(opened[key].get_entry_by_path(path).get_item().content).decode("utf-8", "replace")
            p = Split()
            p.feed(content)
            main = " ".join(words(" ".join(p.main)))
            nav = " ".join(words(" ".join(p.nav)))
            pages[key, path] = ({stem(w) for w in main.split()}, f" {main} ", f" {nav} ")
        stems, main, nav = pages[key, path]
        qstems = {stem(w) for w in words(query)}
        eligible = bool(qstems & stems)
        for engine, snippet in (("libzim", s_libzim), ("ours", s_ours)):
            c = counts[engine]
            c["n"] += 1
            c["eligible"] += eligible
            c["highlighted"] += eligible and "<b>" in snippet
            text = words(html.unescape(re.sub(r"</?b>", "", snippet)))
            grams = {" ".join(text[i:i + 4]) for i in range(max(0, len(text) - 3))}
            c["nav"] += any(f" {g} " in nav and f" {g} " not in main for g in grams)
        if len(examples) < 100:
            examples.append({"archive": key, "query": query, "path": path, "libzim": s_libzim, "ours": s_ours})
    for c in counts.values():
        c["highlight_share"] = c["highlighted"] / c["eligible"] if c["eligible"] else None
        c["nav_share"] = c["nav"] / c["n"] if c["n"] else None
    return {"counts": counts, "examples": examples}


# ---------------------------------------------------------------- throughput


def throughput(raw: Path, archive_args: list[str], inputs: Path, threads: list[int], trials: int,
               duration: float) -> list[dict]:
    ours = [sys.executable, str(HERE / "worker_ours.py")]
    libzim_default = {} if USER_CLUSTERCACHE is None else {"ZIM_CLUSTERCACHE": USER_CLUSTERCACHE}
    plan = [("raw-cpp (libzim snippets)", [str(raw)], {"env": libzim_default}, n) for n in threads]
    plan += [("libzim-c", ours, {}, n) for n in threads]
    plan += [("libzim-c, snippet_engine='libzim'", ours, {"BENCH_SNIPPET_ENGINE": "libzim"}, n)
             for n in threads if n <= 2]
    recs: dict[int, list[dict]] = {i: [] for i in range(len(plan))}
    for _ in range(trials):  # trials interleaved: the machine's load drifts
        for i, (label, cmd, env, n) in enumerate(plan):
            full = cmd + archive_args + ["--inputs", str(inputs), "--workload", "snippets", "--threads", str(n),
                                         "--duration", str(duration)]
            saved = dict(os.environ)
            if "env" in env:  # exactly this environment for libzim's variables
                os.environ.pop("ZIM_CLUSTERCACHE", None)
                os.environ.update(env["env"])
            else:
                os.environ.update(env)
            try:
                rec, pss = run.run_measured(full, timeout=300 + 40 * duration)
            finally:
                os.environ.clear()
                os.environ.update(saved)
            if "error" in rec:
                run.log(f"  !! {label} x{n}: {rec['error']}")
                continue
            rec["pss_mib"] = pss
            recs[i].append(rec)
            run.log(f"  {label:36} x{n}: {rec['ops_per_s']:8.1f} searches/s  "
                    f"cpu {rec['cpu_s'] * 1e3 / rec['ops']:.2f} ms/search  pss {pss:.0f} MiB")
    rows = []
    for i, (label, _cmd, _env, n) in enumerate(plan):
        if recs[i]:
            rs = recs[i]
            rows.append({"impl": label, "threads": n,
                         "ops_per_s": statistics.median(r["ops_per_s"] for r in rs),
                         "cpu_ms_per_op": statistics.median(r["cpu_s"] * 1e3 / r["ops"] for r in rs),
                         "p50_ms": statistics.median(r["p50_ms"] for r in rs),
                         "pss_mib": statistics.median(r["pss_mib"] for r in rs),
                         "trials": [r["ops_per_s"] for r in rs]})
    return rows


# ---------------------------------------------------------------- report


def report(engine: dict, rows: list[dict], qual: dict, meta: dict) -> str:
    out = ["# Snippets: libzim-c's engine vs libzim's getSnippet()", "",
           f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores; libzim {meta['libzim']}; "
           f"{meta['snippets']} snippets ({meta['queries']} queries x 16 hits, every 4th query of "
           "bench/queries); throughput: median of "
           f"{meta['trials']} trials of {meta['duration']} s; ZIM_CLUSTERCACHE {meta['clustercache']}.", "",
           "## Per snippet (thread CPU time, µs; article already read)", "",
           "| archive | read (getData) median / p95 | libzim getSnippet() median / p95 | ours median / p95 "
           "| ratio median / p95 |", "|---|---|---|---|---|"]
    for key, a in list(engine["archives"].items()) + [("all", engine)]:
        lz, ours, rd = a["libzim"], a["ours"], a["read"]
        out.append(f"| {key} | {rd['median_us']:.0f} / {rd['p95_us']:.0f} | {lz['median_us']:.0f} / "
                   f"{lz['p95_us']:.0f} | {ours['median_us']:.0f} / {ours['p95_us']:.0f} | "
                   f"{lz['median_us'] / ours['median_us']:.1f}x / {lz['p95_us'] / ours['p95_us']:.1f}x |")
    out += ["", f"Query setup (parse, stemmer), once per page: median "
            f"{engine['ours_setup_per_query']['median_us']:.0f} µs.", "",
            "## Snippet searches per second (16 hits with snippets, the three archives)", "",
            "| implementation | threads | searches/s | ratio to raw C++ | CPU ms per search | p50 ms | PSS MiB |",
            "|---|---|---|---|---|---|---|"]
    raw = {r["threads"]: r["ops_per_s"] for r in rows if r["impl"].startswith("raw")}
    for r in rows:
        ratio = r["ops_per_s"] / raw[r["threads"]] if r["threads"] in raw else float("nan")
        out.append(f"| {r['impl']} | {r['threads']} | {r['ops_per_s']:.1f} | {ratio:.2f} | "
                   f"{r['cpu_ms_per_op']:.2f} | {r['p50_ms']:.1f} | {r['pss_mib']:.0f} |")
    ours = {r["threads"]: r["ops_per_s"] for r in rows if r["impl"] == "libzim-c"}
    if 1 in ours and 2 in ours:
        out += ["", f"libzim-c 2 threads / 1 thread: {ours[2] / ours[1]:.2f}x"
                + (f"; raw C++: {raw[2] / raw[1]:.2f}x." if 1 in raw and 2 in raw else ".")]
    c = qual["counts"]
    out += ["", "## Quality", "",
            "| engine | snippets | highlight a query word (when the visible text has one) "
            "| carry navigation-only text |", "|---|---|---|---|"]
    for e, label in (("libzim", "libzim getSnippet()"), ("ours", "libzim-c")):
        out.append(f"| {label} | {c[e]['n']} | {c[e]['highlighted']}/{c[e]['eligible']} "
                   f"({100 * c[e]['highlight_share']:.1f}%) | {c[e]['nav']} ({100 * c[e]['nav_share']:.1f}%) |")
    out += ["", "A query word is in the visible text when an English Snowball stem of one of its words is a stem "
            "of the page's text outside navigation elements; navigation-only text is any run of 4 words of the "
            "snippet found inside nav/header/footer/aside/script/style/head or role=\"navigation\" and not "
            "outside them (html.parser)."]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--zim-dir", default=str(run.CACHE / "zim"), help="where the archives are built or cached")
    ap.add_argument("--archives", help="comma-separated keys as in bench/run.py (e.g. rustjava)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.trials, args.duration = 1, 1.5
    keys = args.archives.split(",") if args.archives else [
        k for k in run.DEFAULT_ARCHIVES if k != "linux-doc" or run.corpus.package_version(k)]
    archives = {k: run.ensure_archive(k, Path(args.zim_dir)) for k in keys}
    raw = run.build_raw()
    inputs = run.make_inputs(raw, archives)["snippets"]
    archive_args = [a for k, p in archives.items() for a in ("--archive", f"{k}={p}")]
    exe = build_engine_bench()
    dump = OUT / "snippets.tsv"
    run.log("per-snippet cost ...")
    engine = json.loads(subprocess.run([str(exe), *archive_args, "--inputs", str(inputs), "--dump", str(dump)],
                                       capture_output=True, text=True, check=True).stdout)
    run.log("quality ...")
    qual = quality(dump, archives)
    run.log("throughput ...")
    rows = throughput(raw, archive_args, inputs, [int(t) for t in args.threads.split(",")], args.trials,
                      args.duration)
    info = run.machine_info()
    meta = {"date": __import__("time").strftime("%Y-%m-%d"), "cpu": info.get("cpu"), "cores": info.get("cores"),
            "libzim": info.get("libzim"), "trials": args.trials, "duration": args.duration,
            "snippets": engine["ours"]["n"], "queries": engine["ours_setup_per_query"]["n"],
            "clustercache": USER_CLUSTERCACHE or "unset (libzim 16 for the raw loop, libzim-c's 32 for ours)"}
    md = report(engine, rows, qual, meta)
    dest = OUT / "results-last" if args.no_write else RESULTS
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "snippets.json").write_text(json.dumps({"meta": meta, "engine": engine, "throughput": rows,
                                                     "quality": qual}, indent=1), encoding="utf-8")
    (dest / "snippets.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
