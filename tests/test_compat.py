"""python-libzim's callers pass arguments by keyword too: the parameter names
are part of the API that `import libzim` must keep working."""
import inspect

import pytest

import local_archives
from libzim.reader import Archive
from libzim.search import Query, Search, Searcher
from libzim.suggestion import SuggestionSearch, SuggestionSearcher

# Built from this repository: the small one has main.html titled "Test ZIM file".
SMALL = local_archives.local().small.path
MULTI = local_archives.local().multi.path

# Parameter names of python-libzim 3.x (libzim/libzim.pyx).
SIGNATURES = {
    Archive.get_entry_by_path: ["path"],
    Archive.has_entry_by_path: ["path"],
    Archive.get_entry_by_title: ["title"],
    Archive.has_entry_by_title: ["title"],
    Archive.get_metadata: ["name"],
    Archive.get_metadata_item: ["name"],
    Archive._get_entry_by_id: ["entry_id"],
    Archive.has_illustration: ["size"],
    Archive.get_illustration_item: ["size"],
    Query.set_query: ["query"],
    Searcher.search: ["query"],
    Search.getResults: ["start", "count"],
    Search.get_results: ["start", "count", "include_snippets", "snippet_engine", "include_text",
                         "text_max_chars"],
    SuggestionSearcher.suggest: ["query", "mode"],  # mode: ours, keyword-only
    SuggestionSearch.getResults: ["start", "count"],
}


@pytest.mark.parametrize("func, names", SIGNATURES.items(), ids=lambda x: getattr(x, "__qualname__", ""))
def test_parameter_names(func, names):
    params = [p for p in inspect.signature(func).parameters if p != "self"]
    assert params == names


def test_reader_keywords_give_the_positional_results():
    a = Archive(filename=SMALL)
    assert a.get_entry_by_path(path="main.html").title == a.get_entry_by_path("main.html").title
    assert a.has_entry_by_path(path="main.html") is True
    assert a.get_entry_by_title(title="Test ZIM file").path == "main.html"
    assert a.has_entry_by_title(title="nope") is False
    assert a.get_metadata(name="Title") == b"Test ZIM file"
    assert a.get_metadata_item(name="Title").size == len(b"Test ZIM file")
    assert a._get_entry_by_id(entry_id=0).path == a._get_entry_by_id(0).path
    assert a.has_illustration(size=48) is True
    assert bytes(a.get_illustration_item(size=48).content) == bytes(a.get_illustration_item(48).content)
    with pytest.raises(TypeError, match="multiple values"):
        a.get_entry_by_path("main.html", path="main.html")
    with pytest.raises(TypeError, match="unexpected keyword"):
        a.get_entry_by_path(url="main.html")
    with pytest.raises(TypeError, match="missing required"):
        a.get_entry_by_path()


def test_suggestion_keywords_give_the_positional_results():
    search = SuggestionSearcher(archive=Archive(MULTI)).suggest(query="ста")
    assert list(search.getResults(start=0, count=5)) == list(search.getResults(0, 5))
    assert [r.path for r in search.get_results(start=0, count=5)] == list(search.getResults(0, 5))
    assert len(list(search.getResults(0, 5))) == 5  # every page title starts with "Старонка"
