"""Stress: many threads mixing the whole API while archives close and files change.

N threads run a random mix of operations for a bounded time: opening
archives, lookups by path, title and id, content, iteration, full-text search
without snippets and with each snippet engine, suggestions, close() racing other threads' use of
the same Archive, and opening a path another thread keeps atomically
replacing (os.replace) with one archive or another.  Every answer is compared
with the single-threaded answer for the archive that gave it (known by its
UUID); an Archive opened before a replacement must go on answering for the
file it opened, searchers included.  A watchdog fails the test when the
threads stop making progress.

It runs for a few seconds by default; LIBZIM_C_STRESS_SECONDS=60 (and
LIBZIM_C_STRESS_THREADS=8) for a long run.
"""

from __future__ import annotations

import faulthandler
import hashlib
import os
import random
import shutil
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import libzim
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher
from search_fixtures import *  # noqa: F401,F403
from search_fixtures import LOCAL_MULTI_ZIM, MARKERS_A, MARKERS_B, SMALL_QUERIES, result_rows

SECONDS = float(os.environ.get("LIBZIM_C_STRESS_SECONDS", "4"))
THREADS = int(os.environ.get("LIBZIM_C_STRESS_THREADS", "6"))
# No operation here takes more than a fraction of a second alone; a thread
# that shows no progress for this long is stuck.
STALL_SECONDS = 60.0

QUERIES = sorted(set(SMALL_QUERIES[:12]) | set(MARKERS_A) | set(MARKERS_B) | {"brindlex shared"})
PREFIXES = ["zor", "the", "field", "sha", "shared", "entry", "x", ""]


# No snippets, and snippets by each engine.
SNIPPET_MODES = (None, "libzim-c", "libzim")


def page(search, snip):
    if snip is None:
        return search.get_results(0, 20, include_snippets=False)
    return search.get_results(0, 20, include_snippets=True, snippet_engine=snip)


def digest(item) -> str:
    return hashlib.sha256(item.content).hexdigest()


class Reference:
    """Single-threaded answers for one archive."""

    def __init__(self, a: Archive):
        self.uuid = str(a.uuid)
        self.entry_count = a.entry_count
        self.by_path = {}  # user entries: what lookups by path find
        for e in a.iter_by_path():
            target = e.get_redirect_entry().path if e.is_redirect else None
            content = None if e.is_redirect else (e.get_item().mimetype, digest(e.get_item()))
            self.by_path[e.path] = (e._index, e.title, target, content)
        self.paths = [e.path for e in a.iter_by_path()]
        self.titles = [e.title for e in a.iter_by_title()]
        self.title_paths = [e.path for e in a.iter_by_title()]
        self.search = {}
        if a.has_fulltext_index:
            s = Searcher(a)
            for q in QUERIES:
                search = s.search(q)
                for snip in SNIPPET_MODES:
                    self.search[q, snip] = result_rows(page(search, snip))
        ss = SuggestionSearcher(a)
        self.suggest = {p: [(r.path, r.title) for r in ss.suggest(p).get_results(0, 10)] for p in PREFIXES}


class Stress:
    def __init__(self, refs: dict[str, Reference], files: list[Path], replaced: Path,
                 variants: list[Path], held: Archive):
        self.refs = refs
        self.files = files
        self.replaced = replaced
        self.variants = variants
        self.held = held  # opened on `replaced` before any replacement
        self.held_searcher = Searcher(held)
        self.shared = {p: Archive(p) for p in files}
        self.searchers = {p: Searcher(a) for p, a in self.shared.items() if a.has_fulltext_index}
        self.suggesters = {p: SuggestionSearcher(a) for p, a in self.shared.items()}
        self.victim_lock = threading.Lock()
        self.victim = Archive(files[0])
        self.counts: Counter = Counter()
        self.count_lock = threading.Lock()
        self.progress = [0.0] * THREADS

    def ref(self, a: Archive) -> Reference:
        return self.refs[str(a.uuid)]

    # -- checks of one archive, shared by the operations ---------------------

    def check_lookups(self, a: Archive, rnd: random.Random) -> None:
        ref = self.ref(a)
        path = rnd.choice(list(ref.by_path))
        idx, title, target, content = ref.by_path[path]
        e = a.get_entry_by_path(path)
        assert (e._index, e.title, e.is_redirect) == (idx, title, target is not None), path
        assert a._get_entry_by_id(idx).path == path
        if target is not None:
            assert e.get_redirect_entry().path == target
        else:
            item = e.get_item()
            assert (item.mimetype, digest(item)) == content, path
        k = rnd.randrange(len(ref.titles))
        assert a.get_entry_by_title(ref.titles[k]).title == ref.titles[k]
        assert a.has_entry_by_path(path) and not a.has_entry_by_path(path + "/nope")

    def check_iteration(self, a: Archive, rnd: random.Random) -> None:
        ref = self.ref(a)
        if rnd.random() < 0.5:
            assert [e.path for e in a.iter_by_path()] == ref.paths
        else:
            assert [e.path for e in a.iter_by_title()] == ref.title_paths
        prefix = rnd.choice(ref.paths)[:2]
        assert [e.path for e in a.find_by_path(prefix)] == [p for p in ref.paths if p.startswith(prefix)]

    def check_search(self, s: Searcher, ref: Reference, rnd: random.Random) -> None:
        q, snip = rnd.choice(QUERIES), rnd.choice(SNIPPET_MODES)
        rows = result_rows(page(s.search(q), snip))
        assert rows == ref.search[q, snip], (ref.uuid, q, snip)

    def check_suggest(self, ss: SuggestionSearcher, ref: Reference, rnd: random.Random) -> None:
        p = rnd.choice(PREFIXES)
        assert [(r.path, r.title) for r in ss.suggest(p).get_results(0, 10)] == ref.suggest[p], p

    # -- operations --------------------------------------------------------

    def op_open(self, rnd):
        path = rnd.choice(self.files + [self.replaced])
        with Archive(path) as a:
            ref = self.ref(a)
            assert a.entry_count == ref.entry_count
            self.check_lookups(a, rnd)
            if ref.search and rnd.random() < 0.5:
                self.check_search(Searcher(a), ref, rnd)
            else:
                self.check_suggest(SuggestionSearcher(a), ref, rnd)
        return "open"

    def op_lookup(self, rnd):
        self.check_lookups(self.shared[rnd.choice(self.files)], rnd)
        return "lookup"

    def op_iterate(self, rnd):
        self.check_iteration(self.shared[rnd.choice(self.files)], rnd)
        return "iterate"

    def op_search(self, rnd):
        path = rnd.choice(list(self.searchers))
        self.check_search(self.searchers[path], self.ref(self.shared[path]), rnd)
        return "search"

    def op_suggest(self, rnd):
        path = rnd.choice(self.files)
        self.check_suggest(self.suggesters[path], self.ref(self.shared[path]), rnd)
        return "suggest"

    def op_held(self, rnd):
        # Opened before the file was first replaced: still that file.
        ref = self.ref(self.held)
        self.check_lookups(self.held, rnd)
        self.check_search(self.held_searcher, ref, rnd)
        return "held"

    def op_victim(self, rnd):
        a = self.victim
        try:
            self.check_lookups(a, rnd)
            self.check_iteration(a, rnd)
        except libzim.ClosedError:
            return "victim-closed"
        return "victim"

    def op_close(self, rnd):
        with self.victim_lock:
            old, self.victim = self.victim, Archive(rnd.choice(self.files))
        old.close()
        return "close"

    def op_replace(self, rnd):
        src = rnd.choice(self.variants)
        tmp = self.replaced.with_name(f".{self.replaced.name}.{threading.get_ident()}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, self.replaced)
        return "replace"

    OPS = [("op_open", 3), ("op_lookup", 6), ("op_iterate", 2), ("op_search", 5),
           ("op_suggest", 3), ("op_held", 3), ("op_victim", 4), ("op_close", 1), ("op_replace", 1)]

    def worker(self, k: int, deadline: float, errors: list) -> None:
        rnd = random.Random(1000 + k)
        names = [n for n, w in self.OPS for _ in range(w)]
        local: Counter = Counter()
        try:
            while time.monotonic() < deadline:
                local[getattr(self, rnd.choice(names))(rnd)] += 1
                self.progress[k] = time.monotonic()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append((k, e))
        finally:
            with self.count_lock:
                self.counts.update(local)

    def close_all(self):
        for a in self.shared.values():
            a.close()
        self.victim.close()
        self.held.close()


def watch(threads: list[threading.Thread], progress: list[float], stall: float) -> None:
    """Return when every thread has finished; fail the test (with every
    thread's stack on stderr) when one shows no progress for `stall` s."""
    while any(t.is_alive() for t in threads):
        time.sleep(min(0.2, stall / 4))
        now = time.monotonic()
        stalled = [k for k, t in enumerate(threads) if t.is_alive() and now - progress[k] > stall]
        if stalled:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            pytest.fail(f"threads {stalled} made no progress for {stall:.1f} s")


def test_stress(zim_a_path, zim_b_path, tmp_path):
    replaced = tmp_path / "replaced.zim"
    shutil.copyfile(zim_a_path, replaced)
    files = [Path(zim_a_path), Path(zim_b_path), LOCAL_MULTI_ZIM]
    refs = {}
    for p in files:
        with Archive(p) as a:
            refs[str(a.uuid)] = Reference(a)
    assert len(refs) == 3
    # The references must be worth comparing with: most queries find pages
    # in A or B, snippets are there, suggestions too.
    found = {q for r in refs.values() for (q, snip), rows in r.search.items() if rows}
    assert len(found) >= len(QUERIES) - 2, set(QUERIES) - found
    for engine in SNIPPET_MODES[1:]:
        assert any(row[4] for r in refs.values() for (q, snip), rows in r.search.items()
                   if snip == engine for row in rows), engine
    assert sum(1 for r in refs.values() for v in r.suggest.values() if v) >= 6

    stress = Stress(refs, files, replaced, [Path(zim_a_path), Path(zim_b_path)], Archive(replaced))
    errors: list = []
    start = time.monotonic()
    deadline = start + SECONDS
    stress.progress = [start] * THREADS
    threads = [threading.Thread(target=stress.worker, args=(k, deadline, errors), daemon=True,
                                name=f"stress-{k}") for k in range(THREADS)]
    for t in threads:
        t.start()
    try:
        watch(threads, stress.progress, STALL_SECONDS)
    finally:
        for t in threads:
            t.join(5)
    stress.close_all()
    if errors:
        k, e = errors[0]
        raise AssertionError(f"thread {k} (of {len(errors)} failing): {type(e).__name__}: {e}") from e
    total = sum(stress.counts.values())
    print(f"\nstress: {THREADS} threads, {SECONDS:.0f} s, {total} operations: {dict(stress.counts)}")
    for name in ("open", "lookup", "search", "suggest", "held", "victim", "close", "replace"):
        assert stress.counts[name] > 0, f"no {name} operation ran: {dict(stress.counts)}"


def test_stall_watchdog_fires():
    # A stuck worker must fail the test, not hang it.
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(10,), daemon=True)
    t.start()
    try:
        with pytest.raises(pytest.fail.Exception, match="no progress"):
            watch([t], [time.monotonic()], 0.3)
    finally:
        release.set()
        t.join()
