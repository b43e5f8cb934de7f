"""libzim-c's snippet engine on hand-written HTML: exact snippets.

The engine is reached through the testing hook
`libzim._libzim._snippet(html, query, language)`, which runs the same code as
a search page does for each hit (zimshim_snippet.cpp).
"""

from __future__ import annotations

import pytest

from libzim import _libzim


def snip(html: str | bytes, query: str, language: str = "eng") -> str:
    data = html.encode("utf-8") if isinstance(html, str) else html
    return _libzim._snippet(data, query, language)


# ---- what is visible ------------------------------------------------------------------


BOILERPLATE = """<!DOCTYPE html>
<html><head><title>Zebra facts</title>
<meta name="description" content="zebra">
<style>.zebra { color: red }</style>
<script>var zebra = "<p>zebra</p>";</script></head>
<body>
<nav>zebra menu</nav>
<header><h1>Zebra header</h1></header>
<div class="sphinxsidebar" role="navigation"><ul><li>zebra sidebar</li></ul></div>
<div role="banner">zebra banner</div>
<aside>zebra aside</aside>
<div hidden>zebra hidden</div>
<div aria-hidden="true">zebra aria</div>
<div style="display: none">zebra invisible</div>
<p>The <em>zebra</em> runs.<a class="headerlink" href="#x">\u00b6</a></p>
<!-- zebra comment -->
<noscript>zebra noscript</noscript>
<form><button>zebra button</button></form>
<footer>zebra footer</footer>
<div class="footer">zebra div footer</div>
</body></html>"""


def test_boilerplate_is_skipped():
    assert snip(BOILERPLATE, "zebra") == "The <b>zebra</b> runs."


def test_nested_boilerplate_of_the_same_tag():
    html = "<div role='navigation'><div>a zebra</div><div>b</div></div><div>zebra c</div>"
    assert snip(html, "zebra") == "<b>zebra</b> c"


def test_unclosed_head_ends_at_body():
    assert snip("<head><title>zebra</title><body><p>zebra two", "zebra") == "<b>zebra</b> two"


def test_blocks_separate_words_inline_elements_do_not():
    html = "<p>ze<b>bra</b></p><p>zebra</p><li>one</li><li>two</li>x<br>y"
    assert snip(html, "zebra") == "<b>zebra</b> <b>zebra</b> one two x y"


def test_whitespace_collapses():
    assert snip("<p>  a\n\n\tzebra \u00a0 b  </p>", "zebra") == "a <b>zebra</b> b"


# ---- entities and escaping ---------------------------------------------------------------


def test_entities_decoded_and_output_escaped():
    html = (
        "<p>Fish &amp; chips &lt;b&gt; &eacute;t&eacute; &#233; &#x1F600; &#150; "
        "&bogus; &copy 2024 &#0; &#xD800; &#99999999; AT&T zebra</p>"
    )
    assert snip(html, "zebra") == (
        "Fish &amp; chips &lt;b&gt; \u00e9t\u00e9 \u00e9 \U0001f600 \u2013 &amp;bogus; "
        "\u00a9 2024 \ufffd \ufffd \ufffd AT&amp;T <b>zebra</b>"
    )


def test_entity_inside_a_word():
    assert snip("<p>caf&eacute;s and more</p>", "cafe", "fra") == "<b>caf\u00e9s</b> and more"


def test_literal_angle_brackets_in_text():
    assert snip("<p>a < b and c > d zebra</p>", "zebra") == "a &lt; b and c &gt; d <b>zebra</b>"


# ---- words and terms -------------------------------------------------------------------


def test_inflected_forms_match_the_stem():
    # libzim's snippet misses these: it looks up "Z"-prefixed stems.
    html = "<p>Loops and looping: a loop looped.</p>"
    assert snip(html, "loop") == "<b>Loops</b> and <b>looping</b>: a <b>loop</b> <b>looped</b>."


def test_query_inflection_matches_text():
    assert snip("<p>one event loop</p>", "events loops") == "one <b>event</b> <b>loop</b>"


def test_accents_are_removed_both_ways():
    assert snip("<p>Un Caf\u00e9 ici</p>", "cafe", "fra") == "Un <b>Caf\u00e9</b> ici"
    assert snip("<p>Un cafe ici</p>", "caf\u00e9", "fra") == "Un <b>cafe</b> ici"


def test_stop_words_and_unrelated_words_stay_plain():
    assert snip("<p>Zebras zebra-like zebu</p>", "zebra") == "<b>Zebras</b> <b>zebra</b>-like zebu"


def test_acronyms_infixes_and_suffixes_are_one_word():
    html = "<p>The U.S.A. and AT&amp;T use C++ and don't</p>"
    assert snip(html, "usa") == "The <b>U.S.A.</b> and AT&amp;T use C++ and don't"
    assert snip(html, "c++") == "The U.S.A. and AT&amp;T use <b>C++</b> and don't"
    assert snip(html, "at&t") == "The U.S.A. and <b>AT&amp;T</b> use C++ and don't"
    assert snip(html, "don't") == "The U.S.A. and AT&amp;T use C++ and <b>don't</b>"


def test_no_language_means_no_stemming():
    assert snip("<p>loops loop</p>", "loop", "") == "loops <b>loop</b>"


def test_multi_byte_text():
    html = "<p>\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430. \u0412 \u041c\u043e\u0441\u043a\u0432\u0435 \u0445\u043e\u0440\u043e\u0448\u043e.</p>"
    assert snip(html, "\u043c\u043e\u0441\u043a\u0432\u0430", "rus") == (
        "<b>\u041c\u043e\u0441\u043a\u0432\u0430</b> \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430. "
        "\u0412 <b>\u041c\u043e\u0441\u043a\u0432\u0435</b> \u0445\u043e\u0440\u043e\u0448\u043e."
    )
    assert snip("<p>\u65e5\u672c\u8a9e \u30c6\u30ad\u30b9\u30c8 zebra</p>", "zebra") == (
        "\u65e5\u672c\u8a9e \u30c6\u30ad\u30b9\u30c8 <b>zebra</b>"
    )


def test_invalid_utf8_becomes_replacement_characters():
    assert snip(b"<p>a\xff\xfeb \xe2\x82 zebra \xc3</p>", "zebra") == "a\ufffd\ufffdb \ufffd\ufffd <b>zebra</b> \ufffd"


# ---- the window --------------------------------------------------------------------------

FILLER = " ".join(f"w{i}" for i in range(400))  # 2289 bytes of words that match nothing


def test_no_term_gives_the_start_of_the_text():
    out = snip(f"<p>{FILLER}</p>", "zebra")
    assert out.endswith("...") and FILLER.startswith(out[:-3])
    assert 480 <= len(out) - 3 <= 500 and not out[:-3].endswith(" ")
    assert snip("<p>short text</p>", "zebra") == "short text"


def test_term_at_the_very_start():
    out = snip(f"<p>zebra {FILLER}</p>", "zebra")
    assert out.startswith("<b>zebra</b> w0 w1 ") and out.endswith("...")


def test_term_at_the_very_end():
    out = snip(f"<p>{FILLER} zebra</p>", "zebra")
    assert out.startswith("...") and out.endswith(" w398 w399 <b>zebra</b>")
    text = out[3:].replace("<b>", "").replace("</b>", "")
    assert 450 <= len(text) <= 500


def test_window_with_more_distinct_terms_wins_over_earlier():
    html = f"<p>lion {FILLER} tiger {FILLER} lion tiger {FILLER}</p>"
    out = snip(html, "lion tiger")
    assert "<b>lion</b> <b>tiger</b>" in out
    assert out.count("<b>") == 2


def test_earliest_of_equal_windows():
    html = f"<p>{FILLER} zebra one {FILLER} zebra two {FILLER}</p>"
    out = snip(html, "zebra")
    assert "<b>zebra</b> one" in out and "two" not in out


def test_sentence_start_is_preferred():
    html = f"<p>{FILLER}. Zebras are striped and zebra foals follow. {FILLER}</p>"
    out = snip(html, "zebra")
    assert out.startswith("...<b>Zebras</b> are striped and <b>zebra</b> foals follow. w0 w1 ")
    assert out.endswith("...")


def test_context_before_a_term_in_running_text():
    out = snip(f"<p>{FILLER} zebra {FILLER}</p>", "zebra")
    before = out[3 : out.index("<b>")]
    assert out.startswith("...w3") and 100 <= len(before) <= 130, out
    assert out.endswith("...")


def test_empty_and_textless_articles():
    assert snip("", "zebra") == ""
    assert snip("<html><head><title>t</title></head><body> \n </body></html>", "zebra") == ""
    assert snip("<p>zebra</p>", "") == "zebra"


def test_huge_article():
    html = "<p>" + (FILLER + "\n") * 4500 + "the zebra at the end</p>"  # ~10 MB
    out = snip(html, "zebra")
    assert out.startswith("...") and out.endswith("the <b>zebra</b> at the end")


def test_early_stop_does_not_change_the_snippet():
    # Once a window holds every term the rest is not read: what follows
    # must not matter, however broken.
    head = f"<p>lion tiger {FILLER}</p>"
    assert snip(head + "<p>" + "x" * 100000, "lion tiger") == snip(head, "lion tiger")


# ---- broken HTML -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "html, expected",
    [
        ("<p>zebra <b>bold", "<b>zebra</b> bold"),
        ("<p>zebra <!-- never closed", "<b>zebra</b>"),
        ("<p>zebra <a href='x>y", "<b>zebra</b>"),
        ("<p>zebra </> <//p> <!x> <?php x ?> end", "<b>zebra</b> end"),
        ("<script>zebra", ""),
        ("<p>zebra</p></script></nav></div>tail", "<b>zebra</b> tail"),
        ("<p>zebra <", "<b>zebra</b> &lt;"),
        ("<p>zebra &", "<b>zebra</b> &amp;"),
        ("<p>zebra &#x", "<b>zebra</b> &amp;#x"),
        ("<p \x00 zebra>x</p>zebra", "x <b>zebra</b>"),
        ("\x00\x01zebra\x7f\x9f", "<b>zebra</b>"),
    ],
)
def test_broken_html(html, expected):
    assert snip(html, "zebra") == expected


# ---- in searches -------------------------------------------------------------------------

from libzim.search import Searcher  # noqa: E402
from search_fixtures import zim_a, zim_a_path  # noqa: E402,F401

ALL = 1000


@pytest.fixture(scope="module")
def searcher_a(zim_a):
    return Searcher(zim_a)


def test_engine_option(searcher_a):
    search = searcher_a.search("lighthouse")
    ours = search.get_results(0, ALL)
    assert [r.snippet for r in ours] == [r.snippet for r in search.get_results(0, ALL, snippet_engine="libzim-c")]
    theirs = search.get_results(0, ALL, snippet_engine="libzim")
    assert len(ours) > 0
    assert [(r.path, r.title, r.score, r.word_count) for r in ours] == [
        (r.path, r.title, r.score, r.word_count) for r in theirs
    ]
    # libzim's getSnippet() looks for "Z"-prefixed stems, which libzim's index
    # lacks: a word that differs from its stem ("lighthous") is never marked.
    assert all("<b>" in r.snippet.lower() for r in ours)
    assert not any("<b>" in r.snippet.lower() for r in theirs)
    assert all(r.word_count > 0 for r in ours)
    for bad in ("xapian", "", "LIBZIM", 1, None):
        with pytest.raises(ValueError if isinstance(bad, str) else (ValueError, TypeError)):
            search.get_results(0, 1, snippet_engine=bad)


# ---- properties over random and hostile HTML ------------------------------------------------

import html as html_lib  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402

from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

WORDS = ["zebra", "zebras", "lion", "tiger", "striped", "run", "running", "caf\u00e9", "na\u00efve",
         "\u041c\u043e\u0441\u043a\u0432\u0430", "\u65e5\u672c", "U.S.A.", "C++", "AT&T", "don't"]
TAGS = ["p", "div", "span", "b", "a", "script", "style", "nav", "header", "footer", "head", "body",
        "li", "table", "td", "br", "img", "noscript", "svg", "title", "textarea", "select"]
ATTRS = ['class="footer"', 'role="navigation"', "hidden", 'aria-hidden="true"', 'style="display:none"',
         'class="x y"', "href='a>b'", 'title="<p>"', "data-x=unquoted", '"', "'", "="]
PIECES = st.one_of(
    st.sampled_from(WORDS),
    st.text(max_size=12),
    st.sampled_from(["&amp;", "&lt;", "&#233;", "&#x1F600;", "&#0;", "&#xD800;", "&nbsp;", "&bogus;", "&",
                     "&#", "&#x", "&copy", "<", ">", "</", "<!--", "-->", "<!", "<?", "\u00a0", " ", "\n"]),
    st.builds(lambda t, a, close: f"<{t} {a}>" if not close else f"</{t}>",
              st.sampled_from(TAGS), st.sampled_from(ATTRS), st.booleans()),
)
HTML = st.lists(PIECES, max_size=60).map("".join)
QUERY = st.lists(st.sampled_from(WORDS + ["nothing", ""]), min_size=0, max_size=3).map(" ".join)
# Byte-level garbage too: invalid UTF-8, NULs, lone continuation bytes.
RAW = st.one_of(HTML.map(lambda s: s.encode("utf-8")), st.binary(max_size=300),
                st.tuples(HTML, st.binary(max_size=20), HTML).map(lambda t: t[0].encode() + t[1] + t[2].encode()))

LENGTH = 500


def check_shape(out: str) -> None:
    # Valid UTF-8 (the hook decodes strictly), only <b>/</b> as markup, every
    # '&' an escape, the text within the length.
    assert isinstance(out, str)
    assert "\ufffe" not in out and all(c >= " " for c in out)
    markup = re.findall(r"<[^>]*>?", out)
    assert all(m in ("<b>", "</b>") for m in markup), out
    assert ">" not in re.sub(r"</?b>", "", out)
    assert not re.search(r"&(?!amp;|lt;|gt;)", out), out
    assert out.count("<b>") == out.count("</b>")
    assert "<b></b>" not in out and "<b><b>" not in out
    text = html_lib.unescape(re.sub(r"</?b>", "", out))
    body = text.removeprefix("...").removesuffix("...")
    assert len(body.encode("utf-8")) <= LENGTH, len(body.encode())
    # Not body == body.strip(): the article's own text may end in "..." after
    # a space ("!\x00..." gives "! ..."), which is not a cut mark.
    assert text == text.strip()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RAW, QUERY, st.sampled_from(["eng", "fra", "rus", "", "xx", "deu"]))
@example(b"!\x00...", "", "eng")  # text ending in its own "...", found by hypothesis
def test_random_html_gives_well_formed_snippets(data, query, language):
    check_shape(snip(data, query, language))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(WORDS + ["filler"] * 10), min_size=100, max_size=400), QUERY)
def test_long_random_text_is_bounded(words, query):
    out = snip("<p>" + " ".join(words) + "</p>", query)
    check_shape(out)


# ---- highlighting agrees with the stemmer -----------------------------------------------------

import unicodedata  # noqa: E402

import subprocess  # noqa: E402

import snowballstemmer  # noqa: E402

FAMILIES = {
    "english": [
        "connect connected connecting connection connections connective connects",
        "run runs running runner ran",
        "happy happiness happily happier",
        "generous generously generosity",
        "die dies died dying",
        "sky skies ski skis",
        "loop loops looping looped",
        "argue argued argues arguing argument arguments",
        "fly flies flying flight",
        "nation national nationality nations nationally",
        "organize organization organizing organized organizer",
        "relate relational relation relations relative relatively",
        "index indexes indices indexing indexed",
        "process processes processing processor processed",
        "easy easily easier",
        "news",
        "cat cats catalog catalogue",
    ],
    "french": [
        "\u00e9l\u00e8ve \u00e9l\u00e8ves eleve \u00e9lever",
        "cha\u00eene cha\u00eenes chaine",
        "ind\u00e9pendant ind\u00e9pendante ind\u00e9pendance ind\u00e9pendamment",
        "continu continue continuer continuellement continuation",
        "for\u00eat for\u00eats foret",
    ],
}
LANG_CODE = {"english": "eng", "french": "fra"}


def xapian_version() -> str:
    """Upstream version of the installed Xapian library (Debian's libxapian30).
    libzim.version names the one libzim was built against (1.4.25 for Debian 13's
    libzim 9.2.3), not the one it runs with (1.4.29); Xapian's own version_string()
    is inline, compiled into the caller."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libxapian30"],
                         capture_output=True, text=True, check=True).stdout
    return re.sub(r"^\d+:", "", out).split("-")[0]


# The engine stems with Xapian, whose English stemmer changed between Debian 12's
# Xapian 1.4.22 and Debian 13's 1.4.29 (measured: "skis" -> "ski" on 1.4.22, "skis"
# on 1.4.29); snowballstemmer keeps the older rule. Words whose stem a measured Xapian
# release gives differently, per language:
XAPIAN_STEMS = {"1.4.29": {"english": {"skis": "skis"}}}


def fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@pytest.mark.parametrize("language", sorted(FAMILIES))
def test_highlighting_agrees_with_the_stemmer(language):
    # An independent implementation of the same Snowball algorithms decides
    # which words share a stem; the engine must highlight exactly those.
    snowball = snowballstemmer.stemmer(language).stemWord
    differs = XAPIAN_STEMS.get(xapian_version(), {}).get(language, {})

    def stem(word: str) -> str:
        return differs.get(word) or snowball(word)

    words = [w for family in FAMILIES[language] for w in family.split()]
    text = " ".join(words)
    disagreements = []
    for query in words:
        out = snip(f"<p>{text}</p>", query, LANG_CODE[language])
        marked = re.findall(r"<b>(.*?)</b>", out)
        want = [w for w in words if stem(fold(w)) == stem(fold(query))]
        if marked != want:
            disagreements.append((query, marked, want))
    assert not disagreements


# ---- threads ------------------------------------------------------------------------------------


def test_four_threads_give_the_single_threaded_snippets():
    import random

    rng = random.Random(10)
    cases = [(BOILERPLATE, "zebra", "eng"), (f"<p>{FILLER} zebra {FILLER}</p>", "zebra", "eng")]
    for i in range(60):
        words = [rng.choice(WORDS + ["filler"] * 8) for _ in range(rng.randrange(50, 600))]
        html = "".join(f"<{rng.choice(TAGS)}>{w} " if rng.random() < 0.2 else f"{w} " for w in words)
        cases.append((html, " ".join(rng.sample(WORDS, rng.randrange(1, 3))), rng.choice(["eng", "fra", "rus", ""])))
    want = [snip(*c) for c in cases]
    assert sum("<b>" in w for w in want) > len(cases) // 3  # the reference is meaningful
    got: dict[int, list[str]] = {}

    def worker(k: int) -> None:
        order = list(range(len(cases)))
        random.Random(k).shuffle(order)
        out = [""] * len(cases)
        for _ in range(3):
            for i in order:
                out[i] = snip(*cases[i])
        got[k] = out

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[k] == want for k in range(4))


# ---- cluster cache default ----------------------------------------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402

from conftest import child_python  # noqa: E402


@pytest.mark.parametrize("user_value, expected", [(None, "32"), ("5", "5"), ("16", "16")])
def test_cluster_cache_default_never_overrides_the_user(user_value, expected):
    kw = child_python()
    kw["env"].pop("ZIM_CLUSTERCACHE", None)
    if user_value is not None:
        kw["env"]["ZIM_CLUSTERCACHE"] = user_value
    code = "import os, libzim.reader; print(os.environ.get('ZIM_CLUSTERCACHE'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, **kw)
    assert out.stdout.strip() == expected
