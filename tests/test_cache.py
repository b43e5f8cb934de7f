"""libzim._cache.LRUCache: bounded, least recently used out first, an evicted value
closed only when its last lease ends; and the serve shelf over real archives: a book
evicted while a search on it runs answers as a single thread does."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from conftest import run_threads
from libzim._cache import LRUCache, lease_scope


class Thing:
    def __init__(self, key: object) -> None:
        self.key = key
        self.closed = False

    def close(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True


def make(cache: LRUCache, key: object, log: list | None = None) -> Thing:
    def opener() -> Thing:
        if log is not None:
            log.append(key)
        return Thing(key)
    return cache.get(key, opener)


def test_least_recently_used_goes_first_and_is_closed():
    cache: LRUCache[str, Thing] = LRUCache(2, Thing.close)
    a, b = make(cache, "a"), make(cache, "b")
    assert make(cache, "a") is a  # a is now the most recent
    c = make(cache, "c")
    assert b.closed and not a.closed and not c.closed
    assert cache.keys() == ["a", "c"] and cache.opened == 3 and cache.hits == 1 and cache.evicted == 1


def test_an_evicted_value_stays_open_while_leased():
    cache: LRUCache[str, Thing] = LRUCache(1, Thing.close)
    with lease_scope():
        a = make(cache, "a")
        make(cache, "b")  # evicts a, which this scope holds
        assert "a" not in cache and not a.closed
        with lease_scope():  # a nested scope releases only its own
            b = make(cache, "b")
        assert not b.closed
    assert a.closed and not b.closed
    assert cache.closed == 1


def test_outside_a_scope_nothing_is_leased():
    cache: LRUCache[str, Thing] = LRUCache(1, Thing.close)
    a = make(cache, "a")
    make(cache, "b")
    assert a.closed


def test_a_failed_open_is_raised_and_not_kept():
    cache: LRUCache[str, Thing] = LRUCache(2, Thing.close)
    calls = []

    def bad() -> Thing:
        calls.append(1)
        raise OSError("gone")

    for _ in range(2):
        with pytest.raises(OSError, match="gone"):
            cache.get("x", bad)
    assert len(calls) == 2 and len(cache) == 0


def test_one_open_for_threads_missing_together():
    cache: LRUCache[str, Thing] = LRUCache(4, Thing.close)
    opened: list[object] = []
    gate = threading.Event()
    got: list[Thing] = []

    def slow() -> Thing:
        opened.append(1)
        gate.wait(10)
        return Thing("k")

    def worker() -> None:
        got.append(cache.get("k", slow))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(30)
    assert len(opened) == 1 and len(got) == 8 and all(g is got[0] for g in got)


def test_weights_bound_the_total():
    cache: LRUCache[str, Thing] = LRUCache(5, Thing.close)
    a = cache.get("a", lambda: Thing("a"), weight=3)
    b = cache.get("b", lambda: Thing("b"), weight=2)
    c = cache.get("c", lambda: Thing("c"), weight=2)  # 7 > 5: a goes
    assert a.closed and not b.closed and not c.closed and cache.weight == 4


def test_many_threads_never_use_a_closed_value():
    # 8 threads take random keys of a cache much smaller than the key set, each
    # checking, while it holds its lease, that its value is open; every value made
    # is closed once at most (Thing.close asserts it), and all of them at the end.
    cache: LRUCache[int, Thing] = LRUCache(3, Thing.close)
    made: list[Thing] = []
    lock = threading.Lock()

    def opener(k: int) -> Thing:
        t = Thing(k)
        with lock:
            made.append(t)
        return t

    def worker(seed: int) -> None:
        import random
        rnd = random.Random(seed)
        for _ in range(2000):
            with lease_scope():
                k = rnd.randrange(12)
                v = cache.get(k, lambda: opener(k))
                assert v.key == k and not v.closed
                w = cache.get((k + 1) % 12, lambda: opener((k + 1) % 12))
                assert not v.closed and not w.closed

    run_threads([lambda s=s: worker(s) for s in range(8)])
    assert len(cache) <= 3
    cache.clear()
    assert all(t.closed for t in made) and cache.closed == len(made)


# -- the shelf over archives --------------------------------------------------

def _write(path: Path, word: str) -> Path:
    from libzim import writer
    from writer_support import TextItem

    with writer.Creator(path).config_indexing(True, "eng") as c:
        c.set_mainpath("a0.html")
        for i in range(6):
            c.add_item(TextItem(f"a{i}.html", f"{word} {i}", f"<html><body>{word} common text {i}</body></html>"))
        c.add_metadata("Title", word)
    return path


@pytest.fixture(scope="module")
def six_books(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("shelf")
    return [_write(d / f"book{k}.zim", f"word{k}") for k in range(6)]


def _answers(lib, books, rounds: int) -> list[tuple]:
    out = []
    for r in range(rounds):
        b = books[r % len(books)]
        with lease_scope():
            s = lib.search((b,), "common")
            hits = [(x.path, x.title) for x in s.get_results(0, 10)]
            text = bytes(b.archive.get_entry_by_path("a1.html").get_item().content)
            sugg = [x.path for x in b.suggester.suggest(b.title).get_results(0, 3)]
        out.append((b.name, s.get_estimated_matches(), hits, text, sugg))
    return out


def test_eviction_racing_searches_answers_as_one_thread(six_books):
    from libzim.serve.library import Library
    from libzim.serve.shelf import CacheSizes, Shelf

    # Caches of 2 archives, 1 searcher, 1 suggestion searcher over 6 books: every
    # request evicts another book's archive and searcher, often while they are used.
    def library():
        return Library(six_books, shelf=Shelf(CacheSizes(archives=2, searchers=1, suggesters=1, searches=2)))

    one = library()
    books = list(one.books.values())
    expected = _answers(one, books, 12)
    assert [e[0] for e in expected[:6]] == [b.name for b in books]
    assert all(e[1] == 6 and len(e[2]) == 6 and b"common text 1" in e[3] for e in expected)

    lib = library()
    books = list(lib.books.values())
    results: dict[int, list] = {}

    def worker(k: int) -> None:
        rotated = books[k % 6:] + books[:k % 6]
        got = _answers(lib, rotated, 12)
        results[k] = got

    run_threads([lambda k=k: worker(k) for k in range(8)])
    want = {e[0]: e[1:] for e in expected}
    for got in results.values():
        assert len(got) == 12
        for name, *rest in got:
            assert tuple(rest) == want[name]
    assert lib.shelf.archives.evicted > 0 and len(lib.shelf.archives) <= 2
    lib.close()
    assert len(lib.shelf.archives) == 0
