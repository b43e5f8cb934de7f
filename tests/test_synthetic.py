"""tools/synthetic.py: the Wikipedia-like archives of issue 28, on small sizes.

The distributions are checked on the generator's plain data (no writing), the
archive's structure on a few hundred articles written with libzim.writer:
determinism, redirects that resolve, links that point at entries, the
indexes of each mode.
"""

from __future__ import annotations

import hashlib
import math
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import synthetic  # noqa: E402

from libzim.reader import Archive  # noqa: E402

ARTICLES = 240
HREF = re.compile(r'<a href="([^"]+)"')
IMG = re.compile(r'<img src="([^"]+)"')


@pytest.fixture(scope="module")
def vocabulary() -> synthetic.Vocabulary:
    return synthetic.Vocabulary.load()


@pytest.fixture(scope="module")
def gen(vocabulary: synthetic.Vocabulary) -> synthetic.Generator:
    return synthetic.Generator(3000, seed=7, vocabulary=vocabulary)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synthetic") / "s.zim"
    return synthetic.build_synthetic_zim(out, ARTICLES, seed=3, workers=1)


def entries(path: Path) -> list[tuple[str, str, str, str]]:
    """(path, title, redirect target or mimetype, sha256 of content) of every user entry."""
    a = Archive(path)
    out = []
    for i in range(a.entry_count):
        e = a._get_entry_by_id(i)
        if e.is_redirect:
            out.append((e.path, e.title, "-> " + e.get_redirect_entry().path, ""))
        else:
            item = e.get_item()
            out.append((e.path, e.title, item.mimetype, hashlib.sha256(bytes(item.content)).hexdigest()))
    return out


def test_same_seed_same_data_other_seed_other(vocabulary: synthetic.Vocabulary) -> None:
    a = synthetic.Generator(500, seed=11, vocabulary=vocabulary).digest(limit=60)
    b = synthetic.Generator(500, seed=11, vocabulary=vocabulary).digest(limit=60)
    c = synthetic.Generator(500, seed=12, vocabulary=vocabulary).digest(limit=60)
    assert a == b
    assert a != c


def test_same_seed_same_archive_entries(built: Path, tmp_path: Path) -> None:
    again = synthetic.build_synthetic_zim(tmp_path / "again.zim", ARTICLES, seed=3, workers=2)
    first = entries(built)
    assert len(first) > ARTICLES
    assert entries(again) == first


def test_article_lengths_log_normal(gen: synthetic.Generator) -> None:
    counts = [gen.word_count(gen.page_rng(i)) for i in range(gen.n)]
    median = statistics.median(counts)
    assert 330 <= median <= 480, median
    logs = [math.log(c) for c in counts]
    sigma = statistics.pstdev(logs)
    assert 0.95 <= sigma <= 1.25, sigma
    # The tail: a fifth of the articles are over 1,000 words; the longest far beyond.
    assert 0.12 <= sum(c > 1000 for c in counts) / len(counts) <= 0.30
    assert max(counts) > 5000


def test_words_follow_zipf_and_phrases_recur(gen: synthetic.Generator) -> None:
    words: Counter[str] = Counter()
    trigram_pages: Counter[str] = Counter()
    for i in range(300):
        text = re.sub(r"<[^>]+>", " ", gen.page(i)).lower()
        toks = re.findall(r"[a-z]+", text)
        words.update(toks)
        trigram_pages.update({" ".join(toks[k:k + 3]) for k in range(len(toks) - 2)})
    freqs = [f for _, f in words.most_common()]
    # log-log slope of rank against frequency between ranks 10 and 1000: Zipf's -1
    xs = [math.log(r) for r in range(10, 1000)]
    ys = [math.log(freqs[r - 1]) for r in range(10, 1000)]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    assert -1.3 <= slope <= -0.7, slope
    # the most frequent phrase is in many pages: a 3-word phrase by chance would not be
    top = gen.phrases[0]
    if len(top) >= 3:
        assert trigram_pages[" ".join(top[:3])] >= 30
    assert max(trigram_pages.values()) >= 30


def test_redirect_share_and_page_parts(gen: synthetic.Generator) -> None:
    share = len(gen.redirects) / (len(gen.redirects) + gen.n)
    assert 0.39 <= share <= 0.41
    titles = set(gen.titles) | {alt for alt, _ in gen.redirects}
    assert len(titles) == gen.n + len(gen.redirects)  # every title unique
    page = gen.page(0)
    for part in ('<table class="infobox">', '<div class="navbox" role="navigation">', "<h1>", "<a href="):
        assert part in page
    assert sum("<h2>" in gen.page(i) for i in range(50)) >= 20
    assert sum("<img " in gen.page(i) for i in range(200)) == 200 // synthetic.ILLUSTRATION_EVERY


def test_archive_redirects_resolve_and_links_exist(built: Path) -> None:
    a = Archive(built)
    assert a.has_fulltext_index and a.has_title_index
    redirects = articles = images = 0
    for i in range(a.entry_count):
        e = a._get_entry_by_id(i)
        if e.is_redirect:
            redirects += 1
            target = e.get_redirect_entry()
            assert not target.is_redirect and target.get_item().mimetype == "text/html"
            continue
        item = e.get_item()
        if item.mimetype == "image/png":
            images += 1
            assert bytes(item.content[:8]) == b"\x89PNG\r\n\x1a\n"
            continue
        articles += 1
        html = bytes(item.content).decode("utf-8")
        for href in HREF.findall(html) + IMG.findall(html):
            assert a.has_entry_by_path(unquote(href.replace("&amp;", "&"))), (e.path, href)
    assert articles == ARTICLES
    assert images == math.ceil(ARTICLES / synthetic.ILLUSTRATION_EVERY)
    assert redirects == round(ARTICLES * synthetic.REDIRECTS_PER_ARTICLE)
    assert a.article_count == articles + redirects  # redirects are front articles too


def test_archive_full_text_finds_a_phrase(built: Path) -> None:
    from libzim.search import Query, Searcher

    gen = synthetic.Generator(ARTICLES, seed=3)
    text = re.sub(r"<[^>]+>", " ", gen.page(5))
    word = max(re.findall(r"[a-z]{6,}", text), key=len)
    paths = list(Searcher(Archive(built)).search(Query().set_query(word)).getResults(0, 50))
    assert synthetic.path_of(gen.titles[5]) in paths


def test_title_only_mode(tmp_path: Path) -> None:
    out = synthetic.build_synthetic_zim(tmp_path / "t.zim", 300, seed=5, title_only=True, workers=1)
    a = Archive(out)
    assert not a.has_fulltext_index
    assert a.has_title_index
    assert a.article_count == 300 + 200
    from libzim.suggestion import SuggestionSearcher

    gen = synthetic.Generator(300, seed=5, title_only=True)
    word = gen.titles[1].split()[0]
    found = list(SuggestionSearcher(a).suggest(word).getResults(0, 50))
    assert found, word
    # Stubs stay a sentence and a link: zstd level 19 over kilobyte stubs was most of a
    # 5,000,000-entry build's CPU (bench/results/scale.md).
    sizes = sorted(len(gen.page(i).encode()) for i in range(300))
    assert sizes[150] < 500 and sizes[-1] < 2_000, (sizes[150], sizes[-1])
    assert all(gen.page(i).count("<a href=") >= 1 for i in range(300))


def test_zstd_level_changes_only_the_compression(built: Path, tmp_path: Path) -> None:
    # --zstd-level re-runs the tool with tools/zstd_level.c preloaded: the same
    # entries and bytes, clusters compressed at another level than libzim's 19.
    out = tmp_path / "z1.zim"
    tool = Path(synthetic.__file__)
    subprocess.run([sys.executable, str(tool), str(ARTICLES), "--seed", "3", "--workers", "1",
                    "--zstd-level", "1", "--out", str(out)], check=True, capture_output=True,
                   timeout=300)
    assert entries(out) == entries(built)
    assert bytes(Archive(out).get_metadata("Description")).decode().endswith("at zstd level 1")
    assert b"zstd level" not in bytes(Archive(built).get_metadata("Description"))
    assert out.stat().st_size > built.stat().st_size * 1.05  # level 1 compresses less
    assert synthetic.synthetic_zim_path(10, zstd_level=3).name == "synthetic-10-s1-full-f2-z3.zim"


def test_cache_path_outside_the_repository() -> None:
    p = synthetic.synthetic_zim_path(100_000)
    repo = Path(__file__).resolve().parent.parent
    assert repo not in p.parents
    assert p != synthetic.synthetic_zim_path(100_000, title_only=True)
