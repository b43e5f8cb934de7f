"""Archives and expectations for the search / suggestion tests.

Every expected result set below is derived from the HTML this module writes
(the ``PAGES_A`` / ``PAGES_B`` tables), never from running the code under
test.  The words used as search terms are made-up tokens that no English
stemmer changes and that appear nowhere else (not in the welcome pages, not
in link texts), so "which pages contain word W" is known exactly.

Import the fixtures into a test module with::

    from search_fixtures import *  # noqa: F401,F403

Archive A (indexed and not) is written with our own ``libzim.writer``;
archive B and the python3-doc archive are built by zimwriterfs, and a second
copy of A built by zimwriterfs is compared with ours in test_search.py: the
independent cross-check of the writer.

The archives are built once per test session (a module-level cache keeps the
test modules that import these fixtures from building them twice).
"""

from __future__ import annotations

import datetime
import html as _html
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from corpus import build_zim_from_dir, ensure_debian_doc_zim, write_png
from libzim import writer
from libzim.reader import Archive

import local_archives
from conftest import SUITE

__all__ = [
    "Page",
    "PAGES_A",
    "PAGES_B",
    "MARKERS_A",
    "MARKERS_B",
    "SUITE",
    "WIKIBOOKS_ZIM",
    "SMALL_NOINDEX_ZIM",
    "LOCAL_MULTI_ZIM",
    "PYDOC_QUERIES",
    "SMALL_QUERIES",
    "pages_with",
    "pages_with_any",
    "page_words",
    "page_text",
    "page_by_path",
    "GEO_A",
    "TOPIC_WORDS",
    "result_rows",
    "zim_a_path",
    "zim_a_zimwriterfs_path",
    "zim_b_path",
    "zim_noindex_path",
    "pydoc_zim_path",
    "zim_a",
    "zim_b",
    "zim_noindex",
    "pydoc_zim",
    "small_noindex",
]

WIKIBOOKS_ZIM = SUITE / "nons" / "wikibooks_be_all_nopic_2017-02.zim"
# The multi-cluster archive built from this repository (Cyrillic titles, redirects, no full-text index).
LOCAL_MULTI_ZIM = local_archives.local().multi.path
SMALL_NOINDEX_ZIM = local_archives.local().small.path  # has no full-text index


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    words: tuple[str, ...]  # marker words in the body (besides the topic word)
    body: str  # ordinary English filler, unique per page
    extra: str = ""  # raw extra body text (phrases)
    head: str = ""  # raw extra <head> content


# Made-up tokens: consonant endings that the English (Porter/Snowball) stemmer
# leaves alone, no English word among them, none is a prefix of another.
TOPIC_WORDS = [
    "zorblak", "quivnex", "drumpolt", "flintrax", "gobrint", "hexwold", "jastrum",
    "kloddix", "lumbrak", "mordwint", "nebzark", "oxtrump", "pindlok", "qworrat",
    "rastvik", "sklomp", "trevnak", "uvdrix", "vontrag", "wexbold", "yarnock",
    "zeptrik", "brovnat", "cromblik", "dwenskit", "efrolt", "gavrunk", "hobnix",
    "ivtrask", "jorvlak",
]

FILLER = [
    "The river bends past the old mill where farmers once brought grain to market.",
    "Clockmakers in the valley built small brass gears for travelling merchants.",
    "A lighthouse keeper kept a careful log of passing ships and changing weather.",
    "Beekeepers move their hives across the meadow as the clover blooms.",
    "The orchestra tuned its violins while the audience settled into velvet seats.",
    "Glassblowers shape molten sand into bottles, lenses and delicate ornaments.",
    "Cartographers draw coastlines from surveys taken over many patient summers.",
    "A blacksmith hammers iron on the anvil until the horseshoe fits the hoof.",
    "Potters glaze their bowls before firing them in a wood burning kiln.",
    "The librarian catalogues rare manuscripts in a quiet reading room.",
    "Shepherds guide their flocks over the hills before the first snowfall.",
    "Weavers twist wool into yarn and pattern it into warm heavy blankets.",
    "Astronomers chart the slow movement of planets against distant stars.",
    "Bakers knead dough before dawn so that bread is ready for breakfast.",
    "Fishermen mend their nets on the harbour wall after a stormy night.",
    "The gardener prunes roses and plants tulip bulbs along the stone path.",
    "Miners descend the shaft with lamps to follow a seam of copper ore.",
    "A carpenter joins oak boards with pegs instead of iron nails.",
    "Sailors read the wind and trim the canvas to cross the wide bay.",
    "Tea growers pick young leaves on terraced slopes above the clouds.",
    "The railway engineer checks the boiler pressure before departure.",
    "Calligraphers grind ink sticks and practise each stroke for years.",
    "Falconers train their birds with patience, gloves and small rewards.",
    "Cheesemakers age wheels of cheese in cool caves for many months.",
    "Bookbinders sew folded pages and cover them with leather and cloth.",
    "Vintners harvest grapes in autumn and press them into dark juice.",
    "A cobbler resoles worn boots with thick strips of tanned hide.",
    "Beachcombers collect driftwood and shells along the quiet shore.",
    "The telegraph operator taps messages across the continent in code.",
    "Mapmakers debate the exact height of the northern mountain range.",
]

# Marker words and the exact set of page indices (of PAGES_A) containing them.
MARKERS_A: dict[str, frozenset[int]] = {
    "gleepnar": frozenset(range(0, 10)),  # pages 0..9
    "frobnitz": frozenset(range(0, 30, 2)),  # even pages
    "wumpkit": frozenset({3, 7, 11}),
    "snorvelt": frozenset({29}),
    "plonkvar": frozenset({1, 2}),  # also in archive B (see MARKERS_B)
}
# Marker words of archive B, with the set of B page indices containing them.
MARKERS_B: dict[str, frozenset[int]] = {
    "plonkvar": frozenset({0, 4, 9}),
    "brindlex": frozenset(range(10)),  # every B page
    "sharedonly": frozenset({9}),  # B's "shared.html" (A has a page with that path too)
}

# Geo positions (libzim indexes <meta name="geo.position" content="lat;lon">).
GEO_A = {
    12: (48.8566, 2.3522),  # Paris
    13: (48.8606, 2.3376),  # ~1.2 km from 12
    14: (51.5074, -0.1278),  # London, ~340 km from Paris
    15: (-33.8688, 151.2093),  # Sydney
}


def _build_pages_a() -> list[Page]:
    pages = []
    for i, topic in enumerate(TOPIC_WORDS):
        words = tuple(w for w, idx in MARKERS_A.items() if i in idx)
        extra = ""
        if i == 5:
            extra = "The cravmolt dwirnap ritual starts at noon."
        elif i == 6:
            extra = "A dwirnap is sometimes mentioned, and cravmolt rarely appears before it."
        head = ""
        if i in GEO_A:
            lat, lon = GEO_A[i]
            head = f'<meta name="geo.position" content="{lat};{lon}">'
        pages.append(
            Page(
                path=f"topic{i:02d}.html",
                title=f"The {topic.capitalize()} chronicle",
                words=words,
                body=FILLER[i],
                extra=extra,
                head=head,
            )
        )
    return pages


PAGES_A: list[Page] = _build_pages_a()
# A page whose path also exists in archive B, with different content.
PAGES_A.append(
    Page(
        path="shared.html",
        title="Shared path in archive A",
        words=(),
        body="This page of the first archive shares its path with a page of the second one.",
    )
)

B_TOPICS = ["kavrotz", "lindrup", "mestrak", "norvilt", "ospravk", "pettrunk", "quassik",
            "rumbolt", "stiverk"]
B_FILLER = [
    "Volcanoes vent steam long before an eruption is visible from the valley.",
    "Glaciers carve deep fjords as they grind slowly towards the sea.",
    "Deserts bloom briefly after the rare spring rains arrive.",
    "Coral reefs shelter thousands of species in warm shallow water.",
    "Prairie grasses send roots far below the dry summer soil.",
    "Mangrove forests protect the coast from storm surges and erosion.",
    "Alpine meadows flower in a short season between the thaws.",
    "Tundra mosses survive months of darkness under the snow.",
    "Rainforest canopies hold more life than the forest floor beneath.",
    "This page of the second archive shares its path with a page of the first one.",
]


def _build_pages_b() -> list[Page]:
    pages = []
    for i in range(10):
        words = tuple(w for w, idx in MARKERS_B.items() if i in idx)
        if i < 9:
            path, title = f"nature{i:02d}.html", f"Field notes on {B_TOPICS[i].capitalize()}"
        else:
            path, title = "shared.html", "Shared path in archive B"
        pages.append(Page(path=path, title=title, words=words, body=B_FILLER[i]))
    return pages


PAGES_B: list[Page] = _build_pages_b()


def _topic_of(pages: list[Page], i: int) -> str | None:
    if pages is PAGES_A and i < len(TOPIC_WORDS):
        return TOPIC_WORDS[i]
    if pages is PAGES_B and i < len(B_TOPICS):
        return B_TOPICS[i]
    return None


def _visible_text(markup: str) -> tuple[str, str]:
    """(title, body text) of a page as written: tags dropped, entities decoded."""
    title = _html.unescape(re.search(r"<title>(.*?)</title>", markup, re.S).group(1))
    body = re.search(r"<body>(.*)</body>", markup, re.S).group(1)
    text = _html.unescape(re.sub(r"<[^>]+>", " ", body))
    return title, " ".join(text.split())


def page_text(pages: list[Page], i: int) -> tuple[str, str]:
    """(title, visible body text) of page i of the table, from its HTML."""
    return _visible_text(_page_html(pages[i], _topic_of(pages, i)))


def page_words(pages: list[Page], i: int) -> set[str]:
    """Every lower-case word of page i's title and body, as written."""
    title, body = page_text(pages, i)
    return set(re.findall(r"[a-z0-9]+", (title + " " + body).lower()))


def pages_with(pages: list[Page], *words: str) -> set[str]:
    """Paths of the pages (of the given table) that contain every word."""
    return {p.path for i, p in enumerate(pages) if set(words) <= page_words(pages, i)}


def pages_with_any(pages: list[Page], *words: str) -> set[str]:
    return set().union(*(pages_with(pages, w) for w in words))


def page_by_path(pages: list[Page], path: str) -> tuple[int, Page]:
    for i, p in enumerate(pages):
        if p.path == path:
            return i, p
    raise KeyError(path)


def _page_html(p: Page, topic: str | None) -> str:
    paras = [f"<p>{_html.escape(p.body)}</p>"]
    if topic:
        paras.append(f"<p>This article is about {topic} and nothing else.</p>")
    if p.words:
        paras.append(f"<p>Keywords: {' '.join(p.words)}.</p>")
    if p.extra:
        paras.append(f"<p>{_html.escape(p.extra)}</p>")
    # Pad with repeated filler so snippets have some text around the terms.
    paras.append(f"<p>{_html.escape(p.body)} {_html.escape(p.body)}</p>")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{_html.escape(p.title)}</title>{p.head}</head>"
        f"<body><h1>{_html.escape(p.title)}</h1>{''.join(paras)}</body></html>\n"
    )


def _tree_files(pages: list[Page], welcome_title: str) -> dict[str, str]:
    """Relative path -> HTML of every file of a fixture, welcome page included."""
    files = {p.path: _page_html(p, _topic_of(pages, i)) for i, p in enumerate(pages)}
    # Link texts are neutral so that the welcome page matches no marker word.
    links = "".join(f'<li><a href="{p.path}">entry {i}</a></li>' for i, p in enumerate(pages))
    files["index.html"] = (
        f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{welcome_title}</title>"
        f"</head><body><h1>{welcome_title}</h1><ul>{links}</ul></body></html>\n"
    )
    return files


def _write_tree(root: Path, pages: list[Page], welcome_title: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for path, markup in _tree_files(pages, welcome_title).items():
        (root / path).write_text(markup, encoding="utf-8")
    return root


class _HtmlItem(writer.Item):
    def __init__(self, path: str, title: str, markup: str):
        super().__init__()
        self.path, self.title, self.markup = path, title, markup

    def get_path(self) -> str:
        return self.path

    def get_title(self) -> str:
        return self.title

    def get_mimetype(self) -> str:
        return "text/html"

    def get_contentprovider(self) -> writer.ContentProvider:
        return writer.StringProvider(self.markup)

    def get_hints(self) -> dict:
        # zimwriterfs marks every HTML page a front article: the title index
        # (suggestions) only holds front articles.
        return {writer.Hint.FRONT_ARTICLE: True}


def _write_zim(out: Path, pages: list[Page], *, title: str, name: str, fulltext: bool) -> Path:
    """Pack the fixture with our own writer, as zimwriterfs would: the <title>
    as entry title, index.html the main page, the same metadata."""
    with writer.Creator(out).config_indexing(fulltext, "eng").config_nbworkers(2) as c:
        c.set_mainpath("index.html")
        for path, markup in _tree_files(pages, title).items():
            c.add_item(_HtmlItem(path, _visible_text(markup)[0], markup))
        for key, value in (("Title", title), ("Name", name), ("Language", "eng"),
                           ("Description", "Test content"), ("Creator", "libzim-c"),
                           ("Publisher", "libzim-c"), ("Date", datetime.date.today())):
            c.add_metadata(key, value)
        c.add_illustration(48, write_png(out.with_suffix(".png")).read_bytes())
    return out


_build_lock = threading.Lock()
_built: dict[str, Path] = {}


def _build_once(tmp_path_factory, key: str, builder) -> Path:
    with _build_lock:
        if key not in _built:
            _built[key] = builder(tmp_path_factory.mktemp(f"search-{key}"))
        return _built[key]


def _build_a(base: Path, fulltext: bool) -> Path:
    return _write_zim(
        base / ("a.zim" if fulltext else "a-noindex.zim"), PAGES_A, title="Search fixture A",
        name="libzim_c_search_a", fulltext=fulltext,
    )


def _build_b(base: Path) -> Path:
    # Deliberately built by zimwriterfs (Debian's zim-tools, no code shared with
    # libzim.writer): the independent cross-check that the expectations derived
    # from the HTML hold for an archive our writer did not make.
    src = _write_tree(base / "html", PAGES_B, "Search fixture B")
    return build_zim_from_dir(
        src, base / "b.zim", title="Search fixture B", name="libzim_c_search_b", threads=2
    )


@pytest.fixture(scope="session")
def zim_a_path(tmp_path_factory) -> Path:
    return _build_once(tmp_path_factory, "a", lambda d: _build_a(d, True))


@pytest.fixture(scope="session")
def zim_a_zimwriterfs_path(tmp_path_factory) -> Path:
    """Archive A as zimwriterfs builds it from the same HTML: the cross-check of
    the libzim.writer build (test_search.py compares the two)."""

    def build(base: Path) -> Path:
        src = _write_tree(base / "html", PAGES_A, "Search fixture A")
        return build_zim_from_dir(
            src, base / "a.zim", title="Search fixture A", name="libzim_c_search_a", threads=2
        )

    return _build_once(tmp_path_factory, "a-zimwriterfs", build)


@pytest.fixture(scope="session")
def zim_b_path(tmp_path_factory) -> Path:
    return _build_once(tmp_path_factory, "b", _build_b)


@pytest.fixture(scope="session")
def zim_noindex_path(tmp_path_factory) -> Path:
    return _build_once(tmp_path_factory, "noindex", lambda d: _build_a(d, False))


@pytest.fixture(scope="session")
def pydoc_zim_path() -> Path:
    # python3-doc (Debian's metapackage for the default Python's documentation:
    # python3.11-doc on Debian 12, python3.13-doc on 13) is installed by the
    # project's bootstrap: not skippable.
    return ensure_debian_doc_zim("python3-doc")


def _open(path: Path) -> Archive:
    return Archive(path)


@pytest.fixture(scope="session")
def zim_a(zim_a_path):
    a = _open(zim_a_path)
    assert a.has_fulltext_index, f"{zim_a_path} was built without a full-text index"
    yield a
    a.close()


@pytest.fixture(scope="session")
def zim_b(zim_b_path):
    a = _open(zim_b_path)
    assert a.has_fulltext_index
    yield a
    a.close()


@pytest.fixture(scope="session")
def zim_noindex(zim_noindex_path):
    a = _open(zim_noindex_path)
    assert not a.has_fulltext_index
    yield a
    a.close()


@pytest.fixture(scope="session")
def pydoc_zim(pydoc_zim_path):
    a = _open(pydoc_zim_path)
    assert a.has_fulltext_index
    yield a
    a.close()


@pytest.fixture(scope="session")
def small_noindex():
    a = _open(SMALL_NOINDEX_ZIM)
    assert not a.has_fulltext_index
    yield a
    a.close()


# Queries for the concurrency tests (results compared with single-threaded runs).
PYDOC_QUERIES = [
    "dictionary", "thread", "socket", "exception", "asyncio", "import", "unicode",
    "decorator", "generator", "regular expression", "subprocess", "tuple", "lambda",
    "iterator", "datetime", "logging", "argparse", "pickle", "json", "context manager",
]
SMALL_QUERIES = [
    "gleepnar", "frobnitz", "wumpkit", "snorvelt", "plonkvar", "gleepnar frobnitz",
    "zorblak", "quivnex", "chronicle", "river", "lighthouse", '"cravmolt dwirnap"',
    "gleepnar AND NOT frobnitz", "keywords", "article", "blacksmith", "gardener",
    "merchants", "wool", "jorvlak",
]


def result_rows(result_set) -> list[tuple]:
    """(path, title, score, word_count, snippet) of every result, in order."""
    return [(r.path, r.title, r.score, r.word_count, r.snippet) for r in result_set]
