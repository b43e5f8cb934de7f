"""Differential test: the same items written by python-libzim 3.13.1 (the
reference, in its own venv: tools/bootstrap.sh installs it) and by this
project's writer, both read back with our reader.

The reference bundles libzim 9; this project links Debian's libzim 8.1.1. The
differences that come from libzim 8 against 9, and only those, are allowed
(docs/guides/writing.md, "Differences from python-libzim 3.13.1"):
- libzim 8 also writes the v0 title listing (`listing/titleOrdered/v0`);
- the Xapian databases are the same queries' answers, not the same bytes.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import child_python
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher

SCRIPT = Path(__file__).with_name("writer_differential.py")
from test_zim63 import ORACLE_PYTHON, ORACLE_VENV  # where tools/bootstrap.sh installs it

LIBZIM8_ONLY = {"listing/titleOrdered/v0"}
SAME_QUERIES_NOT_BYTES = {"fulltext/xapian", "title/xapian"}


def oracle_python() -> Path:
    # Not a skip: without the reference these tests prove nothing, and CI
    # installs it (tools/bootstrap.sh).
    if not ORACLE_PYTHON.exists():
        pytest.fail(f"python-libzim 3.13.1 not found at {ORACLE_VENV}: run tools/bootstrap.sh "
                    "(or set LIBZIM_C_ORACLE_VENV to a venv with `pip install libzim==3.13.1`)")
    version = subprocess.run(
        [str(ORACLE_PYTHON), "-I", "-c",
         "import importlib.metadata as m; print(m.version('libzim'))"],
        capture_output=True, text=True, cwd="/", env=_clean_env())
    assert version.stdout.strip() == "3.13.1", version.stdout + version.stderr
    return ORACLE_PYTHON


def _clean_env():
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    d = tmp_path_factory.mktemp("differential")
    ref = subprocess.run([str(oracle_python()), "-I", str(SCRIPT), str(d / "reference.zim")],
                         capture_output=True, text=True, cwd="/", env=_clean_env(), timeout=300)
    assert ref.returncode == 0, ref.stderr
    kw = child_python()
    ours = subprocess.run([sys.executable, str(SCRIPT), str(d / "ours.zim")],
                          capture_output=True, text=True, timeout=300, **kw)
    assert ours.returncode == 0, ours.stderr
    return Archive(d / "reference.zim"), Archive(d / "ours.zim")


def entries(a):
    out = {}
    for i in range(a.all_entry_count):
        e = a._get_entry_by_id(i)
        if e.is_redirect:
            out[e.path] = (e.title, "->", e.get_redirect_entry().path)
        else:
            item = e.get_item()
            out[e.path] = (e.title, item.mimetype, hashlib.sha256(item.content).hexdigest())
    return out


def test_same_entries(archives):
    ref, ours = (entries(a) for a in archives)
    assert set(ours) - set(ref) == LIBZIM8_ONLY
    assert set(ref) <= set(ours)
    for path in set(ref) - SAME_QUERIES_NOT_BYTES:
        assert ours[path] == ref[path], path
    assert len(ref) > 120


def test_same_metadata_and_counts(archives):
    ref, ours = archives
    assert ours.metadata_keys == ref.metadata_keys
    for key in ref.metadata_keys:
        assert ours.get_metadata(key) == ref.get_metadata(key), key
        assert ours.get_metadata_item(key).mimetype == ref.get_metadata_item(key).mimetype, key
    for attr in ("entry_count", "article_count", "media_count", "has_fulltext_index",
                 "has_title_index"):
        assert getattr(ours, attr) == getattr(ref, attr), attr
    with pytest.warns(DeprecationWarning, match="use get_illustration_infos"):  # both warn, as python-libzim does
        assert ours.get_illustration_sizes() == ref.get_illustration_sizes()
    assert ours.main_entry.get_item().path == ref.main_entry.get_item().path == "pages/p001.html"


@pytest.mark.parametrize("query", ["river", "glacier fjord", "zephyr", "savanna", "meadow reef"])
def test_same_search_hits(archives, query):
    ref, ours = (
        sorted(r.path for r in Searcher(a).search(query).get_results(0, 1000,
                                                                     include_snippets=False))
        for a in archives)
    assert ours == ref
    assert ref


@pytest.mark.parametrize("text", ["Page title 1", "first", "second redirect", "plain"])
def test_same_suggestions(archives, text):
    ref, ours = (sorted(r.path for r in SuggestionSearcher(a).suggest(text).get_results(0, 1000))
                 for a in archives)
    assert ours == ref
