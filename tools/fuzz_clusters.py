#!/usr/bin/env python3
"""Cluster-level fuzzing, compared with python-libzim 3.13.1 (libzim 9.8.2).

    python3 tools/fuzz_archive.py --clusters [--cases 300] [--seed 0] [--archive A.zim ...]

Builds its inputs with libzim.writer (text pages in many small zstd
clusters, two pages larger than a decode segment, PNGs in an uncompressed
cluster), and an xz copy of them (tools/zimedit.py). Each case is one input
with one cluster damaged, deterministically from --seed and the case number:

  flip       1-4 bytes of the compressed stream changed
  truncate   the stream cut short (the cluster rewritten at the archive's end)
  codec      the compression byte changed (codec, 64-bit offsets flag)
  table:*    the offset table edited (decompress, edit, recompress): one
             entry short, a 2.5 GB blob, misaligned, out of order, ...
  repoint    the cluster pointer moved (onto another cluster, a byte off, anywhere)

Each case is read entry by entry (content and size) in a child process of
ours and one of the oracle, each with an address-space limit and a timeout,
and every entry compared with the oracle and with the undamaged archive's
bytes. A case's class is its worst entry's:

  crash      our child died (signal, sanitizer abort, no end mark)
  hang       our child ran past --timeout
  memory     MemoryError, or peak memory past 64 MiB + 4x the content returned
             (resident) or 1 GiB + 4x (address space)
  different  we returned bytes that differ from the oracle's, or bytes that
             are not the archive's where the oracle raised (an empty or short
             item included)
  error      we raised where the oracle returned the archive's own bytes
  equal      everything else: same bytes, both raised, or one side raised
             where the other returned wrong bytes (noted as stricter/lenient)
  libzstd    a difference (different/error) on a zstd cluster whose frame
             Debian's libzstd and the oracle's (1.5.7) decode differently:
             not ours (each such case is listed)

Where the oracle hangs or crashes on an entry, it is run again from the
next one (3 times at most); an entry it never finished is not compared. Exit status 1 if any case is crash, hang, memory,
different or error. --no-oracle (the sanitizer run: the oracle would load
ASan too) counts crashes and hangs only. Writes only under --out.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zimedit
from zimedit import XZ, ZSTD, Zim

ROOT = Path(__file__).resolve().parents[1]
ORACLE = Path(os.environ.get("LIBZIM_C_ORACLE_VENV") or
              Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "libzim-c" / "python-libzim-3.13.1")

# Reads every entry's content and size; one JSON line per entry, flushed, so
# that a hang or crash still leaves the entries before it.
READ = r"""
import hashlib, json, resource, sys
limit = int(sys.argv[2])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from libzim.reader import Archive

def emit(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()

def vm_peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmPeak:"):
            return int(line.split()[1])
    return 0

def err(e):
    return f"{type(e).__name__}: {e}"[:300]

try:
    a = Archive(sys.argv[1])
except Exception as e:
    emit(open=err(e))
    a = None
rss0, vm0, total = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vm_peak(), 0
for i in range(int(sys.argv[3]), a.all_entry_count if a is not None else 0):
    emit(at=i)
    rec = {"i": i}
    try:
        e = a._get_entry_by_id(i)
        rec["path"] = e.path
        if e.is_redirect:
            continue
        item = e.get_item()
    except Exception as ex:
        rec["entry"] = err(ex)
        emit(**rec)
        continue
    try:
        data = bytes(item.content)
        rec["sha"], rec["len"] = hashlib.sha1(data).hexdigest(), len(data)
        total += len(data)
        del data
    except Exception as ex:
        rec["err"] = err(ex)
    try:
        rec["size"] = item.size
    except Exception as ex:
        rec["size_err"] = err(ex)
    emit(**rec)
emit(done=True, rss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0,
     vm_kb=vm_peak() - vm0, total=total)
"""

# Frames libzstd 1.5.4 (Debian 12) and 1.5.7 decode differently: checked in a
# child per library, so that neither library's symbols bind to the other's.
ZSTD_CHECK = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import zimedit
out, e = zimedit.zstd_decode(open(sys.argv[2], "rb").read(), sys.argv[3])
print(json.dumps([hashlib.sha1(out).hexdigest(), e, zimedit.zstd_version(sys.argv[3])]))
"""

BUILD = r"""
import random, sys, zlib, struct
from libzim import writer

class Item(writer.Item):
    def __init__(self, path, content, mimetype, compress):
        super().__init__()
        self.p, self.c, self.m, self.z = path, content, mimetype, compress
    def get_path(self): return self.p
    def get_title(self): return self.p
    def get_mimetype(self): return self.m
    def get_contentprovider(self): return writer.StringProvider(self.c)
    def get_hints(self): return {writer.Hint.FRONT_ARTICLE: True, writer.Hint.COMPRESS: self.z}

def page(i, n):
    rnd = random.Random(i)
    words = " ".join(f"w{rnd.randrange(10**5)}" for _ in range(n))
    return f"<html><body><h1>Page {i}</h1><p>{words}</p></body></html>".encode()

with writer.Creator(sys.argv[1]).config_indexing(False, "eng").config_clustersize(16 * 1024) as c:
    c.set_mainpath("p0")
    c.add_metadata("Title", "cluster fuzz")
    for i in range(60):
        c.add_item(Item(f"p{i}", page(i, 30 + 97 * (i % 11)), "text/html", True))
    for i, n in ((60, 250_000), (61, 500_000)):  # 1.6 and 3.2 MB: past one segment
        c.add_item(Item(f"p{i}", page(i, n), "text/html", True))
    for i in range(8):
        rnd = random.Random(1000 + i)
        c.add_item(Item(f"img{i}.png", bytes(rnd.randrange(256) for _ in range(300 + 500 * i)), "image/png", False))
"""

TABLE_EDITS = ["short", "short_raw", "big", "misalign", "huge_first", "swap", "random", "dup", "extend", "zero_first"]
KINDS = ["flip"] * 4 + ["truncate"] * 2 + ["codec"] * 2 + ["table"] * 5 + ["repoint"] * 2
FAILING = ("crash", "hang", "memory", "different", "error")


def child_env(root: Path) -> dict[str, str]:
    path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    return dict(os.environ, PYTHONPATH=path)


def build_inputs(out: Path, extra: list[Path]) -> list[Path]:
    zstd = out / "input-zstd.zim"
    if not zstd.exists():
        subprocess.run([sys.executable, "-c", BUILD, str(zstd)], check=True, cwd=ROOT, env=child_env(ROOT))
    xz = out / "input-xz.zim"
    if not xz.exists():
        xz.write_bytes(zimedit.to_xz(zstd.read_bytes()))
    return [zstd, xz, *extra]


def edit_table(offsets: list[int], width: int, edit: str, rng: random.Random) -> list[int]:
    t = list(offsets)
    n = len(t)
    if edit == "short" and n > 2:  # one entry short, the data where the table says
        t = [v - width for v in t[:-1]]
    elif edit == "short_raw" and n > 2:  # one entry short, the rest as written
        t = [t[0] - width] + t[1:-1]
    elif edit == "big":  # the last blob declared 2.5 GB (or 40 GB with 64-bit offsets)
        t[-1] = t[-2] + (2_500_000_000 if width == 4 else 40_000_000_000)
    elif edit == "misalign":
        t[0] += rng.randrange(1, width)
    elif edit == "huge_first":
        t[0] = rng.choice([width * (1 << 28), width * rng.randrange(1 << 20, 1 << 30)])
    elif edit == "swap" and n > 2:
        i = rng.randrange(1, n - 1)
        t[i], t[i + 1] = t[i + 1], t[i]
    elif edit == "random":
        t[rng.randrange(n)] = rng.randrange(1 << (8 * width))
    elif edit == "dup" and n > 2:
        i = rng.randrange(1, n)
        t[i] = t[i - 1]
    elif edit == "extend":
        t = [v + width for v in t] + [t[-1] + width + rng.randrange(1, 1 << 16)]
    elif edit == "zero_first":
        t[0] = 0
    else:
        t[-1] += rng.randrange(1, 64)
    return t


def mutate(source: bytes, rng: random.Random) -> tuple[bytes, str, int]:
    """A damaged copy of source, what was done, and the cluster damaged."""
    z = Zim(source)
    i = rng.randrange(z.clusters)
    info = z.info(i)
    codec = info & 0x0F
    start, end = z.extent(i)
    kind = rng.choice(KINDS)
    if kind == "flip" and end - start > 2:
        for _ in range(rng.choice([1, 1, 2, 4])):
            pos = rng.randrange(start + 1, end)
            z.data[pos] ^= rng.randrange(1, 256)
    elif kind == "truncate" and end - start > 2:
        raw = z.raw(i)
        z.put_cluster(i, info, raw[: rng.randrange(1, len(raw))])
    elif kind == "codec":
        new = rng.choice([0, 1, 2, 3, 4, 5, 6, info ^ 0x10, rng.randrange(256)])
        kind = f"codec:{info:#x}->{new:#x}"
        z.data[start] = new
    elif kind == "table":
        width = 8 if info & 0x10 else 4
        plain = z.decoded(i)
        offsets = zimedit.parse_table(plain, width)
        edit = rng.choice(TABLE_EDITS)
        kind = f"table:{edit}"
        table = zimedit.pack_table(edit_table(offsets, width, edit, rng), width)
        body = plain[offsets[0]:]
        z.encode(i, table + body)  # uncompressed: stored as it is
    else:
        kind = "repoint"
        choice = rng.randrange(3)
        if choice == 0:
            z.set_ptr(i, z.ptr(rng.randrange(z.clusters)))
        elif choice == 1:
            z.set_ptr(i, max(0, z.ptr(i) + rng.choice([-2, -1, 1, 2])))
        else:
            z.set_ptr(i, rng.randrange(len(z.data)))
    return z.finish(), f"{kind} ({'zstd' if codec == ZSTD else 'xz' if codec == XZ else codec})", i


def run_reader(python: list[str], case: Path, limit: int, timeout: float, env: dict[str, str] | None,
               cwd: Path, start: int = 0) -> dict:
    """{entries: {i: record}, end: the end record or None, status: ok|crash|hang, tail, at: last entry begun}"""
    try:
        proc = subprocess.run([*python, "-c", READ, str(case), str(limit), str(start)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=cwd)
        out, status, tail = proc.stdout, "ok" if proc.returncode == 0 else f"crash (exit {proc.returncode})", \
            " ".join(proc.stderr.strip().splitlines()[-2:])
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        status, tail = "hang", ""
    entries, end, at = {}, None, start
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "done" in rec:
            end = rec
        elif "i" in rec:
            entries[rec["i"]] = rec
        elif "at" in rec:
            at = rec["at"]
        elif "open" in rec:
            entries["open"] = rec
    if status == "ok" and end is None:
        status = "crash (no end mark)"
    return {"entries": entries, "end": end, "status": status, "tail": tail, "at": at}


def run_oracle(python: list[str], case: Path, limit: int, timeout: float, env: dict[str, str]) -> dict:
    """The oracle's reading; where it hangs or crashes on an entry, again from the next one (3 times at most)."""
    result = run_reader(python, case, limit, timeout, env, Path(tempfile.gettempdir()))
    for _ in range(3):
        if result["status"] == "ok":
            break
        result.setdefault("stuck", []).append(result["at"])
        more = run_reader(python, case, limit, timeout, env, Path(tempfile.gettempdir()), result["at"] + 1)
        result["entries"].update(more["entries"])
        result.update(status=more["status"], at=more["at"], end=more["end"])
        if more["status"] == "ok":
            result["status"] = "ok after " + ("a hang" if len(result["stuck"]) == 1 else "hangs or crashes")
    return result


def content(rec: dict | None):
    """An entry's outcome: ('ok', sha, len) or ('err', message) or None (never read)."""
    if rec is None:
        return None
    if "entry" in rec:
        return ("err", rec["entry"])
    if "err" in rec:
        return ("err", rec["err"])
    return ("ok", rec["sha"], rec["len"])


def compare(ours: dict, oracle: dict | None, truth: dict) -> tuple[str, list[str]]:
    """The case's class and notes."""
    notes: list[str] = []
    if ours["status"].startswith("crash"):
        return "crash", [ours["status"] + ": " + ours["tail"]]
    if ours["status"] == "hang":
        return "hang", []
    end = ours["end"]
    returned = end["total"]
    if any("MemoryError" in str(r.get("err", "")) + str(r.get("entry", "")) + str(r.get("size_err", ""))
           for r in ours["entries"].values()):
        return "memory", ["MemoryError"]
    if end["rss_kb"] * 1024 > (64 << 20) + 4 * returned or end["vm_kb"] * 1024 > (1 << 30) + 4 * returned:
        return "memory", [f"peak +{end['rss_kb']} KiB resident, +{end['vm_kb']} KiB address space, "
                          f"{returned} bytes returned"]
    if oracle is None:
        return "equal", []
    worst = "equal"
    oracle_done = oracle["status"].startswith("ok")
    keys = set(ours["entries"]) | set(oracle["entries"])
    for k in sorted(keys, key=str):
        if k == "open":
            continue
        mine, theirs, good = (content(ours["entries"].get(k)), content(oracle["entries"].get(k)),
                              content(truth.get(k)))
        if theirs is None:
            continue  # the oracle never finished this entry: nothing to compare with
        if mine is None:
            if oracle_done and theirs and theirs[0] == "ok" and ours["status"] == "ok":
                # Its dirent read differently: the oracle found an entry we did not.
                notes.append(f"entry {k}: missing here")
                worst = "different"
            continue
        if mine == theirs:
            size = ours["entries"][k].get("size")
            if mine[0] == "ok" and size is not None and size != mine[2]:
                notes.append(f"entry {k}: size {size} but {mine[2]} bytes")
                worst = "different"
            continue
        if mine[0] == "ok" and theirs[0] == "ok":
            notes.append(f"entry {k}: {mine[2]} bytes here, {theirs[2]} from the oracle")
            worst = "different"
        elif mine[0] == "ok":
            if mine != good:
                notes.append(f"entry {k}: {mine[2]} bytes not in the archive; oracle: {theirs[1]}")
                worst = "different"
            else:
                notes.append("lenient")  # the archive's own bytes where the oracle raised
        elif theirs == good:
            notes.append(f"entry {k}: {mine[1]}")
            if worst == "equal":
                worst = "error"
        else:
            notes.append("stricter")  # raised where the oracle returned wrong bytes
    return worst, notes


def zstd_versions_differ(case: Path, cluster: int) -> str | None:
    """Whether Debian's libzstd and the oracle's decode the cluster's frame differently."""
    z = Zim(case.read_bytes())
    if cluster >= z.clusters or z.info(cluster) & 0x0F != ZSTD:
        return None
    oracle_lib = next(iter(sorted(ORACLE.glob("lib/python3*/site-packages/libzim/libzim.so*"))), None)
    if oracle_lib is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".zst") as f:
        f.write(z.raw(cluster))
        f.flush()
        seen = []
        for lib in (zimedit.SYSTEM_ZSTD, str(oracle_lib)):
            out = subprocess.run([sys.executable, "-I", "-c", ZSTD_CHECK, str(Path(__file__).parent), f.name, lib],
                                 capture_output=True, text=True, timeout=60)
            seen.append(json.loads(out.stdout) if out.returncode == 0 else [None, out.stderr[-200:], lib])
    if seen[0][:2] != seen[1][:2]:
        # Both may decode, to different bytes: the digests say so.
        return "; ".join(f"libzstd {v}: {e or 'decodes to ' + str(h)[:12]}" for h, e, v in seen)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(prog="fuzz_archive.py --clusters", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--archive", type=Path, action="append", default=[], help="more valid inputs")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30, help="seconds before our child counts as hung")
    ap.add_argument("--oracle-timeout", type=float, default=5)
    ap.add_argument("--limit", type=int, default=2 << 30, help="address-space limit of each child (0: none)")
    ap.add_argument("--no-oracle", action="store_true", help="crashes and hangs only (the sanitizer run)")
    ap.add_argument("--ours", type=Path, default=ROOT, help="the checkout whose in-place build is tested")
    ap.add_argument("--json", type=Path, help="write every case's result here")
    args = ap.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    inputs = build_inputs(args.out, args.archive)
    oracle_py = [str(ORACLE / "bin" / "python"), "-I"]
    env = child_env(args.ours)
    oracle_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    truth: dict[Path, dict] = {}
    for p in inputs:
        # The undamaged archive's bytes, read by both: they must agree.
        mine = run_reader([sys.executable], p, 0, 120, env, args.ours)
        if not args.no_oracle:
            theirs = run_reader(oracle_py, p, 0, 120, oracle_env, Path(tempfile.gettempdir()))
            a = {k: content(v) for k, v in mine["entries"].items()}
            b = {k: content(v) for k, v in theirs["entries"].items()}
            if a != b or mine["status"] != "ok":
                print(f"{p}: the undamaged archive reads differently here and in the oracle", file=sys.stderr)
                return 2
        truth[p] = mine["entries"]
    print(f"inputs: {', '.join(p.name for p in inputs)}; libzstd {zimedit.zstd_version()} here", flush=True)

    def one(n: int) -> dict:
        rng = random.Random(f"{args.seed}:{n}")
        source = inputs[rng.randrange(len(inputs))]
        data, what, cluster = mutate(source.read_bytes(), rng)
        case = args.out / f"case-{args.seed}-{n}.zim"
        case.write_bytes(data)
        ours = run_reader([sys.executable], case, args.limit, args.timeout, env, args.ours)
        oracle = None if args.no_oracle else run_oracle(oracle_py, case, args.limit, args.oracle_timeout,
                                                        oracle_env)
        cls, notes = compare(ours, oracle, truth[source])
        if cls in ("different", "error"):
            why = zstd_versions_differ(case, cluster)
            if why:
                cls, notes = "libzstd", [why] + notes
        result = {"case": n, "input": source.name, "what": what, "cluster": cluster, "class": cls,
                  "oracle": oracle["status"] if oracle else None,
                  "stuck": len(oracle.get("stuck", [])) if oracle else 0,
                  "notes": [x for x in notes if x not in ("lenient", "stricter")][:5],
                  "lenient": notes.count("lenient"), "stricter": notes.count("stricter")}
        if ours["end"]:
            result["growth"] = [ours["end"]["rss_kb"], ours["end"]["vm_kb"], ours["end"]["total"]]
        if cls in FAILING or cls == "libzstd":
            result["kept"] = str(case)
        else:
            case.unlink()
        return result

    start = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, range(args.cases)))
    classes = collections.Counter(r["class"] for r in results)
    oracle_status = collections.Counter((r["oracle"] or "not run").split(" (")[0] for r in results)
    oracle_status["entries stuck"] = sum(r["stuck"] for r in results)
    for r in results:
        if r["class"] != "equal":
            print(f"{r['class']}: case {r['case']} {r['input']} cluster {r['cluster']} {r['what']}: "
                  f"{'; '.join(r['notes'])} [{r.get('kept', '')}]")
    by_kind = collections.Counter((r["what"].split(":")[0].split(" ")[0], r["class"]) for r in results)
    print("by mutation:", ", ".join(f"{k}/{c}={n}" for (k, c), n in sorted(by_kind.items())))
    print(f"{args.cases} cases in {time.monotonic() - start:.0f} s: "
          + ", ".join(f"{c} {classes.get(c, 0)}" for c in ("equal", "error", "different", "crash", "hang",
                                                            "memory", "libzstd"))
          + f"; oracle: {dict(oracle_status)}; entries where only one side raised: "
          f"{sum(r['lenient'] for r in results)} lenient (our bytes are the archive's), "
          f"{sum(r['stricter'] for r in results)} stricter (the oracle's bytes are not)")
    grown = [r for r in results if "growth" in r]
    if grown:
        rss = max(grown, key=lambda r: r["growth"][0])
        vm = max(grown, key=lambda r: r["growth"][1])
        print(f"peak growth while reading: resident {rss['growth'][0] / 1024:.1f} MiB (case {rss['case']}, "
              f"{rss['growth'][2] / 2**20:.1f} MiB of content returned), address space "
              f"{vm['growth'][1] / 1024:.1f} MiB (case {vm['case']}, {vm['growth'][2] / 2**20:.1f} MiB returned)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if any(classes.get(c) for c in FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
