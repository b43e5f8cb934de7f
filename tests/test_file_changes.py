"""Files that change under an open Archive, and paths that are not files.

An Archive reads one file: every native handle made for it (pooled searchers,
their Xapian databases, copies) must read the file that was opened, whatever
happens to the path afterwards (an atomic replace, as a library of archives
is updated in place, or a deletion). Expected results come from the fixture
tables (search_fixtures.py), not from the code under test: after the path
is replaced by archive B, searches on the open Archive must still answer
from archive A.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest

import libzim
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher
from search_fixtures import *  # noqa: F401,F403
import local_archives
from conftest import child_python

# Built from this repository (local_archives.py): main.html, favicon.png (stored uncompressed).
LOCAL_SMALL = local_archives.local().small
from search_fixtures import MARKERS_A, PAGES_A, PAGES_B, pages_with

ALL = 1000
A_WORD = "gleepnar"  # pages 0..9 of A, in no page of B
B_WORD = "brindlex"  # every page of B, in no page of A


def test_fixture_words_tell_the_archives_apart():
    assert pages_with(PAGES_A, A_WORD) and not pages_with(PAGES_B, A_WORD)
    assert pages_with(PAGES_B, B_WORD) and not pages_with(PAGES_A, B_WORD)
    assert A_WORD in MARKERS_A


def paths(searcher, word):
    return {r.path for r in searcher.search(word).get_results(0, ALL, include_snippets=False)}


def assert_answers_from_a(searcher):
    assert paths(searcher, A_WORD) == pages_with(PAGES_A, A_WORD)
    assert paths(searcher, B_WORD) == set()


@pytest.fixture
def copy_a(tmp_path, zim_a_path):
    path = tmp_path / "library.zim"
    shutil.copyfile(zim_a_path, path)
    return path


def replace_with_b(path, zim_b_path):
    tmp = path.with_suffix(".new")
    shutil.copyfile(zim_b_path, tmp)
    os.replace(tmp, path)


@pytest.mark.parametrize("change", ["replace", "delete"])
def test_new_searcher_reads_the_open_file(copy_a, zim_b_path, change):
    with Archive(copy_a) as a:
        if change == "replace":
            replace_with_b(copy_a, zim_b_path)
        else:
            os.unlink(copy_a)
        assert a.has_fulltext_index
        assert_answers_from_a(Searcher(a))
        suggested = {s.path for s in SuggestionSearcher(a).suggest("Field").get_results(0, ALL)}
        assert not any(p.startswith("nature") for p in suggested)  # B's paths


def test_embedded_archive_searches_the_open_file(tmp_path, zim_a_path, zim_b_path):
    # An archive inside a bigger file (offset=, size=), the containing file replaced.
    data = zim_a_path.read_bytes()
    path = tmp_path / "container.bin"
    path.write_bytes(b"\0" * 4096 + data + b"\0" * 100)
    with Archive(path, offset=4096, size=len(data)) as a:
        replace_with_b(path, zim_b_path)
        assert_answers_from_a(Searcher(a))


def test_add_archive_after_replace(copy_a, zim_b_path, zim_b):
    with Archive(copy_a) as a:
        replace_with_b(copy_a, zim_b_path)
        s = Searcher(zim_b)
        s.add_archive(a)
        assert paths(s, A_WORD) == pages_with(PAGES_A, A_WORD)


def test_every_pool_slot_reads_the_open_file(copy_a, zim_b_path):
    # Slots made after the replace used to reopen the path: half the threads
    # got archive B's answers, or an error. Threads keep searching until the
    # pool has grown, so new slots are made after the replace.
    with Archive(copy_a) as a:
        searcher = Searcher(a)
        assert_answers_from_a(searcher)
        replace_with_b(copy_a, zim_b_path)
        want = pages_with(PAGES_A, A_WORD)
        errors, got = [], []
        stop = threading.Event()

        def worker():
            try:
                for _ in range(400):
                    got.append(frozenset(paths(searcher, A_WORD)))
                    if stop.is_set():
                        return
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        for _ in range(20):
            threads = [threading.Thread(target=worker) for _ in range(4)]
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads) and searcher._pool_size < 2:
                threads[0].join(0.01)
            stop.set()
            for t in threads:
                t.join(120)
            stop.clear()
            if searcher._pool_size >= 2 or errors:
                break
        assert not errors, errors[0]
        assert searcher._pool_size >= 2, "the pool never grew: the test proved nothing"
        assert set(got) == {frozenset(want)}


# ---- paths that are not regular files ---------------------------------------------------


def run_child(code, timeout=30):
    """Runs code in a fresh interpreter: a hang fails by timeout, not the whole run."""
    script = "import libzim, os, signal, sys\nfrom libzim.reader import Archive\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout, **child_python())


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.zim"
    os.mkfifo(fifo)
    proc = run_child(f"""
        try:
            Archive({str(fifo)!r})
        except libzim.ArchiveError as e:
            print(str(e))
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{fifo}: cannot open: not a regular file or block device (a FIFO)"


@pytest.mark.parametrize("path, what", [("/dev/null", "a character device"), ("/", "a directory")])
def test_non_files_are_refused(path, what):
    with pytest.raises(libzim.ArchiveError) as info:
        Archive(path)
    assert str(info.value) == f"{path}: cannot open: not a regular file or block device ({what})"


def test_empty_path_has_a_name_in_the_message():
    with pytest.raises(libzim.ArchiveError) as info:
        Archive("")
    assert str(info.value).startswith("'': cannot open: ")


@pytest.mark.parametrize("handler, want", [
    ("raise KeyboardInterrupt", "KeyboardInterrupt"),  # Ctrl-C: the handler's exception
    ("pass", "opened"),  # a handler that returns: the open is retried (PEP 475)
])
def test_interrupted_open_runs_signal_handlers(handler, want):
    small_path = LOCAL_SMALL.path
    # _test_block_open makes the next open wait for a signal and fail with
    # EINTR, as open(2) does on a FIFO or a hung network file system.
    proc = run_child(f"""
        import threading
        def on_signal(signum, frame):
            print("handler ran")
            {handler}
        signal.signal(signal.SIGUSR1, on_signal)
        libzim._libzim._test_block_open(1)
        main = threading.main_thread().ident
        threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGUSR1)).start()
        try:
            a = Archive({str(small_path)!r})
            print("opened", a.entry_count)
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert lines[:3] == ["handler", "ran", want], proc.stdout


# ---- a file truncated while open ----------------------------------------------------------

TRUNCATED_CALLS = [
    "a.get_entry_by_path('main.html')",
    "a.get_entry_by_title('Test ZIM file')",
    "a._get_entry_by_id(3)",
    "a.get_metadata('Title')",
    "a.main_entry",
    "entry.get_item()",
    "item.size",
    "bytes(item.content)",
    "list(a.iter_by_title())",
    "list(a.iter_by_path())",
    "list(a.iter_efficient())",
    "next(pending)",
    "a.validate()",
    "a.check()",
    "SuggestionSearcher(a).suggest('Test').get_results(0, 5)",
]


@pytest.mark.parametrize("call", TRUNCATED_CALLS)
def test_truncated_file_raises_instead_of_sigbus(tmp_path, call):
    # libzim maps the file; reading a mapped page past a truncated end is
    # SIGBUS. Each call runs in its own process so a crash fails one case.
    path = tmp_path / "small.zim"
    data = LOCAL_SMALL.path.read_bytes()
    path.write_bytes(data)
    proc = run_child(f"""
        from libzim.suggestion import SuggestionSearcher
        a = Archive({str(path)!r})
        entry = a.get_entry_by_path("main.html")
        item = entry.get_item()
        pending = a.iter_by_path()
        os.truncate({str(path)!r}, {len(data) // 2})
        try:
            {call}
        except libzim.ArchiveError as e:
            print(e)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == (f"{path}: the file was truncated to {len(data) // 2} bytes while open "
                           f"(the archive ends at byte {len(data)})\n")


def test_content_views_survive_truncation(tmp_path):
    # favicon.png is stored uncompressed: libzim's own view of it is a map of
    # the file, which faulted on first read after the truncation.
    path = tmp_path / "small.zim"
    data = LOCAL_SMALL.path.read_bytes()
    path.write_bytes(data)
    proc = run_child(f"""
        import hashlib
        a = Archive({str(path)!r})
        views = [a.get_entry_by_path(p).get_item().content for p in ("favicon.png", "main.html")]
        os.truncate({str(path)!r}, 100)
        for v in views:
            print(hashlib.sha256(v).hexdigest())
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = [hashlib.sha256(LOCAL_SMALL.items[p][2]).hexdigest() for p in ("favicon.png", "main.html")]
    assert proc.stdout.split() == want
