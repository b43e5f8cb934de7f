"""The catalog's book index (libzim/serve/bookquery.py over src/zimshim_catalog.cpp) on
records made here: libkiwix's query language, without libkiwix's test data (so these run
everywhere), its thread safety, and the languages' own names."""

from __future__ import annotations

import threading

import pytest

from libzim._libzim import _CatalogIndex
from libzim.serve.bookquery import BookRecord, CatalogIndex, language_self_name, remote_record

BOOKS = [
    BookRecord(uuid="b1", name="jazz_en", title="Jazz history", description="Musicians of New Orleans and Chicago",
               language="eng", category="wikipedia", tags="wikipedia;_category:wikipedia;_videos:no;public_tag"),
    BookRecord(uuid="a2", name="chimie_fr", title="Chimie générale", description="Atomes, molécules et réactions",
               language="fra", category="wikibooks", tags="_category:wikibooks;_secret_word"),
    BookRecord(uuid="c3", name="both", title="Music and chemistry", description="Notes on jazz, or why not",
               language="eng,fra", category="ted", tags="ted;_videos:yes"),
]


@pytest.fixture(scope="module")
def index() -> CatalogIndex:
    return CatalogIndex(BOOKS)


def ids(index: CatalogIndex, **params: str) -> list[str]:
    return [b.uuid for b in index.select(params, remote=True)]


@pytest.mark.parametrize("params,expected", [
    ({}, ["a2", "b1", "c3"]),  # no condition: by id, as libkiwix's map of books
    ({"q": "jazz"}, ["b1", "c3"]),
    ({"q": "jaz"}, ["b1", "c3"]),  # the last word is also a prefix (libkiwix: a partial query)
    ({"q": "azz"}, []),  # words, not substrings
    ({"q": '"new orleans"'}, ["b1"]), ({"q": '"orleans new"'}, []),  # a phrase keeps its order
    ({"q": "title:jazz"}, ["b1"]), ({"q": "description:jazz"}, ["c3"]),
    ({"q": "jazz -chicago"}, ["c3"]),
    ({"q": "chimie generale"}, ["a2"]), ({"q": "molécules"}, ["a2"]),  # accents ignored both ways
    ({"q": "or why"}, ["c3"]), ({"q": "jazz OR chimie"}, []),  # no boolean operators: "or" is a word
    ({"q": "or"}, ["b1", "c3"]),  # ... and, last, a prefix too ("orleans")
    ({"q": "public_tag"}, ["b1"]), ({"q": "secret_word"}, []), ({"q": "_secret_word"}, []),  # hidden tags
    ({"q": "tag:_secret_word"}, ["a2"]),
    ({"lang": "fra"}, ["a2", "c3"]), ({"lang": "eng,deu"}, ["b1", "c3"]), ({"lang": "deu"}, []),
    ({"category": "ted,wikibooks"}, ["a2", "c3"]),
    ({"tag": "_videos:no"}, ["b1"]), ({"notag": "_videos:no;_videos:yes"}, ["a2"]),
    ({"name": "both"}, ["c3"]), ({"q": "jazz", "lang": "fra"}, ["c3"]),
])
def test_query_language(index, params, expected):
    assert sorted(ids(index, **params)) == sorted(expected)
    if not params:
        assert ids(index) == expected


def test_remote_and_maxsize(index):
    local = BookRecord(uuid="l", name="l", title="Jazz local", size=10, remote=False)
    idx = CatalogIndex([*BOOKS, local])
    assert [b.uuid for b in idx.select({"q": "local"}, remote=False)] == ["l"]
    assert [b.uuid for b in idx.select({"q": "jazz"}, remote=False)] == ["l"]
    assert [b.uuid for b in idx.select({}, remote=True, maxsize=5)] == ["a2", "b1", "c3"]  # sizes 0


def test_remote_record_from_a_library_file_book():
    rec = remote_record({"id": "x", "path": "/no/such/my book.zim", "title": "T", "size": "2", "tags": "a;_category:c",
                         "articleCount": "12", "url": "https://example.org/my book.zim"})
    assert (rec.uuid, rec.name, rec.category, rec.size, rec.article_count, rec.remote) == (
        "x", "my_book", "c", 2048, 12, True)
    assert remote_record({"title": "no id"}) is None


def test_bad_arguments():
    idx = _CatalogIndex()
    with pytest.raises(TypeError):
        idx.add(0, "only a title")
    with pytest.raises(TypeError):
        idx.query(True, 1, None, None, None, None, None, None, None, None)
    with pytest.raises(OverflowError):
        idx.add(2**40, *[""] * 9)
    assert idx.query(True, *[None] * 9) == []  # an empty index selects nothing


def test_threads_get_what_one_thread_gets(index):
    queries = [{"q": "jazz"}, {"lang": "fra"}, {"q": '"new orleans"'}, {"category": "ted,wikibooks"}, {"q": "mol"}]
    single = [ids(index, **q) for q in queries]
    results: list[list[list[str]]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append([ids(index, **q) for q in queries for _ in range(20)][::20])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(results) == 6
    assert all(r == single for r in results)


@pytest.mark.parametrize("code,name", [("eng", "English"), ("fra", "français"), ("rus", "русский"),
                                       ("cat", "català"), ("deu", "Deutsch"), ("zzz", "zzz"), ("mul", "mul")])
def test_language_self_name(code, name):
    assert language_self_name(code) == name
