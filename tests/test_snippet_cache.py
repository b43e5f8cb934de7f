"""The snippet engine's cache of hits' visible text: its budget, its accounting, eviction.

libzim.search's get/set_snippet_cache_max_size and get_snippet_cache_current_size
(src/zimshim_snippet_cache.cpp); libzim._libzim._snippet_cache_count() is the
testing hook for how many texts it holds. Expected snippets come from the
engine run on each hit's HTML (`_libzim._snippet`, no archive, no cache),
expected counts from the distinct hits the queries return.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from libzim import _libzim
from libzim.reader import (
    Archive,
    get_cluster_cache_current_size,
    get_cluster_cache_max_size,
    set_cluster_cache_max_size,
)
from libzim.search import (
    Searcher,
    get_snippet_cache_current_size,
    get_snippet_cache_max_size,
    set_snippet_cache_max_size,
)
from conftest import child_python
from search_fixtures import *  # noqa: F401,F403

MiB = 1 << 20
DEFAULT = 16 * MiB
ALL = 1000  # more than any fixture query can match
SLOT_OVERHEAD = 160  # bytes charged per text beyond its characters (kSlotOverhead)
QUERIES = [
    "gleepnar", "frobnitz", "wumpkit", "snorvelt", "plonkvar", "chronicle", "keywords",
    "article", "gleepnar frobnitz", "zorblak", "lighthouse", "blacksmith", "meadow",
]


def count() -> int:
    return _libzim._snippet_cache_count()


@pytest.fixture
def empty_cache():
    """The text cache emptied (budget 0, then the default) and its budget restored after."""
    saved = get_snippet_cache_max_size()
    set_snippet_cache_max_size(0)
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    set_snippet_cache_max_size(DEFAULT)
    yield
    set_snippet_cache_max_size(saved)


def rows(searcher: Searcher, queries=QUERIES) -> list[tuple[str, str, str]]:
    return [(q, r.path, r.snippet) for q in queries for r in searcher.search(q).get_results(0, ALL)]


def engine_rows(archive: Archive, got: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The same rows with each snippet made by the engine on the hit's HTML."""
    html = {p: bytes(archive.get_entry_by_path(p).get_item().content) for _q, p, _s in got}
    return [(q, p, _libzim._snippet(html[p], q, "eng")) for q, p, _s in got]


def test_default_budget_at_import():
    code = ("import libzim.search as s, libzim._libzim as m; "
            "print(s.get_snippet_cache_max_size(), s.get_snippet_cache_current_size(), "
            "m._snippet_cache_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, **child_python(ZIM_CLUSTERCACHE="3"))
    assert out.returncode == 0, out.stderr
    # 16 MiB whatever the cluster cache's budget (ZIM_CLUSTERCACHE is not its).
    assert out.stdout.split() == [str(DEFAULT), "0", "0"]


def test_snippet_searches_fill_it_within_the_budget(zim_a, empty_cache):
    searcher = Searcher(zim_a)
    for q in QUERIES:  # no snippets asked: no text read, none kept
        searcher.search(q).get_results(0, ALL, include_snippets=False)
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    got = rows(searcher)
    hits = {p for _q, p, _s in got}
    assert len(hits) > 5, "fixture error: the queries must find several pages"
    # One text per distinct hit, each charged its characters and its slot.
    assert count() == len(hits)
    full = get_snippet_cache_current_size()
    assert (SLOT_OVERHEAD + 1) * len(hits) < full <= get_snippet_cache_max_size() == DEFAULT
    # Seen again: every snippet from the cache, nothing charged twice.
    assert rows(searcher) == got == engine_rows(zim_a, got)
    assert (get_snippet_cache_current_size(), count()) == (full, len(hits))


def test_shrinking_the_budget_evicts_down_to_it(zim_a, empty_cache):
    searcher = Searcher(zim_a)
    want = engine_rows(zim_a, rows(searcher))
    full, n = get_snippet_cache_current_size(), count()
    assert n > 2
    half = full // 2
    set_snippet_cache_max_size(half)
    assert get_snippet_cache_max_size() == half
    assert 0 < get_snippet_cache_current_size() <= half
    assert 0 < count() < n
    # Snippets stay right whether their text was kept or evicted, and the
    # budget holds while searches put texts back.
    assert rows(searcher) == want
    assert 0 < get_snippet_cache_current_size() <= half
    set_snippet_cache_max_size(SLOT_OVERHEAD)  # smaller than any text: none stays
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    assert rows(searcher) == want
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    # Raised again, it fills again.
    set_snippet_cache_max_size(DEFAULT)
    assert rows(searcher) == want
    assert (get_snippet_cache_current_size(), count()) == (full, n)


def test_budget_zero_turns_it_off_and_snippets_are_the_same(zim_a, empty_cache):
    searcher = Searcher(zim_a)
    cached = rows(searcher)
    replayed = rows(searcher)  # every text from the cache
    assert count() > 0
    set_snippet_cache_max_size(0)
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    off = rows(searcher)
    assert (get_snippet_cache_current_size(), count()) == (0, 0)
    assert any(s for _q, _p, s in off)
    assert cached == replayed == off == engine_rows(zim_a, off)


def test_closing_the_file_drops_its_texts(zim_a_path, tmp_path, empty_cache):
    copy = tmp_path / "copy.zim"
    shutil.copyfile(zim_a_path, copy)  # another inode: caches of its own
    archive = Archive(copy)
    got = rows(Searcher(archive))
    n = len({p for _q, p, _s in got})
    assert count() == n > 0
    assert get_snippet_cache_current_size() > 0
    archive.close()  # the file's last Archive: its cluster cache and texts go
    assert (get_snippet_cache_current_size(), count()) == (0, 0)


def test_cached_hits_leave_the_cluster_cache_alone(zim_a, empty_cache):
    saved = get_cluster_cache_max_size()
    searcher = Searcher(zim_a)
    try:
        set_cluster_cache_max_size(64 * MiB)
        want = rows(searcher)
        assert get_cluster_cache_current_size() > 0  # the first pass decoded clusters
        set_cluster_cache_max_size(0)
        set_cluster_cache_max_size(64 * MiB)
        # Every hit's text is cached: its snippet decodes no cluster.
        assert rows(searcher) == want
        assert get_cluster_cache_current_size() == 0
        # And the cluster cache's budget is its own.
        set_snippet_cache_max_size(0)
        assert get_cluster_cache_max_size() == 64 * MiB
        assert rows(searcher) == want
        assert get_cluster_cache_current_size() > 0
    finally:
        set_cluster_cache_max_size(saved)


class Index:
    def __init__(self, n: int) -> None:
        self.n = n

    def __index__(self) -> int:
        return self.n


def test_budget_argument_checks(empty_cache):
    # As set_cluster_cache_max_size (python-libzim's uint64_t conversion).
    for bad, exc in ((-1, OverflowError), (1 << 64, OverflowError), ("3", TypeError),
                     (None, TypeError), (1.5, TypeError)):
        with pytest.raises(exc):
            set_snippet_cache_max_size(bad)
        with pytest.raises(exc):
            set_cluster_cache_max_size(bad)
    assert get_snippet_cache_max_size() == DEFAULT
    set_snippet_cache_max_size(size_in_bytes=Index(12345))
    assert get_snippet_cache_max_size() == 12345
    set_snippet_cache_max_size((1 << 64) - 1)
    assert get_snippet_cache_max_size() == (1 << 64) - 1
    with pytest.raises(TypeError):
        set_snippet_cache_max_size()  # type: ignore[call-arg]
