#!/usr/bin/env python3
"""Mutation fuzzing of archives through the Python API, in two modes.

Byte mode: any byte of a valid archive.

    python3 tools/fuzz_archive.py ../shared/zim-testing-suite/nons/small.zim --seconds 120

Changes 1-16 random bytes of a valid archive, walks every call of the API on
the result in a child process (entries, items, content, checks, iterators,
suggestions, search), and keeps each input whose child crashed, hung or raised
anything but a libzim.ZimError, printing the byte changes that rebuild it
(see tests/test_fuzz_regressions.py). Writes only under --out.

Cluster mode (--clusters): damage to compressed and uncompressed clusters,
compared entry by entry with python-libzim 3.13.1 (the oracle). See
tools/fuzz_clusters.py.

    python3 tools/fuzz_archive.py --clusters --cases 300
"""
from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

WALK = r"""
import sys
import libzim
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher

def safe(call):
    try:
        return call()
    except libzim.ZimError:
        return None

a = safe(lambda: Archive(sys.argv[1]))
if a is None:
    sys.exit(0)
for i in range(min(a.all_entry_count, 200)):
    e = safe(lambda: a._get_entry_by_id(i))
    if e is None:
        continue
    e.title, e.path
    if e.is_redirect:
        safe(e.get_redirect_entry)
    item = safe(e.get_item)
    if item is not None:
        safe(lambda: bytes(item.content))
        safe(lambda: item.size)
for call in (a.check, a.validate, lambda: a.metadata_keys, lambda: a.article_count,
             lambda: a.media_count, lambda: a.has_fulltext_index, lambda: a.has_title_index,
             lambda: [x.path for x in a.iter_by_title()],
             lambda: [x.path for x in a.iter_efficient()],
             lambda: a.main_entry, a.get_illustration_sizes,
             lambda: list(SuggestionSearcher(a).suggest("t").get_results(0, 5)),
             lambda: list(SuggestionSearcher(a).suggest("t", mode="titles").get_results(0, 5)),
             lambda: list(Searcher(a).search("a").get_results(0, 5))):
    safe(call)
"""


def main() -> int:
    if "--clusters" in sys.argv[1:]:
        sys.argv.remove("--clusters")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import fuzz_clusters

        return fuzz_clusters.main()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive", type=Path, help="a valid archive to mutate")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30, help="seconds before a child counts as hung")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"))
    args = ap.parse_args()

    source = args.archive.read_bytes()
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    case = args.out / f"case-{args.seed}.zim"
    deadline = time.monotonic() + args.seconds
    runs = found = 0
    while time.monotonic() < deadline:
        data = bytearray(source)
        changes = []
        for _ in range(rng.choice([1, 2, 4, 8, 16])):
            offset = rng.randrange(len(data))
            data[offset] = rng.randrange(256)
            changes.append((offset, data[offset]))
        case.write_bytes(bytes(data))
        runs += 1
        try:
            proc = subprocess.run([sys.executable, "-c", WALK, str(case)], capture_output=True,
                                  text=True, timeout=args.timeout)
            verdict = None if proc.returncode == 0 else f"exit {proc.returncode}"
            tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
        except subprocess.TimeoutExpired:
            verdict, tail = f"hung > {args.timeout:g} s", []
        if verdict:
            found += 1
            keep = args.out / f"found-{args.seed}-{runs}.zim"
            case.rename(keep)
            patch = ", ".join(f"({o}, 0o{b:o})" for o, b in sorted(dict(changes).items()))
            print(f"{verdict}: {keep} {' '.join(tail)}\n  changes to {args.archive.name}: [{patch}]")
    case.unlink(missing_ok=True)
    print(f"{runs} runs, {found} found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
