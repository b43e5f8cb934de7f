"""Type-ahead suggestions: ``SuggestionSearcher.suggest(query, mode="titles" | "auto")``.

Expected results are computed here from the titles the test wrote (sorted by
their UTF-8 bytes, as libzim's title listing is, and filtered by the case
variants spelled out by hand below), not read back through the binding.  The
complexity test counts the dirents libzim reads (its dirent cache) on archives
of two sizes: a binary search reads O(log entries), whatever the prefix matches.
"""
from __future__ import annotations

import html
import pickle
import zlib

import pytest

from libzim import writer
from libzim.reader import Archive
from libzim.suggestion import SuggestionSearcher
from libzim import _libzim
from writer_support import TextItem

# 120 titles start with "alpha" in some case: over ZS_SUGGEST_AUTO_TITLES (100).
ALPHAS = [f"Alpha {i:03d}" for i in range(117)] + ["alpha lower", "ALPHA CAPS", "Alpha & <Omega>"]
OTHERS = ["Éclair", "éclair au chocolat", "Zeta beta", "United States", "united nations",
          "Gamma ray"]
REDIRECTS = {"alphabet_soup": ("Alphabet soup", "alpha_000")}  # a front-article redirect
TITLES = ALPHAS + OTHERS + [t for t, _ in REDIRECTS.values()]


def _path(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()) + f"_{zlib.crc32(title.encode())}"


PATHS = {t: _path(t) for t in ALPHAS + OTHERS}
PATHS["Alpha 000"] = "alpha_000"


def write(path, titles, *, indexing=True, resources=True):
    with writer.Creator(str(path)).config_indexing(indexing, "eng") as c:
        c.set_mainpath(PATHS.get(titles[0], _path(titles[0])))
        for t in titles:
            p = PATHS.get(t, _path(t))
            c.add_item(TextItem(p, t, f"<html><head><title>{html.escape(t)}</title></head>"
                                      f"<body><p>{html.escape(t)} text</p></body></html>"))
        if resources:
            # Not a front article: never suggested, though its title starts with "alpha".
            c.add_item(TextItem("alpha.css", "alpha.css", "p{}", "text/css",
                                {writer.Hint.FRONT_ARTICLE: False}))
            for p, (t, target) in REDIRECTS.items():
                c.add_redirection(p, t, target, {writer.Hint.FRONT_ARTICLE: True})
    return path


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    with Archive(write(tmp_path_factory.mktemp("titles") / "t.zim", ALPHAS + OTHERS)) as a:
        yield a


@pytest.fixture(scope="module")
def suggester(archive):
    return SuggestionSearcher(archive)


def expected(prefix: str, variants: list[str]) -> list[str]:
    """Every title starting with a variant, variant by variant, each in byte order."""
    by_bytes = sorted(TITLES, key=lambda t: t.encode())
    out: list[str] = []
    for v in variants:
        out += [t for t in by_bytes if t.startswith(v) and t not in out]
    return out


# (typed, the variants in the documented order: as typed, first letter
# capitalised, every word's, the capitalised lower case, lower, upper)
CASES = [
    ("alpha", ["alpha", "Alpha", "ALPHA"]),
    ("ALPHA", ["ALPHA", "Alpha", "alpha"]),
    ("alpha ", ["alpha ", "Alpha ", "ALPHA "]),
    ("  alpha 00", ["alpha 00", "Alpha 00", "ALPHA 00"]),
    ("éc", ["éc", "Éc", "ÉC"]),
    ("united st", ["united st", "United st", "United St", "UNITED ST"]),
    ("zeta", ["zeta", "Zeta", "ZETA"]),
    ("Alpha &", ["Alpha &", "alpha &", "ALPHA &"]),
]


@pytest.mark.parametrize("typed,variants", CASES)
def test_titles_mode_lists_the_titles_that_start_with_a_variant(suggester, typed, variants):
    s = suggester.suggest(typed, mode="titles")
    want = expected(typed, variants)
    assert s.get_estimated_matches() == len(want)
    assert [r.title for r in s.get_results(0, 1000)] == want
    assert "alpha.css" not in [r.title for r in s.get_results(0, 1000)]


def test_titles_mode_pages_are_slices_of_one_list(suggester):
    s = suggester.suggest("alpha", mode="titles")
    whole = [r.path for r in s.get_results(0, 1000)]
    assert len(whole) == 120 + 1  # ALPHAS and the redirect "Alphabet soup"
    for start, count in [(0, 10), (5, 7), (115, 10), (119, 3), (121, 5), (500, 5), (3, 0)]:
        assert [r.path for r in s.get_results(start, count)] == whole[start:start + count]
    assert list(s.getResults(2, 3)) == whole[2:5]


def test_titles_mode_results(suggester, archive):
    (r,) = suggester.suggest("Alpha &", mode="titles").get_results(0, 10)
    assert r.title == "Alpha & <Omega>"
    assert r.snippet == "<b>Alpha &amp;</b> &lt;Omega&gt;"
    assert archive.get_entry_by_path(r.path).title == r.title
    (red,) = [x for x in suggester.suggest("alphab", mode="titles").get_results(0, 10)]
    assert (red.title, red.path) == ("Alphabet soup", "alphabet_soup")
    assert archive.get_entry_by_path(red.path).is_redirect


def test_titles_mode_nothing(suggester):
    for q in ["", "   ", "nothing starts so", "\uffff"]:
        s = suggester.suggest(q, mode="titles")
        assert s.get_estimated_matches() == 0
        assert len(s.get_results(0, 10)) == 0


def test_auto_mode_takes_titles_only_for_common_prefixes(suggester):
    # 121 titles start with "alph": type-ahead, in title order.
    auto = [r.title for r in suggester.suggest("alph", mode="auto").get_results(0, 200)]
    assert auto == expected("alph", ["alph", "Alph", "ALPH"])
    # No title starts with "beta": the index, which matches words inside titles.
    for q in ["beta", "ray"]:
        got = [r.title for r in suggester.suggest(q, mode="auto").get_results(0, 10)]
        assert got == [r.title for r in suggester.suggest(q).get_results(0, 10)]
    assert [r.title for r in suggester.suggest("beta", mode="auto").get_results(0, 10)] == ["Zeta beta"]


def test_index_mode_is_the_default_and_unchanged(suggester):
    a = [(r.path, r.title, r.snippet) for r in suggester.suggest("alpha").get_results(0, 200)]
    b = [(r.path, r.title, r.snippet) for r in suggester.suggest("alpha", mode="index").get_results(0, 200)]
    assert a == b
    # Every title with a word starting "alpha"; the redirect "Alphabet soup"
    # collapses onto its target "Alpha 000" (libzim collapses on the target).
    assert sorted(t for _, t, _ in a) == sorted(ALPHAS)
    assert [r.title for r in suggester.suggest("ray").get_results(0, 10)] == ["Gamma ray"]


def test_bad_mode(suggester):
    for bad in ["prefix", "", "TITLES", 1, None]:
        with pytest.raises(ValueError, match="mode must be"):
            suggester.suggest("alpha", mode=bad)
    with pytest.raises(TypeError):
        suggester.suggest("alpha", "titles")  # keyword-only


def test_pickles_with_its_mode(suggester):
    for mode in ["index", "titles", "auto"]:
        s = suggester.suggest("alp", mode=mode)
        back = pickle.loads(pickle.dumps(s))
        assert [r.path for r in back.get_results(0, 50)] == [r.path for r in s.get_results(0, 50)]
    assert suggester.suggest("alp")._state[2] is None
    assert suggester.suggest("alp", mode="titles")._state[2] == "titles"


def test_titles_mode_without_a_title_index(tmp_path):
    with Archive(write(tmp_path / "n.zim", OTHERS, indexing=False, resources=False)) as a:
        s = SuggestionSearcher(a)
        assert [r.title for r in s.suggest("éc", mode="titles").get_results(0, 10)] == \
            ["éclair au chocolat", "Éclair"]


def probes(path, prefix: str) -> int:
    """Titles the type-ahead reads for one page of 10 (its binary searches)."""
    with Archive(path) as a:
        s = SuggestionSearcher(a)
        before = _libzim._title_probes()
        assert len(s.suggest(prefix, mode="titles").get_results(0, 10)) == 10
        return _libzim._title_probes() - before


def test_type_ahead_reads_log_entries_not_the_matches(tmp_path):
    # Every title starts with "Alpha": the index would score them all; the
    # binary searches read about log2(entries) titles per variant and search.
    small = write(tmp_path / "s.zim", [f"Alpha {i:05d}" for i in range(256)], indexing=False, resources=False)
    big = write(tmp_path / "b.zim", [f"Alpha {i:05d}" for i in range(4096)], indexing=False, resources=False)
    n_small, n_big = probes(small, "alph"), probes(big, "alph")
    # 3 variants x 2 searches x (log2(4096) + 1 = 13): well under the 4,096 matched.
    assert 0 < n_big <= 3 * 2 * 13, n_big
    # 16x the entries: at most 3 x 2 x 4 (= log2 16) more probes, not 16x.
    assert n_big - n_small <= 3 * 2 * 4, (n_small, n_big)


@pytest.mark.suite_data
def test_wikibooks_type_ahead_matches_its_title_list():
    # Belarusian titles: the variants are Cyrillic case pairs ("кав" / "Кав" / "КАВ").
    from conftest import SUITE

    with Archive(SUITE / "nons" / "wikibooks_be_all_nopic_2017-02.zim") as a:
        titles = [e.title for e in a.iter_by_title()]
        s = SuggestionSearcher(a)
        for typed, variants in [("кав", ["кав", "Кав", "КАВ"]), ("К", ["К", "к"]), ("ка", ["ка", "Ка", "КА"])]:
            want = [t for v in variants for t in titles if t.startswith(v)]
            assert want, typed
            got = s.suggest(typed, mode="titles")
            assert [r.title for r in got.get_results(0, 10_000)] == want
            assert got.get_estimated_matches() == len(want)


@pytest.mark.suite_data
@pytest.mark.parametrize("scheme,path", [("nons", "main.html"), ("withns", "A/main.html")])
def test_small_archives_both_namespace_schemes(scheme, path):
    # withns has no front-article listing: libzim's findByTitle answers (no probes).
    from conftest import SUITE

    with Archive(SUITE / scheme / "small.zim") as a:
        before = _libzim._title_probes()
        (r,) = SuggestionSearcher(a).suggest("test z", mode="titles").get_results(0, 10)
        assert (r.path, r.title, r.snippet) == (path, "Test ZIM file", "<b>Test Z</b>IM file")
        assert (_libzim._title_probes() > before) == (scheme == "nons")


def test_threads_share_one_searcher(suggester):
    # 8 threads on one SuggestionSearcher, every mode: the single-threaded answers.
    from concurrent.futures import ThreadPoolExecutor

    queries = [(q, m) for q in ["a", "alpha 0", "Alpha 1", "éc", "united", "zeta", "beta", "nothing"]
               for m in ("titles", "auto", "index")]

    def run(qm):
        q, m = qm
        s = suggester.suggest(q, mode=m)
        return s.get_estimated_matches(), [(r.path, r.title, r.snippet) for r in s.get_results(0, 20)]

    alone = [run(qm) for qm in queries]
    with ThreadPoolExecutor(8) as ex:
        for _ in range(5):
            assert list(ex.map(run, queries)) == alone
