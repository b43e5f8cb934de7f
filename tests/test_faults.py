"""Fault injection (APSW-style): make the N-th native call fail, for every N
a scenario reaches, and check each failure surfaces as a clean ZimError and
leaves every object usable."""
import gc
import pytest

import libzim
from libzim import _libzim
from libzim.reader import Archive
from libzim.suggestion import SuggestionSearcher

import local_archives

# Built from this repository (local_archives.py): any valid archives do here.
SMALL = local_archives.local().small.path
WIKIBOOKS = local_archives.local().multi.path


@pytest.fixture(autouse=True)
def _no_leftover_fault():
    _libzim._fault_inject(0)
    yield
    _libzim._fault_inject(0)


def reader_scenario():
    """Touches every reader call into the shim; returns what it read."""
    a = Archive(WIKIBOOKS)
    out = [a.entry_count, a.metadata_keys, a.get_metadata("Title")]
    out.append(a.get_metadata_item("Title").size)
    with pytest.warns(DeprecationWarning, match="use get_illustration_infos"):  # the call, deprecated as in python-libzim 3.13
        out.append(sorted(a.get_illustration_sizes()))
    out.append(a.has_illustration())
    e = a.main_entry
    out.append(e.path)
    while e.is_redirect:
        e = e.get_redirect_entry()
    item = e.get_item()
    out.append((item.path, item.mimetype, item.size, bytes(item.content)))
    out.append(a.get_entry_by_title(e.title).path)
    out.append(a.has_entry_by_path("no/such/path"))
    out.append(a._get_entry_by_id(3).path)
    out.append([x.path for x in a.iter_by_path()][:50])
    out.append([x.path for x in a.iter_efficient()][:50])
    out.append([x.title for x in a.find_by_title(e.title[:2])])
    out.append(a.check())
    out.append(a.validate())
    s = SuggestionSearcher(a).suggest(e.title[:3])
    out.append(s.get_estimated_matches())
    out.append([(r.path, r.title) for r in s.get_results(0, 5)])
    a.close()
    return out


def fail_each_native_call(scenario, *args):
    """Runs scenario with the 1st, 2nd, ... native call failing until it
    completes untouched; returns how many runs failed (one per native call)."""
    expected = scenario(*args)
    failures = 0
    for nth in range(1, 500):
        _libzim._fault_inject(nth)
        try:
            got = scenario(*args)
        except libzim.ZimError as exc:
            failures += 1
            message = str(exc)
            assert "injected fault" in message, message
            assert "\n" not in message
            continue
        finally:
            _libzim._fault_inject(0)
            gc.collect()
        # The fault was never reached: the scenario made fewer native calls.
        assert got == expected
        break
    else:
        pytest.fail("scenario never completed without reaching the injected fault")
    # Nothing is left broken afterwards.
    assert scenario(*args) == expected
    return failures


def test_each_native_call_failing_gives_a_clean_error():
    assert fail_each_native_call(reader_scenario) >= 20


def test_failed_open_leaves_no_half_object():
    _libzim._fault_inject(1)
    with pytest.raises(libzim.ZimError, match="injected fault"):
        Archive(SMALL)
    _libzim._fault_inject(0)
    assert Archive(SMALL).entry_count == 2


from search_fixtures import zim_a_path, zim_b_path  # noqa: E402,F401  (fixtures)


def search_scenario(paths):
    """Touches every search call into the shim."""
    from libzim.search import Query, Searcher

    archives = [Archive(p) for p in paths]
    searcher = Searcher(archives[0])
    searcher.add_archive(archives[1])
    out = []
    for text in ("gleepnar", "zorbling wumpkit"):
        search = searcher.search(Query().set_query(text))
        out.append(search.get_estimated_matches())
        page = search.get_results(0, 10)
        out.append([(r.path, r.title, r.score, r.snippet, archives.index(r.archive)) for r in page])
        out.append([r.path for r in search.get_results(0, 10, include_snippets=False)])
        out.append(list(search.getResults(0, 5)))
    for a in archives:
        a.close()
    return out


def test_each_native_search_call_failing_gives_a_clean_error(zim_a_path, zim_b_path):
    assert fail_each_native_call(search_scenario, [zim_a_path, zim_b_path]) >= 10
