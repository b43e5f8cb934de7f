#!/usr/bin/env python3
"""What gzipping an answer costs ``zim serve``: zlib (Python's gzip, what the server used)
against libdeflate (``libzim._libzim._gzip``, what it uses), on an archive's own pages.

    python3 bench/gzip_cost.py --archive A.zim                  # CPU per page, interleaved rounds
    python3 bench/gzip_cost.py --archive A.zim --callgrind      # instructions per page as well

A browser asks every text answer gzipped; the server gzips an article on its first view
(then keeps the gzip with the answer), and every search page, catalog feed and library page.
Pages: the first ``--pages`` HTML entries over 2,000 bytes (bench/serve.py's content pages).
Each compressor gzips all of them once per round; rounds are interleaved (A B C ... A B C ...)
and the CPU per page is the median over rounds (``time.process_time``, one thread). With
``--callgrind``, each compressor also runs under valgrind with R and 3R rounds:
(Ir(3R) - Ir(R)) / (2R x pages) is one page's instructions, the start-up cancelled.
Ratio: compressed bytes over input bytes, all pages.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

COMPRESSORS: dict[str, str] = {
    "zlib 6 (before: gzip.compress)": "zlib:6",
    "libdeflate 6 (zim serve now)": "deflate:6",
    "zlib 1": "zlib:1",
    "libdeflate 1": "deflate:1",
    "libdeflate 4": "deflate:4",
}


def compressor(spec: str) -> Callable[[bytes], bytes]:
    kind, level = spec.split(":")
    lv = int(level)
    if kind == "zlib":
        return lambda b: gzip.compress(b, compresslevel=lv, mtime=0)
    from libzim import _libzim

    return lambda b: _libzim._gzip(b, lv)


def read_pages(archive: str, n: int) -> list[bytes]:
    from libzim.reader import Archive

    a = Archive(archive)
    pages: list[bytes] = []
    for e in a.iter_by_path():
        if len(pages) >= n:
            break
        if e.is_redirect:
            continue
        item = e.get_item()
        if item.mimetype.startswith("text/html") and item.size > 2000:
            pages.append(bytes(item.content))
    if not pages:
        raise SystemExit(f"{archive}: no HTML page over 2,000 bytes")
    return pages


def drive(archive: str, n: int, spec: str, rounds: int) -> None:
    """Under valgrind: read the pages, then gzip them ``rounds`` times."""
    pages = read_pages(archive, n)
    f = compressor(spec)
    for _ in range(rounds):
        for p in pages:
            f(p)


def instructions(archive: str, n: int, spec: str, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                        __file__, "--drive", spec, "--archive", archive, "--pages", str(n), "--rounds", str(rounds)],
                       check=True, capture_output=True)
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        if not m:
            raise SystemExit(f"no callgrind summary for {spec}")
        return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", required=True)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7); with --drive, rounds to run")
    ap.add_argument("--callgrind", action="store_true", help="instructions per page too (R=1 and 3R, fewer pages)")
    ap.add_argument("--cg-pages", type=int, default=60)
    ap.add_argument("--drive", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:
        drive(args.archive, args.pages, args.drive, args.rounds)
        return

    pages = read_pages(args.archive, args.pages)
    total = sum(map(len, pages))
    fs = {name: compressor(spec) for name, spec in COMPRESSORS.items()}
    sizes = {name: sum(len(f(p)) for p in pages) for name, f in fs.items()}  # also the warm-up
    times: dict[str, list[float]] = {name: [] for name in fs}
    for _ in range(args.rounds):
        for name, f in fs.items():
            t = time.process_time()
            for p in pages:
                f(p)
            times[name].append((time.process_time() - t) / len(pages))
    cg: dict[str, float] = {}
    if args.callgrind:
        for name, spec in COMPRESSORS.items():
            r1 = instructions(args.archive, args.cg_pages, spec, 1)
            r3 = instructions(args.archive, args.cg_pages, spec, 3)
            cg[name] = (r3 - r1) / (2 * args.cg_pages)

    base = statistics.median(times["zlib 6 (before: gzip.compress)"])
    print(f"{len(pages)} pages of {os.path.basename(args.archive)}, {total / len(pages):,.0f} bytes on average; "
          f"medians of {args.rounds} interleaved rounds, one thread, load {os.getloadavg()[0]:.2f}")
    print()
    head = "| compressor | us per page (range) | MB/s | CPU vs zlib 6 | output / input |"
    if cg:
        head += f" instructions per page ({args.cg_pages} pages) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in fs:
        med = statistics.median(times[name])
        row = (f"| {name} | {med * 1e6:,.0f} ({min(times[name]) * 1e6:,.0f}-{max(times[name]) * 1e6:,.0f}) | "
               f"{total / len(pages) / med / 1e6:,.0f} | {med / base:.2f}x | {sizes[name] / total:.3f} |")
        if cg:
            row += f" {cg[name]:,.0f} |"
        print(row)


if __name__ == "__main__":
    main()
