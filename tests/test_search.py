"""Full-text search: exact result sets, result objects, snippets, multi-archive, bad input.

Expected values come from the HTML written by search_fixtures.py, not from
the code under test.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest

import libzim
from libzim.reader import Archive, Entry
from libzim.search import Query, Search, Searcher, SearchResult, SearchResultSet
from libzim.suggestion import SuggestionSearcher
from conftest import child_python, per_libzim, run_threads
from libzim import _libzim
from search_fixtures import *  # noqa: F401,F403
from search_fixtures import (
    GEO_A,
    MARKERS_A,
    MARKERS_B,
    PAGES_A,
    PAGES_B,
    SMALL_NOINDEX_ZIM,
    SMALL_QUERIES,
    TOPIC_WORDS,
    page_by_path,
    page_text,
    pages_with,
    pages_with_any,
    result_rows,
)

ALL = 1000  # more than any fixture query can match


def paths(result_set) -> list[str]:
    return [r.path for r in result_set]


@pytest.fixture(scope="module")
def searcher_a(zim_a):
    return Searcher(zim_a)


# ---- exact result sets ---------------------------------------------------------------


SINGLE_WORDS = sorted(MARKERS_A) + TOPIC_WORDS[:6] + ["chronicle", "keywords", "article"]


@pytest.mark.parametrize("word", SINGLE_WORDS)
def test_single_word_exact_set(searcher_a, word):
    expected = pages_with(PAGES_A, word)
    assert expected, "fixture error: the word must occur somewhere"
    search = searcher_a.search(word)
    got = paths(search.get_results(0, ALL, include_snippets=False))
    assert len(got) == len(set(got)), f"duplicate results for {word!r}: {got}"
    assert set(got) == expected
    assert search.get_estimated_matches() == len(expected)


def test_marker_sets_match_the_tables():
    # Guard the fixture itself: pages_with (read from the HTML) agrees with the tables.
    for word, idx in MARKERS_A.items():
        assert pages_with(PAGES_A, word) == {PAGES_A[i].path for i in idx}
    for word, idx in MARKERS_B.items():
        assert pages_with(PAGES_B, word) == {PAGES_B[i].path for i in idx}


@pytest.mark.parametrize(
    "query, expected",
    [
        # Words are ANDed by default (libzim sets Xapian's default operator to AND).
        ("gleepnar frobnitz", lambda: pages_with(PAGES_A, "gleepnar", "frobnitz")),
        # libzim 8 parses boolean operators; libzim 9 parses queries with no Xapian
        # flag but CJK n-grams, so AND, OR, NOT are ordinary words, ANDed like the
        # rest ("and" is on most pages of A, "or" and "not" on none).
        ("gleepnar AND frobnitz", lambda: pages_with(PAGES_A, "gleepnar", "frobnitz")),
        (
            "wumpkit OR snorvelt",
            lambda: per_libzim(
                libzim8=pages_with_any(PAGES_A, "wumpkit", "snorvelt"),
                libzim9=pages_with(PAGES_A, "wumpkit", "or", "snorvelt"),
            ),
        ),
        (
            "gleepnar AND NOT frobnitz",
            lambda: per_libzim(
                libzim8=pages_with(PAGES_A, "gleepnar") - pages_with(PAGES_A, "frobnitz"),
                libzim9=pages_with(PAGES_A, "gleepnar", "and", "not", "frobnitz"),
            ),
        ),
        ("wumpkit gleepnar", lambda: pages_with(PAGES_A, "wumpkit", "gleepnar")),
        ("zorblak chronicle", lambda: pages_with(PAGES_A, "zorblak")),
        ("zorblak quivnex", lambda: set()),
        ("GLEEPNAR", lambda: pages_with(PAGES_A, "gleepnar")),  # case-insensitive
        ("Frobnitz", lambda: pages_with(PAGES_A, "frobnitz")),
        ("nosuchwordanywhere", lambda: set()),
    ],
)
def test_boolean_queries(searcher_a, query, expected):
    want = expected()
    search = searcher_a.search(query)
    got = paths(search.get_results(0, ALL))
    assert sorted(got) == sorted(want)
    assert search.get_estimated_matches() == len(want)


def test_query_object_and_str_agree(searcher_a):
    for text in ("frobnitz", "gleepnar frobnitz", "chronicle"):
        a = searcher_a.search(text).get_results(0, ALL)
        b = searcher_a.search(Query(text)).get_results(0, ALL)
        c = searcher_a.search(Query().set_query(text)).get_results(0, ALL)
        d = searcher_a.search(Query("other").setQuery(text)).get_results(0, ALL)
        assert paths(a) == paths(b) == paths(c) == paths(d)
        assert [r.score for r in a] == [r.score for r in b]


def test_titles_word_counts_archive_and_entries(searcher_a, zim_a):
    results = searcher_a.search("frobnitz").get_results(0, ALL)
    assert len(results) == 15
    for r in results:
        i, page = page_by_path(PAGES_A, r.path)
        title, body = page_text(PAGES_A, i)
        assert r.title == title == page.title
        # libzim counts the words of the indexed text (the body, h1 included).
        assert r.word_count == len(body.split()), r.path
        assert r.archive is zim_a
        entry = r.get_entry()
        assert isinstance(entry, Entry)
        assert entry.path == r.path and entry.title == page.title
        content = bytes(entry.get_item().content).decode()
        assert "frobnitz" in content


def test_scores_and_ordering(searcher_a):
    # OR (partial matches, best score under 100) exists on libzim 8 only.
    or_query = per_libzim(libzim8=("wumpkit OR snorvelt",), libzim9=())
    for q in ("chronicle", "frobnitz", "gleepnar", *or_query, "keywords"):
        results = searcher_a.search(q).get_results(0, ALL)
        scores = [r.score for r in results]
        assert scores, q
        assert all(type(s) is int and 0 <= s <= 100 for s in scores), scores
        assert scores == sorted(scores, reverse=True), (q, scores)
        if " OR " not in q:
            # Xapian's percentages: the best match of all terms scores 100 (with OR,
            # the best match only has a share of the terms, hence less).
            assert scores[0] == 100, (q, scores)


def test_title_match_ranks_first(searcher_a):
    # The topic word is in the title (weighted higher) of its own page only.
    for i, topic in enumerate(TOPIC_WORDS[:5]):
        results = searcher_a.search(topic).get_results(0, ALL)
        assert paths(results) == [PAGES_A[i].path]


def test_paging_is_consistent(searcher_a):
    search = searcher_a.search("chronicle")
    full = paths(search.get_results(0, ALL, include_snippets=False))
    assert len(full) == 30
    pieces = []
    for start in range(0, 30, 7):
        pieces += paths(search.get_results(start, 7, include_snippets=False))
    assert pieces == full
    assert paths(search.get_results(29, 5)) == full[29:]
    assert len(search.get_results(30, 5)) == 0
    assert len(search.get_results(5, 0)) == 0
    assert len(search.get_results(1000, 10)) == 0


def test_getresults_3x_alias(searcher_a):
    search = searcher_a.search("frobnitz")
    for start, count in ((0, ALL), (0, 5), (3, 4), (14, 10), (15, 3), (0, 0)):
        it = search.getResults(start, count)
        assert iter(it) is it
        got = list(it)
        assert all(type(p) is str for p in got)
        assert got == paths(search.get_results(start, count))
    assert search.getEstimatedMatches() == search.get_estimated_matches() == 15


def test_estimated_matches_at_least_results(searcher_a, pydoc_zim):
    for searcher, queries in (
        (searcher_a, ["chronicle", "frobnitz", "gleepnar", "nosuchword"]),
        (Searcher(pydoc_zim), ["dictionary", "thread", "socket", "asyncio", "zzzqqq"]),
    ):
        for q in queries:
            search = searcher.search(q)
            n = len(search.get_results(0, 500, include_snippets=False))
            assert search.get_estimated_matches() >= n


def test_estimates_are_counted_once_per_query(zim_a, zim_b):
    """A searcher keeps the estimate of each query it counted (libzim counts it with
    a matcher run of its own, the cost of a page again): asked again, by another
    Search of the same text or for another page, it is the same figure, not recounted."""
    s = Searcher(zim_a)
    words = ["chronicle", "plonkvar", "wumpkit"]
    runs = _libzim._estimate_runs()
    first = {w: s.search(w).get_estimated_matches() for w in words}
    assert _libzim._estimate_runs() - runs == len(words)
    for w in words:  # single words: the fixture's own count, exactly
        assert first[w] == len(pages_with(PAGES_A, w)), w
    runs = _libzim._estimate_runs()
    again = {w: s.search(Query().set_query(w)).get_estimated_matches() for w in words}
    assert again == first
    assert _libzim._estimate_runs() == runs
    # Another text, or the same text over a geo range, is another query.
    s.search("plonkvar chronicle").get_estimated_matches()
    s.search(Query().set_query("plonkvar").set_georange(*GEO_A[12], 1000.0)).get_estimated_matches()
    assert _libzim._estimate_runs() - runs == 2
    # Adding an archive counts again, over both (a Search made before included).
    before = s.search("plonkvar")
    s.add_archive(zim_b)
    runs = _libzim._estimate_runs()
    both = len(pages_with(PAGES_A, "plonkvar")) + len(pages_with(PAGES_B, "plonkvar"))
    assert before.get_estimated_matches() == both
    assert s.search("plonkvar").get_estimated_matches() == both
    assert _libzim._estimate_runs() - runs == 1


def test_estimate_cache_can_be_turned_off(zim_a_path):
    """LIBZIM_C_ESTIMATE_CACHE=0: every estimate is libzim's count, as python-libzim's."""
    code = (
        "import sys\n"
        "from libzim import _libzim\n"
        "from libzim.reader import Archive\n"
        "from libzim.search import Searcher\n"
        "s = Searcher(Archive(sys.argv[1]))\n"
        "n = [s.search('plonkvar').get_estimated_matches() for _ in range(3)]\n"
        "print(n[0], len(set(n)), _libzim._estimate_runs())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(zim_a_path)], capture_output=True, text=True,
                         timeout=120, check=True, **child_python(LIBZIM_C_ESTIMATE_CACHE="0")).stdout.split()
    assert out == [str(len(pages_with(PAGES_A, "plonkvar"))), "1", "3"]


def test_pydoc_archive_finds_the_obvious_pages(pydoc_zim):
    # Module pages of the Python documentation that must match their own name.
    s = Searcher(pydoc_zim)
    for query, page in (
        ("json", "library/json.html"),
        ("argparse", "library/argparse.html"),
        ("subprocess", "library/subprocess.html"),
        ("itertools", "library/itertools.html"),
        ("pickle", "library/pickle.html"),
    ):
        assert pydoc_zim.has_entry_by_path(page)
        got = paths(s.search(query).get_results(0, 10, include_snippets=False))
        assert page in got, (query, got)


# ---- result objects ------------------------------------------------------------------


def test_result_set_protocol(searcher_a):
    rs = searcher_a.search("gleepnar").get_results(0, ALL, include_snippets=False)
    assert isinstance(rs, SearchResultSet)
    assert len(rs) == 10
    items = list(rs)
    assert [type(r) for r in items] == [SearchResult] * 10
    assert list(iter(rs)) == items  # iterable more than once
    assert rs[0] == items[0] and rs[9] == items[9]
    assert rs[-1] == items[-1] and rs[-10] == items[0]
    with pytest.raises(IndexError):
        rs[10]
    with pytest.raises(IndexError):
        rs[-11]
    with pytest.raises(TypeError):
        rs["0"]
    sl = rs[2:5]
    assert type(sl) is list and sl == items[2:5]
    assert rs[::-1] == items[::-1]
    assert rs[100:] == []
    assert "SearchResultSet" in repr(rs)
    empty = searcher_a.search("nosuchword").get_results(0, 10)
    assert len(empty) == 0 and list(empty) == [] and not empty
    with pytest.raises(IndexError):
        empty[0]


def test_result_repr_and_immutability(searcher_a, zim_a):
    r = searcher_a.search("snorvelt").get_results(0, 1)[0]
    assert r.path == "topic29.html"
    text = repr(r)
    assert text.startswith("SearchResult(") and "topic29.html" in text and PAGES_A[29].title in text
    for attr in ("path", "title", "snippet", "score", "word_count", "archive"):
        with pytest.raises(AttributeError):
            setattr(r, attr, None)
    with pytest.raises(TypeError):
        hash(r)
    with pytest.raises(TypeError):
        SearchResult()
    with pytest.raises(TypeError):
        Search()
    with pytest.raises(TypeError):
        SearchResultSet()


def test_search_repr_and_archives_property(searcher_a, zim_a):
    search = searcher_a.search("wumpkit")
    assert "wumpkit" in repr(search)
    # The query shows as the text it was given, not as its UTF-8 bytes.
    assert "é" in repr(searcher_a.search("café wumpkit"))
    assert searcher_a.archives == (zim_a,)
    assert repr(Query("abc")) == "Query('abc')"


def test_query_object():
    q = Query()
    assert q.query == ""
    assert Query("x").query == "x"
    assert Query(query="y").query == "y"
    assert q.set_query("abc") is q and q.query == "abc"
    assert q.setQuery("def") is q and q.query == "def"
    assert q.set_georange(1.0, 2.0, 3.0) is q
    assert q.setGeorange(1.0, 2.0, 3.0) is q
    with pytest.raises(AttributeError):
        q.query = "z"


# ---- snippets ------------------------------------------------------------------------

SNIPPET_QUERIES = [
    "gleepnar", "frobnitz", "wumpkit", "snorvelt", "plonkvar", "chronicle", "keywords",
    "article", "gleepnar frobnitz", "wumpkit OR snorvelt", "zorblak", "lighthouse",
    "blacksmith", "meadow", "nosuchword",
]


@pytest.mark.parametrize("query", SNIPPET_QUERIES)
def test_include_snippets_false_vs_true(searcher_a, query):
    search = searcher_a.search(query)
    plain = search.get_results(0, ALL, include_snippets=False)
    rich = search.get_results(0, ALL, include_snippets=True)
    default = search.get_results(0, ALL)
    key = lambda r: (r.path, r.title, r.score, r.archive)  # noqa: E731
    assert [key(r) for r in plain] == [key(r) for r in rich] == [key(r) for r in default]
    assert all(r.snippet == "" for r in plain)
    # The fast path does not read word counts (a value read per hit).
    assert all(r.word_count == -1 for r in plain)
    assert all(r.word_count > 0 for r in rich)
    assert [r.snippet for r in rich] == [r.snippet for r in default]
    terms = [t for t in re.findall(r"[a-z]+", query.lower()) if t not in ("and", "or", "not")]
    for r in rich:
        i, _ = page_by_path(PAGES_A, r.path)
        title, body = page_text(PAGES_A, i)
        found = [t for t in terms if re.search(rf"\b{t}\b", body.lower())]
        assert found, "fixture error: results must contain a query term"
        assert r.snippet, f"empty snippet for {r.path} ({query!r})"
        # The highlighted words are query terms, and the snippet is text of *this* page.
        marked = [m.lower() for m in re.findall(r"<b>(.*?)</b>", r.snippet)]
        assert all(m in terms for m in marked), r.snippet
        # Every term on the page is marked, "lighthouse" (stem "lighthous")
        # too, which libzim's own getSnippet() leaves plain.
        assert marked, r.snippet
        plain_text = re.sub(r"</?b>", "", r.snippet).replace("...", " ").replace("\u2026", " ")
        page_words = set(re.findall(r"\w+", (title + " " + body).lower()))
        assert set(re.findall(r"\w+", plain_text.lower())) <= page_words, (r.path, r.snippet)


def test_include_snippets_keyword_forms(searcher_a):
    search = searcher_a.search("wumpkit")
    for falsy in (False, 0, None, ""):
        assert all(r.snippet == "" for r in search.get_results(0, 5, include_snippets=falsy))
    for truthy in (True, 1, "yes"):
        assert all(r.snippet for r in search.get_results(0, 5, include_snippets=truthy))
    with pytest.raises(TypeError):
        search.get_results(0, 5, snippets=False)
    with pytest.raises(TypeError):
        search.get_results(0, 5, False)  # keyword-only


@pytest.mark.parametrize(
    "query", ["dictionary", "thread", "exception", "regular expression", "context manager"]
)
def test_include_snippets_pydoc(pydoc_zim, query):
    search = Searcher(pydoc_zim).search(query)
    plain = search.get_results(0, 15, include_snippets=False)
    rich = search.get_results(0, 15, include_snippets=True)
    assert len(plain) == 15
    key = lambda r: (r.path, r.title, r.score)  # noqa: E731
    assert [key(r) for r in plain] == [key(r) for r in rich]
    assert all(r.snippet == "" and r.word_count == -1 for r in plain)
    assert sum(bool(r.snippet) for r in rich) >= 12


# ---- geo -----------------------------------------------------------------------------


def _haversine_m(a, b) -> float:
    (lat1, lon1), (lat2, lon2) = a, b
    r = 6371008.8  # mean Earth radius; the distances below are far from any boundary
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(h))


@pytest.mark.parametrize("distance", [100.0, 3000.0, 500_000.0, 30_000_000.0])
@pytest.mark.parametrize("text", ["", "chronicle"])
def test_georange(searcher_a, text, distance):
    centre = GEO_A[12]  # Paris
    want = {PAGES_A[i].path for i, pos in GEO_A.items() if _haversine_m(centre, pos) <= distance}
    # Stay clear of boundaries, where Xapian's own distance metric could differ.
    for pos in GEO_A.values():
        d = _haversine_m(centre, pos)
        assert d == 0 or abs(d - distance) / distance > 0.05
    search = searcher_a.search(Query(text).set_georange(*centre, distance))
    assert set(paths(search.get_results(0, ALL))) == want
    assert search.get_estimated_matches() == len(want)


@pytest.mark.parametrize(
    "args",
    [
        (math.nan, 0.0, 10.0),
        (0.0, math.nan, 10.0),
        (0.0, 0.0, math.nan),
        (math.inf, 0.0, 10.0),
        (0.0, -math.inf, 10.0),
        (0.0, 0.0, math.inf),
        (90.5, 0.0, 10.0),
        (-91.0, 0.0, 10.0),
        (0.0, 180.5, 10.0),
        (0.0, -181.0, 10.0),
        (0.0, 0.0, -1.0),
    ],
)
def test_georange_rejects_bad_values(args):
    q = Query("x")
    with pytest.raises(ValueError):
        q.set_georange(*args)
    with pytest.raises(ValueError):
        q.setGeorange(*args)


def test_georange_type_errors():
    with pytest.raises(TypeError):
        Query("x").set_georange("1", 2, 3)
    with pytest.raises(TypeError):
        Query("x").set_georange(1, 2)


# ---- multiple archives ---------------------------------------------------------------


def _rows(searcher, query):
    return [(r.archive, r.path) for r in searcher.search(query).get_results(0, ALL)]


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_multi_archive_results_name_their_archive(zim_a, zim_b, order):
    archives = [zim_a, zim_b] if order == "ab" else [zim_b, zim_a]
    s = Searcher(archives)
    assert s.archives == tuple(archives)
    got = _rows(s, "plonkvar")
    want = {(zim_a, p) for p in pages_with(PAGES_A, "plonkvar")} | {
        (zim_b, p) for p in pages_with(PAGES_B, "plonkvar")
    }
    assert len(got) == len(want) == 5
    assert {(id(a), p) for a, p in got} == {(id(a), p) for a, p in want}
    for r in s.search("plonkvar").get_results(0, ALL):
        assert r.archive is zim_a or r.archive is zim_b
        entry = r.get_entry()
        assert entry.path == r.path
        assert r.archive.has_entry_by_path(r.path)
        table = PAGES_A if r.archive is zim_a else PAGES_B
        assert entry.title == r.title == page_by_path(table, r.path)[1].title
    # shared.html exists in both archives: only B's copy holds the word.
    [only] = s.search("sharedonly").get_results(0, ALL)
    assert only.path == "shared.html" and only.archive is zim_b
    assert only.get_entry().title == "Shared path in archive B"
    assert only.title == "Shared path in archive B"
    # Words of one archive only.
    assert {(id(a), p) for a, p in _rows(s, "brindlex")} == {
        (id(zim_b), p) for p in pages_with(PAGES_B, "brindlex")
    }
    assert {(id(a), p) for a, p in _rows(s, "frobnitz")} == {
        (id(zim_a), p) for p in pages_with(PAGES_A, "frobnitz")
    }


def test_multi_archive_from_any_iterable(zim_a, zim_b):
    for arg in (iter([zim_a, zim_b]), (zim_a, zim_b), (a for a in (zim_a, zim_b))):
        s = Searcher(arg)
        assert s.archives == (zim_a, zim_b)
        assert len(s.search("plonkvar").get_results(0, ALL)) == 5


def test_indexed_plus_unindexed(zim_a, zim_noindex, small_noindex):
    for archives in ([zim_noindex, zim_a], [zim_a, zim_noindex], [small_noindex, zim_a]):
        s = Searcher(archives)
        results = s.search("wumpkit").get_results(0, ALL)
        assert {r.path for r in results} == pages_with(PAGES_A, "wumpkit")
        assert all(r.archive is zim_a for r in results)
        assert all(r.get_entry().path == r.path for r in results)


def _one_line_error_naming(exc_info, *paths_):
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    for p in paths_:
        assert str(p) in msg, msg


def test_only_unindexed_raises_search_error(zim_noindex, zim_noindex_path, small_noindex):
    assert issubclass(libzim.SearchError, libzim.ZimError)
    assert issubclass(libzim.SearchError, RuntimeError)
    s = Searcher(zim_noindex)  # constructing is fine, searching is not
    with pytest.raises(libzim.SearchError) as ei:
        s.search("wumpkit")
    _one_line_error_naming(ei, zim_noindex_path)
    with pytest.raises(libzim.SearchError) as ei:
        Searcher(small_noindex).search(Query("test"))
    _one_line_error_naming(ei, SMALL_NOINDEX_ZIM)
    with pytest.raises(libzim.SearchError) as ei:
        Searcher([zim_noindex, small_noindex]).search("x")
    _one_line_error_naming(ei, zim_noindex_path, SMALL_NOINDEX_ZIM)
    with pytest.raises(RuntimeError):  # python-libzim raised RuntimeError here
        Searcher(small_noindex).search("x")


def test_add_archive_extends_results(zim_a, zim_b, zim_noindex):
    s = Searcher(zim_a)
    assert len(s.search("brindlex").get_results(0, ALL)) == 0
    before = s.search("plonkvar")
    assert s.add_archive(zim_b) is s
    assert s.archives == (zim_a, zim_b)
    got = s.search("brindlex").get_results(0, ALL)
    assert {r.path for r in got} == pages_with(PAGES_B, "brindlex")
    assert all(r.archive is zim_b for r in got)
    # A Search made before add_archive runs over the archives of the searcher.
    n_before = len(before.get_results(0, ALL))
    assert n_before in (2, 5)
    # 3.x alias; adding an unindexed archive changes nothing.
    assert s.addArchive(zim_noindex) is s
    assert len(s.archives) == 3
    assert len(s.search("plonkvar").get_results(0, ALL)) == 5
    # Searcher over an unindexed archive becomes searchable once an index is added.
    t = Searcher(zim_noindex)
    with pytest.raises(libzim.SearchError):
        t.search("wumpkit")
    t.add_archive(zim_a)
    assert {r.path for r in t.search("wumpkit").get_results(0, ALL)} == pages_with(
        PAGES_A, "wumpkit"
    )


# ---- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "   \t\n  ", "\u3000"])
def test_empty_and_blank_queries(searcher_a, text):
    for q in (text, Query(text)):
        search = searcher_a.search(q)
        assert len(search.get_results(0, 10)) == 0
        assert search.get_estimated_matches() == 0
        assert list(search.getResults(0, 10)) == []


def test_huge_query_is_a_clear_value_error(searcher_a):
    huge = "gleepnar " * (1 << 17)  # ~1.1 MB
    for q in (huge, Query(huge)):
        with pytest.raises(ValueError) as ei:
            searcher_a.search(q)
        assert "bytes" in str(ei.value) and "\n" not in str(ei.value)
    # The limit is 64 KiB of UTF-8, not of characters.
    with pytest.raises(ValueError):
        searcher_a.search("é" * (32 * 1024 + 1))


def test_query_at_the_size_limit_is_accepted(searcher_a):
    text = ("frobnitz " * 8000)[: 64 * 1024]
    assert len(text.encode()) == 64 * 1024
    search = searcher_a.search(text)
    # Same word repeated: same set as the word alone (or no results), never a crash.
    got = set(paths(search.get_results(0, ALL, include_snippets=False)))
    assert got in (pages_with(PAGES_A, "frobnitz"), set())
    with pytest.raises(ValueError):
        searcher_a.search(text + "x")


@pytest.mark.parametrize("text", ["gleep\ud800nar", "\udfff", "ok \udc80"])
def test_lone_surrogates(searcher_a, text):
    with pytest.raises(UnicodeEncodeError):
        searcher_a.search(text)
    with pytest.raises(UnicodeEncodeError):
        searcher_a.search(Query(text))


@pytest.mark.parametrize("text", ["\0", "gleepnar\0", "\0frobnitz", "a\0b"])
def test_nul_characters(searcher_a, text):
    with pytest.raises(ValueError) as ei:
        searcher_a.search(text)
    assert "NUL" in str(ei.value)
    with pytest.raises(ValueError):
        searcher_a.search(Query(text))


@pytest.mark.parametrize("start, count", [(-1, 10), (0, -1), (-1, -1), (-(2**63), 5), (0, -(2**70))])
def test_negative_start_count(searcher_a, start, count):
    search = searcher_a.search("gleepnar")
    with pytest.raises(ValueError):
        search.get_results(start, count)
    with pytest.raises(ValueError):
        search.get_results(start, count, include_snippets=False)
    with pytest.raises(ValueError):
        search.getResults(start, count)


def test_huge_start_count_are_clamped(searcher_a):
    search = searcher_a.search("gleepnar")
    want = pages_with(PAGES_A, "gleepnar")
    for count in (2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**100):
        assert set(paths(search.get_results(0, count))) == want
        assert set(search.getResults(0, count)) == want
        assert set(paths(search.get_results(3, count, include_snippets=False))) < want
    for start in (2**31 - 1, 2**31, 2**63, 2**100):
        for count in (1, 10, 2**31, 2**63):
            assert len(search.get_results(start, count)) == 0
            assert list(search.getResults(start, count)) == []


@pytest.mark.parametrize("bad", [1.0, "0", None, b"0", [0]])
def test_start_count_types(searcher_a, bad):
    search = searcher_a.search("gleepnar")
    with pytest.raises(TypeError):
        search.get_results(bad, 10)
    with pytest.raises(TypeError):
        search.get_results(0, bad)
    with pytest.raises(TypeError):
        search.getResults(bad, 10)


def test_wrong_arity(searcher_a):
    search = searcher_a.search("gleepnar")
    with pytest.raises(TypeError):
        search.get_results()
    with pytest.raises(TypeError):
        search.get_results(0)
    with pytest.raises(TypeError):
        search.get_results(0, 1, 2)
    with pytest.raises(TypeError):
        search.getResults(0)


XAPIAN_ODDITIES = [
    "AND", "OR", "NOT", "XOR", "NEAR", "ADJ", "AND OR NOT", '"unbalanced', 'unbalanced"', '"',
    '""', "*", "**", "gleep*", "title:foo", "title:", ":", "(", ")", "((gleepnar", "gleepnar)",
    "-", "+", "+-+-", "~", "~gleepnar", "-gleepnar", "+gleepnar", "gleepnar NEAR frobnitz",
    "gleepnar NEAR/3 frobnitz", "gleepnar ADJ/2 frobnitz", "gleepnar AND", "AND gleepnar",
    "NOT gleepnar", "gleepnar OR", "a..b", "1..10", "$", "\\", "'", "%", "#!", "&&", "||",
    "\u00e9t\u00e9", "\u65e5\u672c\u8a9e", "\U0001f600", "x" * 300, " ".join(["gleepnar"] * 500),
    "\u200b", "\ufeff", "\x01\x02", "\r\n",
]


@pytest.mark.parametrize("text", XAPIAN_ODDITIES)
def test_xapian_syntax_oddities(searcher_a, text):
    try:
        search = searcher_a.search(text)
        n = search.get_estimated_matches()
        results = search.get_results(0, 50)
        plain = search.get_results(0, 50, include_snippets=False)
    except libzim.SearchError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert n >= 0
    assert [r.path for r in results] == [r.path for r in plain]
    all_paths = {p.path for p in PAGES_A} | {"index.html"}
    assert {r.path for r in results} <= all_paths


def test_xapian_oddities_on_a_known_word(searcher_a):
    # Love/hate forms. libzim 9 turns Xapian's love/hate flag off: "-frobnitz" is
    # the word frobnitz, required like any other.
    assert set(paths(searcher_a.search("gleepnar -frobnitz").get_results(0, ALL))) == per_libzim(
        libzim8=pages_with(PAGES_A, "gleepnar") - pages_with(PAGES_A, "frobnitz"),
        libzim9=pages_with(PAGES_A, "gleepnar", "frobnitz"),
    )
    assert set(paths(searcher_a.search("+gleepnar +wumpkit").get_results(0, ALL))) == pages_with(
        PAGES_A, "gleepnar", "wumpkit"
    )


@pytest.mark.parametrize("bad", [None, 1, 1.5, b"gleepnar", bytearray(b"x"), ["gleepnar"], object()])
def test_search_type_errors(searcher_a, bad):
    with pytest.raises(TypeError):
        searcher_a.search(bad)


@pytest.mark.parametrize("bad", [None, 1, b"x", ["x"], object()])
def test_query_type_errors(bad):
    with pytest.raises(TypeError):
        Query(bad)
    with pytest.raises(TypeError):
        Query().set_query(bad)
    with pytest.raises(TypeError):
        Query().setQuery(bad)


@pytest.mark.parametrize("bad", [None, 1, "a.zim", b"a.zim", [1], [None], object()])
def test_searcher_type_errors(zim_a, bad):
    with pytest.raises(TypeError):
        Searcher(bad)
    with pytest.raises(TypeError):
        Searcher([zim_a, bad])
    s = Searcher(zim_a)
    with pytest.raises(TypeError):
        s.add_archive(bad)
    assert s.archives == (zim_a,)


def test_searcher_empty_iterable(zim_a):
    # No archive at all: either refused up front or SearchError on search, never a crash.
    try:
        s = Searcher([])
    except (TypeError, ValueError, libzim.ZimError):
        return
    with pytest.raises(libzim.SearchError):
        s.search("x")


def test_closed_archive(zim_a_path, zim_a):
    closed = Archive(zim_a_path)
    closed.close()
    with pytest.raises(libzim.ClosedError):
        Searcher(closed)
    with pytest.raises(libzim.ClosedError):
        Searcher([zim_a, closed])
    s = Searcher(zim_a)
    with pytest.raises(libzim.ClosedError):
        s.add_archive(closed)
    assert s.archives == (zim_a,)
    assert len(s.search("wumpkit").get_results(0, 10)) == 3


def test_archive_closed_after_searching(zim_a_path):
    a = Archive(zim_a_path)
    s = Searcher(a)
    search = s.search("wumpkit")
    first = search.get_results(0, 10)
    a.close()
    # Either the searcher keeps working or it reports the closed archive; never a crash.
    for call in (
        lambda: search.get_results(0, 10),
        lambda: s.search("frobnitz").get_results(0, 10),
        lambda: search.get_estimated_matches(),
    ):
        try:
            call()
        except libzim.ClosedError:
            pass
    with pytest.raises(libzim.ClosedError):
        first[0].get_entry()


def _html_entries(archive: Archive) -> dict[str, tuple[str, str, bytes]]:
    out = {}
    for i in range(archive.entry_count):
        e = archive._get_entry_by_id(i)
        item = e.get_item()
        if item.mimetype == "text/html":
            out[e.path] = (e.title, item.mimetype, bytes(item.content))
    return out


def test_writer_fixture_matches_zimwriterfs_build(zim_a, zim_a_zimwriterfs_path):
    """Archive A comes from libzim.writer; zimwriterfs (no shared code) builds
    the same HTML. Same pages, titles and bytes; same hits, scores, word counts
    and snippets. Only the order among equal scores may differ (Xapian breaks
    ties by document id, i.e. by indexing order), and zimwriterfs also stores
    the illustration PNG as a content entry."""
    other = Archive(zim_a_zimwriterfs_path)
    try:
        assert _html_entries(zim_a) == _html_entries(other)
        assert zim_a.main_entry.get_item().path == other.main_entry.get_item().path
        for words in SMALL_QUERIES:
            got = [Searcher(a).search(Query().set_query(words)) for a in (zim_a, other)]
            rows = [sorted(result_rows(s.get_results(0, ALL, include_snippets=True))) for s in got]
            assert rows[0] == rows[1], words
            # Not vacuous: every query finds pages of A, except where libzim 9
            # reads AND and NOT as words, which no page of A holds.
            empty = per_libzim(libzim8=False, libzim9=words == "gleepnar AND NOT frobnitz")
            assert bool(rows[0]) != empty, words
            assert got[0].getEstimatedMatches() == got[1].getEstimatedMatches(), words
        for prefix in ("chron", "the", "zorb", "entry", "search", "shared"):
            got = [list(SuggestionSearcher(a).suggest(prefix).getResults(0, ALL)) for a in (zim_a, other)]
            assert got[0] == got[1], prefix
    finally:
        other.close()


# ---- the snippet engine's text cache ------------------------------------------------------


def _snippet_rows(searcher, queries):
    return [(q, r.path, r.snippet) for q in queries
            for r in searcher.search(q).get_results(0, ALL)]


def test_cached_text_gives_the_same_snippets(zim_a, searcher_a):
    # A hit's first snippet scans its HTML (and records the text); a later
    # one replays the recorded text: both must equal the engine run on the
    # article's HTML directly (the _snippet hook, no archive, no cache).
    first = _snippet_rows(searcher_a, SNIPPET_QUERIES)
    again = _snippet_rows(searcher_a, SNIPPET_QUERIES)
    assert first == again
    assert any(s for _q, _p, s in first)
    for q, path, s in first:
        html = bytes(zim_a.get_entry_by_path(path).get_item().content)
        assert _libzim._snippet(html, q, "eng") == s, (q, path)


def test_cached_text_across_threads_matches_one_thread(searcher_a):
    want = _snippet_rows(searcher_a, SNIPPET_QUERIES)
    got: list[list] = [[] for _ in range(4)]

    def work(i):
        def run():
            for _ in range(3):
                got[i].append(_snippet_rows(searcher_a, SNIPPET_QUERIES[i::2] + SNIPPET_QUERIES))
        return run

    run_threads([work(i) for i in range(4)])
    for i in range(4):
        expect = _snippet_rows(searcher_a, SNIPPET_QUERIES[i::2] + SNIPPET_QUERIES)
        assert got[i] == [expect] * 3
    assert want == _snippet_rows(searcher_a, SNIPPET_QUERIES)
