"""Title suggestions (libzim.suggestion).

Expected results come from the archives' own title lists (read with
Archive.iter_by_title(), a different code path) and from the pages written by
search_fixtures.py.
"""

from __future__ import annotations

import re

import pytest

import libzim
from libzim.reader import Archive, Entry
from libzim.suggestion import (
    SuggestionResult,
    SuggestionResultSet,
    SuggestionSearch,
    SuggestionSearcher,
)
from search_fixtures import *  # noqa: F401,F403
from search_fixtures import PAGES_A, SMALL_NOINDEX_ZIM, TOPIC_WORDS, WIKIBOOKS_ZIM

ALL = 1000


def words(title: str) -> list[str]:
    return re.findall(r"\w+", title.lower())


def title_matches(title: str, query: str) -> bool:
    """libzim's suggestion rule: every query word is a word of the title, except
    the last one, which only has to start a word of the title."""
    q = words(query)
    t = words(title)
    if not q:
        return False
    *full, last = q
    return all(w in t for w in full) and any(w.startswith(last) for w in t)


@pytest.fixture(scope="module")
def wikibooks():
    with Archive(WIKIBOOKS_ZIM) as a:
        assert a.has_title_index
        yield a


@pytest.fixture(scope="module")
def wb_titles(wikibooks) -> list[Entry]:
    entries = list(wikibooks.iter_by_title())
    assert len(entries) > 50
    return entries


# The API's contracts (result objects, paging, bad input) on the local
# multi-cluster archive and on the shared wikibooks one; each with a word
# that many of its titles share.
_ANY = {"local": "старонка", "wikibooks": "кухня"}


@pytest.fixture(scope="module", params=["local", pytest.param("wikibooks", marks=pytest.mark.suite_data)])
def any_archive(request):
    import local_archives

    path = local_archives.local().multi.path if request.param == "local" else WIKIBOOKS_ZIM
    with Archive(path) as a:
        yield a, _ANY[request.param]


@pytest.fixture(scope="module")
def any_suggester(any_archive):
    return SuggestionSearcher(any_archive[0]), any_archive[1]


@pytest.fixture(scope="module")
def wb_suggester(wikibooks):
    return SuggestionSearcher(wikibooks)


def _resolve(archive, path: str) -> str:
    e = archive.get_entry_by_path(path)
    seen = 0
    while e.is_redirect and seen < 10:
        e = e.get_redirect_entry()
        seen += 1
    return e.path


def _prefix_queries(entries) -> list[tuple[str, Entry]]:
    out = []
    for e in entries:
        first = words(e.title)[0]
        for k in (1, 2, 3, len(first)):
            if k <= len(first):
                out.append((first[:k], e))
        out.append((e.title, e))
    return out


def test_prefix_of_every_title_finds_its_entry(wikibooks, wb_titles, wb_suggester):
    cache: dict[str, tuple[int, list]] = {}
    checked = 0
    for prefix, entry in _prefix_queries(wb_titles):
        if prefix not in cache:
            search = wb_suggester.suggest(prefix)
            results = list(search.get_results(0, ALL))
            cache[prefix] = (search.get_estimated_matches(), results)
        n, results = cache[prefix]
        got = {r.path for r in results}
        resolved = {_resolve(wikibooks, p) for p in got}
        # The entry itself, or a redirect to it (libzim suggests redirects as such).
        assert entry.path in got or entry.path in resolved, (prefix, entry.path, sorted(got))
        assert n >= len(results) > 0
        checked += 1
    assert checked > 200


def test_every_suggestion_matches_the_query(wikibooks, wb_titles, wb_suggester):
    prefixes = sorted({p for p, _ in _prefix_queries(wb_titles)})
    for prefix in prefixes:
        for r in wb_suggester.suggest(prefix).get_results(0, ALL):
            assert title_matches(r.title, prefix), (prefix, r.title)
            entry = r.get_entry()
            assert isinstance(entry, Entry)
            assert entry.path == r.path and entry.title == r.title


def test_suggestion_sets_equal_title_list_when_no_redirects_involved(wikibooks, wb_titles, wb_suggester):
    # For queries whose matches are all plain entries, the result set is exactly
    # the set of titles matching the rule.
    all_titles = {e.path: e.title for e in wb_titles}
    compared = 0
    for prefix in ("італ", "іта", "эспэранта", "рэцэпт", "суп", "мова", "урок", "кніг", "укр"):
        want = {p for p, t in all_titles.items() if title_matches(t, prefix)}
        got = {r.path for r in wb_suggester.suggest(prefix).get_results(0, ALL)}
        if all(not wikibooks.get_entry_by_path(p).is_redirect for p in got):
            assert got == want, prefix
            compared += 1
    assert compared >= 6


def test_multi_word_suggestions(wb_suggester):
    got = [r.path for r in wb_suggester.suggest("Італьянская мова Урок 1").get_results(0, ALL)]
    # "1" is a prefix of "1" and "10".
    assert sorted(got) == ["Італьянская_мова_Урок_1.html", "Італьянская_мова_Урок_10.html"]
    got = {r.path for r in wb_suggester.suggest("Італьянская мова").get_results(0, ALL)}
    assert "Італьянская_мова.html" in got and "Італьянская_кухня.html" not in got
    assert len(got) == 11  # the course page and its ten lessons


def test_case_insensitive(wb_suggester):
    a = [r.path for r in wb_suggester.suggest("італьянская").get_results(0, ALL)]
    b = [r.path for r in wb_suggester.suggest("ІТАЛЬЯНСКАЯ").get_results(0, ALL)]
    c = [r.path for r in wb_suggester.suggest("Італьянская").get_results(0, ALL)]
    assert a == b == c and len(a) == 12


def test_snippets_mark_the_matched_words(wb_suggester):
    for r in wb_suggester.suggest("Італьянская мова").get_results(0, 5):
        assert "<b>" in r.snippet
        assert re.sub(r"</?b>", "", r.snippet) == r.title


def test_result_objects(any_suggester):
    suggester, word = any_suggester
    search = suggester.suggest(word)
    assert isinstance(search, SuggestionSearch)
    # The query text shows as text (not as its UTF-8 bytes).
    assert word in repr(search) and "b'" not in repr(search)
    rs = search.get_results(0, ALL)
    assert isinstance(rs, SuggestionResultSet)
    items = list(rs)
    assert len(rs) == len(items) >= 15
    assert all(type(r) is SuggestionResult for r in items)
    assert rs[0] == items[0] and rs[-1] == items[-1]
    assert rs[1:4] == items[1:4] and type(rs[1:4]) is list
    with pytest.raises(IndexError):
        rs[len(items)]
    r = items[0]
    assert repr(r).startswith("SuggestionResult(") and r.path in repr(r)
    for attr in ("score", "word_count", "archive"):
        assert not hasattr(r, attr)
    with pytest.raises(AttributeError):
        r.path = "x"
    assert search.get_estimated_matches() >= len(items)
    assert search.getEstimatedMatches() == search.get_estimated_matches()
    for start, count in ((0, ALL), (0, 3), (2, 5), (len(items), 5)):
        assert list(search.getResults(start, count)) == [x.path for x in search.get_results(start, count)]
    # Paging is consistent.
    pages = []
    for start in range(0, len(items), 4):
        pages += [x.path for x in search.get_results(start, 4)]
    assert pages == [x.path for x in items]


def test_archives_property(any_archive):
    assert SuggestionSearcher(any_archive[0]).archives == (any_archive[0],)


def test_no_match_and_empty(any_archive):
    wikibooks = any_archive[0]
    wb_suggester = SuggestionSearcher(wikibooks)
    for text in ("", "zzzzqqq"):
        s = wb_suggester.suggest(text)
        assert len(s.get_results(0, 10)) == 0
        assert list(s.getResults(0, 10)) == []
        assert s.get_estimated_matches() == 0
    # libzim 8.1.1 itself answers a blank (not empty) query with every titled
    # entry, and so a query without any word character (checked with a C++
    # program against the same libzim): just no crash,
    # and real entries.
    for text in ("   ", "\U0001f600"):
        for r in wb_suggester.suggest(text).get_results(0, ALL):
            assert wikibooks.has_entry_by_path(r.path)


def test_own_archive_suggestions(zim_a, zim_noindex):
    # Titles are "The <Topic> chronicle": each topic word and its prefixes find the page.
    for archive in (zim_a, zim_noindex):  # a title index is built even without full text
        s = SuggestionSearcher(archive)
        for i, topic in enumerate(TOPIC_WORDS):
            for q in (topic, topic[:4], topic.upper(), f"the {topic}"):
                got = [r.path for r in s.suggest(q).get_results(0, ALL)]
                want = [p.path for p in PAGES_A if title_matches(p.title, q)]
                assert sorted(got) == sorted(want), q
                assert PAGES_A[i].path in got
        chron = {r.path for r in s.suggest("chronicle").get_results(0, ALL)}
        assert chron == {p.path for p in PAGES_A if "chronicle" in words(p.title)}
        assert len(chron) == 30


def test_small_archive_suggestions():
    with Archive(SMALL_NOINDEX_ZIM) as a:
        titles = {e.path: e.title for e in a.iter_by_title()}
        assert titles
        s = SuggestionSearcher(a)
        for path, title in titles.items():
            for q in (title, words(title)[0][:2], words(title)[-1]):
                assert path in [r.path for r in s.suggest(q).get_results(0, ALL)], q


# ---- bad input -----------------------------------------------------------------------


def test_bad_query_text(any_suggester):
    wb_suggester = any_suggester[0]
    with pytest.raises(ValueError):
        wb_suggester.suggest("a\0b")
    with pytest.raises(UnicodeEncodeError):
        wb_suggester.suggest("кух\ud800")
    with pytest.raises(ValueError):
        wb_suggester.suggest("кухня " * 20000)  # > 64 KiB
    for bad in (None, 1, b"x", ["x"]):
        with pytest.raises(TypeError):
            wb_suggester.suggest(bad)


def test_bad_paging(any_suggester):
    s = any_suggester[0].suggest(any_suggester[1])
    for start, count in ((-1, 5), (0, -1)):
        with pytest.raises(ValueError):
            s.get_results(start, count)
        with pytest.raises(ValueError):
            s.getResults(start, count)
    for start, count in ((2**31, 5), (2**62, 2**62), (0, 2**31)):
        got = s.get_results(start, count)
        assert len(got) == (0 if start else len(s.get_results(0, ALL)))
    with pytest.raises(TypeError):
        s.get_results(0, 1.0)
    with pytest.raises(TypeError):
        s.get_results(0)
    with pytest.raises(TypeError):
        s.get_results(0, 5, include_snippets=False)  # suggestions have no such option


def test_bad_construction(any_archive):
    wikibooks = any_archive[0]
    for bad in (None, 1, "x.zim", [wikibooks], (wikibooks,)):
        with pytest.raises(TypeError):
            SuggestionSearcher(bad)
    with pytest.raises(TypeError):
        SuggestionSearcher()
    with pytest.raises(TypeError):
        SuggestionSearch()
    closed = Archive(wikibooks.filename)
    closed.close()
    with pytest.raises(libzim.ClosedError):
        SuggestionSearcher(closed)
