"""Leak mode: the whole API in a loop, memory measured between rounds.

    bash tools/sanitize.sh --leak                      # under LeakSanitizer (ASan build)
    bash tools/sanitize.sh --leak -- --cycles 7000     # longer
    python3 tools/leakcheck.py --cycles 2000           # the plain build: RSS and objects only

Each cycle opens archives, looks entries up, reads content, iterates,
searches in both snippet modes, suggests, hits error paths (missing entries,
injected native failures, use after close) and closes everything.  After a
warm-up the checker takes three measures, and again after the measured
cycles; each must stay flat:

- LeakSanitizer (when the extension runs under ASan, see tools/sanitize.sh):
  bytes of heap no pointer reaches any more, counted by a recoverable leak
  check.  CPython's own exit-time leaks never enter: the check runs mid-run,
  and PYTHONMALLOC=malloc lets LeakSanitizer see Python's pointers too.
- live Python objects (gc-tracked), by type: a reference leaked by the
  extension keeps its object and everything it holds.
- resident memory: catches what neither sees, such as a native object still
  referenced from a cache that grows.

Exit status 1 with a one-line reason per failed measure.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tools"), str(ROOT / "tests")]

import libzim  # noqa: E402
from libzim import _libzim  # noqa: E402
from libzim.reader import Archive  # noqa: E402
from libzim.search import Query, Searcher  # noqa: E402
from libzim.suggestion import SuggestionSearcher  # noqa: E402

import local_archives  # noqa: E402

# The test suite's local archives (tests/local_archives.py), built once at
# start in a tmp dir: nothing outside the repository is needed.
_LOCAL = local_archives.local()
WIKIBOOKS = _LOCAL.multi.path  # multi-cluster, redirects
EMBEDDED = _LOCAL.embedded  # SMALL_NONS at offset 8
SMALL_NONS = _LOCAL.small.path  # no full-text index


def build_indexed(tmp: Path) -> Path:
    from corpus import build_zim_from_dir

    html = tmp / "html"
    html.mkdir()
    words = ["quokka", "wombat", "numbat", "bilby", "dingo", "platypus", "echidna", "wallaby"]
    for i, w in enumerate(words):
        body = " ".join(f"<p>The {w} number {j} lives near the {words[(i + j) % 8]}.</p>" for j in range(30))
        (html / f"{w}.html").write_text(f"<html><head><title>All about the {w}</title></head><body>{body}</body></html>")
    links = "".join(f'<a href="{w}.html">{w}</a> ' for w in words)
    (html / "index.html").write_text(f"<html><head><title>Animals</title></head><body>{links}</body></html>")
    return build_zim_from_dir(html, tmp / "animals.zim", title="Animals", threads=1)


def cycle(indexed: Path, n: int) -> None:
    """One round of the API; n varies the inputs."""
    with Archive(WIKIBOOKS) as a:
        paths = [e.path for e in a.iter_by_path()]
        titles = [e.title for e in a.iter_by_title()]
        assert len(paths) > 10 and len(titles) > 10
        p = paths[n % len(paths)]
        e = a.get_entry_by_path(p)
        if e.is_redirect:
            e = e.get_redirect_entry()
        bytes(e.get_item().content)
        a.get_entry_by_title(titles[n % len(titles)])
        a._get_entry_by_id(n % a.all_entry_count)
        list(a.find_by_path(p[:3]))
        list(a.iter_efficient())
        for key in a.metadata_keys:
            a.get_metadata(key)
        a.has_entry_by_path("nothing/here")
        _expect(libzim.EntryNotFoundError, a.get_entry_by_path, f"missing/{n}")
        _expect(libzim.InvalidIndexError, a._get_entry_by_id, 10**9)
        SuggestionSearcher(a).suggest(titles[n % len(titles)][:3]).get_results(0, 10)
        if n % 10 == 0:
            a.validate()
    with Archive(indexed) as a, Archive(SMALL_NONS) as s2:
        searcher = Searcher(a).add_archive(s2)
        for q in ("quokka", Query("wombat numbat"), Query("").set_georange(1.0, 2.0, 3e6)):
            search = searcher.search(q)
            search.get_estimated_matches()
            for r in search.get_results(0, 8, include_snippets=bool(n % 2)):
                (r.path, r.title, r.snippet, r.score, r.archive)
                r.get_entry().get_item().content
            list(search.getResults(0, 8))
        _expect(libzim.SearchError, Searcher(s2).search, "x")
    _expect(libzim.ClosedError, a.get_entry_by_path, "index.html")
    with Archive(EMBEDDED, offset=8, size=SMALL_NONS.stat().st_size) as a:
        for e in a.iter_by_path():
            if not e.is_redirect:
                bytes(e.get_item().content)
    # Injected native failures: every error path must free what it made.
    for nth in (1, 2, 3):
        _libzim._fault_inject(nth)
        try:
            with Archive(indexed) as a:
                Searcher(a).search("dingo").get_results(0, 5)
        except libzim.ZimError:
            pass
        finally:
            _libzim._fault_inject(0)
    _expect(libzim.ArchiveError, Archive, indexed.parent / "missing.zim")


def _expect(exc, fn, *args):
    try:
        fn(*args)
    except exc:
        return
    raise AssertionError(f"{fn.__name__}{args} did not raise {exc.__name__}")


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def live_objects() -> Counter:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects())


class Lsan:
    """LeakSanitizer's recoverable check, when this process runs under it."""

    def __init__(self, report_dir: str | None):
        lib = ctypes.CDLL(None)
        self.check = getattr(lib, "__lsan_do_recoverable_leak_check", None)
        self.set_path = getattr(lib, "__sanitizer_set_report_path", None)
        self.dir = report_dir

    @property
    def active(self) -> bool:
        return bool(self.check and self.set_path and self.dir)

    def leaked(self, label: str) -> tuple[int, int]:
        """(bytes, allocations) unreachable now; the report goes to DIR/label.PID."""
        gc.collect()
        self.set_path(os.path.join(self.dir, label).encode())
        if not self.check():
            return 0, 0
        report = Path(self.dir) / f"{label}.{os.getpid()}"
        m = re.search(r"SUMMARY: AddressSanitizer: (\d+) byte\(s\) leaked in (\d+) allocation", report.read_text())
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


# Measures live here, not in locals: CPython 3.11+ keeps frame locals in
# mmap'd chunks that LeakSanitizer does not scan, so an int held only by a
# local looks unreachable to it.
M: dict = {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cycles", type=int, default=300, help="measured cycles (default 300)")
    ap.add_argument("--warmup", type=int, default=40, help="cycles before the first measure")
    ap.add_argument("--rss-per-cycle", type=float, default=2.0,
                    help="KiB of resident memory growth allowed per measured cycle")
    M["args"] = args = ap.parse_args()
    M["lsan"] = lsan = Lsan(os.environ.get("LEAKCHECK_REPORTS"))
    with tempfile.TemporaryDirectory() as tmp:
        M["indexed"] = build_indexed(Path(tmp))
        for n in range(args.warmup):
            cycle(M["indexed"], n)
        M["objs0"], M["rss0"] = live_objects(), rss_kib()
        M["leak0"] = lsan.leaked("baseline") if lsan.active else None
        for n in range(args.cycles):
            cycle(M["indexed"], args.warmup + n)
        M["objs1"], M["rss1"] = live_objects(), rss_kib()
        M["leak1"] = lsan.leaked("after") if lsan.active else None
    objs0, objs1, rss0, rss1, leak0, leak1 = (M[k] for k in ("objs0", "objs1", "rss0", "rss1", "leak0", "leak1"))
    failures = []
    grown = {t: objs1[t] - objs0[t] for t in objs1 if objs1[t] - objs0[t] > 0}
    # A leak of one object per cycle shows as >= cycles; a handful of new
    # objects (a late-filled cache) is not one.
    leaking = {t: d for t, d in grown.items() if d >= args.cycles // 2}
    if leaking:
        failures.append(f"live objects grew by type: {leaking}")
    # ASan's allocator keeps freed memory (quarantine, size classes) and
    # grows by hundreds of KiB a cycle without any leak: RSS is measured only
    # on a plain build, where LeakSanitizer is not there to count instead.
    rss_limit = args.rss_per_cycle * args.cycles
    if not lsan.active and rss1 - rss0 > rss_limit:
        failures.append(f"resident memory grew {rss1 - rss0} KiB in {args.cycles} cycles (limit {rss_limit:.0f})")
    # A leak on a path the loop takes every 20th cycle or more often grows by
    # at least cycles/20 allocations; a one-off (a cache or an import done
    # late, an object only a frame's mmap'd stack still points to) does not.
    if lsan.active and leak1[1] - leak0[1] >= max(1, args.cycles // 20):
        failures.append(f"LeakSanitizer: {leak1[1] - leak0[1]} more unreachable allocations "
                        f"({leak1[0] - leak0[0]} bytes) after {args.cycles} cycles; reports in {lsan.dir}")
    print(f"leakcheck: {args.cycles} cycles after {args.warmup} warm-up; RSS {rss0} -> {rss1} KiB; "
          f"gc objects {sum(objs0.values())} -> {sum(objs1.values())}; "
          + (f"LeakSanitizer unreachable bytes {leak0[0]} -> {leak1[0]} "
             f"in {leak0[1]} -> {leak1[1]} allocations" if lsan.active else "LeakSanitizer not active"))
    for f in failures:
        print(f"leakcheck: FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
