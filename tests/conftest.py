"""Shared fixtures and paths for the tests.

Two sets of test archives:
  * local ones (tests/local_archives.py), built at test time in a tmp dir by
    our writer: the default suite needs nothing outside the repository;
  * the real archives by others, the openZIM zim-testing-suite's data/
    (LIBZIM_C_TEST_DATA, else ../shared/zim-testing-suite, else the data/ of
    a clone at ../zim-testing-suite: SUITE_CLONE makes one). Tests that need them
    are marked suite_data (by hand, or here for the fixtures below that hand
    out those files). Without the folder they are skipped and the run ends
    with one line saying how many and why; with LIBZIM_C_REQUIRE_TEST_DATA=1
    a missing folder is an error (CI sets it): a reader test suite that
    silently skips its data proves nothing.

Which libzim is tested: by default this work tree's in-place build (the
developer's loop). With LIBZIM_C_TEST_INSTALLED=1 the installed package in
the running interpreter's site-packages (CI installs the sdist into a fresh
venv), and never this checkout's libzim/: the run fails if it would be.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TypeVar

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# The one command that fetches the shared set, run in the checkout's root: the
# tests then find its data/ beside the checkout.
SUITE_CLONE = "git clone --depth 1 https://github.com/openzim/zim-testing-suite ../zim-testing-suite"


def _has_suite(folder: Path) -> bool:
    return (folder / "nons" / "small.zim").is_file() and (folder / "withns" / "small.zim").is_file()


def _find_suite() -> Path:
    if os.environ.get("LIBZIM_C_TEST_DATA"):
        return Path(os.environ["LIBZIM_C_TEST_DATA"])
    shared, cloned = REPO_ROOT.parent / "shared" / "zim-testing-suite", REPO_ROOT.parent / "zim-testing-suite" / "data"
    return cloned if not _has_suite(shared) and _has_suite(cloned) else shared


SUITE = _find_suite()
HAVE_SUITE = _has_suite(SUITE)
REQUIRE_SUITE = os.environ.get("LIBZIM_C_REQUIRE_TEST_DATA") == "1"
suite_data = pytest.mark.suite_data
# Tests that take one of these fixtures read the shared archives.
SUITE_FIXTURES = frozenset({"suite_dir", "scheme", "small_path", "small", "wikibooks_path", "wikibooks"})

# tools/corpus.py builds the archives the fixtures need; it is not part of the package.
sys.path.insert(0, str(REPO_ROOT / "tools"))

INSTALLED = os.environ.get("LIBZIM_C_TEST_INSTALLED") == "1"
if INSTALLED:
    # `python -m pytest` from the checkout puts it first on sys.path: take it off.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO_ROOT]
elif str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import libzim  # noqa: E402
import libzim.reader  # noqa: E402
import libzim.version  # noqa: E402

import local_archives  # noqa: E402

_LIBZIM_DIR = Path(libzim.__file__).resolve().parent
if INSTALLED and _LIBZIM_DIR.parent != Path(sysconfig.get_path("platlib")).resolve():
    raise RuntimeError(f"LIBZIM_C_TEST_INSTALLED=1 but libzim comes from {_LIBZIM_DIR}, not site-packages")
if not INSTALLED and _LIBZIM_DIR != REPO_ROOT / "libzim":
    raise RuntimeError(f"tests import libzim from {_LIBZIM_DIR}, not from {REPO_ROOT}")


def child_python(**env: str) -> dict[str, Any]:
    """cwd= and env= for a child `python` that must import the libzim tested here."""
    if INSTALLED:  # anywhere but the checkout, whose libzim/ would come first
        return {"cwd": tempfile.gettempdir(), "env": dict(os.environ, **env)}
    path = os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {"cwd": REPO_ROOT, "env": dict(os.environ, **env, PYTHONPATH=path)}


def free_port() -> int:
    """A port of 127.0.0.1 free a moment ago, for a test's server (only ever 127.0.0.1)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 20) -> tuple[int, bytes]:
    """(status, body) of a GET; an HTTP error status is returned, not raised."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# Where libzim releases behave differently, a test states what each release does
# (docs/libzim-versions.md): 8.1.1 is Debian 12's, 9.2.3 Debian 13's. A libzim
# with no measured expectation fails those tests instead of passing unchecked.
LIBZIM_VERSION = libzim.version.get_libzim_version()
LIBZIM_MAJOR = int(LIBZIM_VERSION.split(".")[0])
MEASURED_LIBZIMS = {8: "8.1.1", 9: "9.2.3"}

_T = TypeVar("_T")


def per_libzim(*, libzim8: _T, libzim9: _T) -> _T:
    """The expectation measured on the running libzim's major release."""
    if LIBZIM_MAJOR == 8:
        return libzim8
    if LIBZIM_MAJOR == 9:
        return libzim9
    pytest.fail(f"no expectation measured for libzim {LIBZIM_VERSION} (only 8.1.1 and 9.2.3)")


# The GIL-progress tests measure how far another Python thread gets while a
# native call runs, against a call that holds the GIL. A free-threaded build
# (3.13t with the GIL off) has no GIL to hold or release: every thread always
# runs, so those measures say nothing there.
FREE_THREADED = not getattr(sys, "_is_gil_enabled", lambda: True)()
gil_only = pytest.mark.skipif(
    FREE_THREADED,
    reason="free-threaded build (sys._is_gil_enabled() is False): no GIL whose release to measure",
)

SCHEMES = ("nons", "withns")
WIKIBOOKS = "wikibooks_be_all_nopic_2017-02.zim"
WIKIBOOKS_SPLIT = "wikibooks_be_all_nopic_2017-02_splitted.zim"


def entry_record(entry) -> tuple:
    """(index, path, title, is_redirect, redirect target path | mimetype, sha256 of content)."""
    if entry.is_redirect:
        return (entry._index, entry.path, entry.title, True, entry.get_redirect_entry().path, None)
    item = entry.get_item()
    return (
        entry._index,
        entry.path,
        entry.title,
        False,
        item.mimetype,
        hashlib.sha256(item.content).hexdigest(),
    )


def read_every_entry(archive) -> list[tuple]:
    """Read every entry (internal ones included) by id, with content digests."""
    return [entry_record(archive._get_entry_by_id(i)) for i in range(archive.all_entry_count)]


def pytest_configure(config) -> None:
    if REQUIRE_SUITE and not HAVE_SUITE:
        raise pytest.UsageError(
            f"LIBZIM_C_REQUIRE_TEST_DATA=1 but the zim-testing-suite archives are not at {SUITE} "
            "(expected nons/small.zim and withns/small.zim; set LIBZIM_C_TEST_DATA to its data/ folder)"
        )


_suite_skipped: list[str] = []


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SUITE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(suite_data)
    if HAVE_SUITE:
        return
    skip = pytest.mark.skip(reason=f"needs the zim-testing-suite archives, not found at {SUITE}")
    for item in items:
        if item.get_closest_marker("suite_data"):
            item.add_marker(skip)
            _suite_skipped.append(item.nodeid)


def suite_skip_line(count: int) -> str:
    """The run's last word on the shared archives it skipped: what they are, why that is fine,
    and the one command that fetches them."""
    return (
        f"{count} tests skipped: they read the openZIM zim-testing-suite, real archives written by other "
        "tools (optional: the rest of the suite builds its own archives); to run them too: " + SUITE_CLONE
    )


def pytest_terminal_summary(terminalreporter) -> None:
    if _suite_skipped:
        terminalreporter.write_line(suite_skip_line(len(_suite_skipped)))
    # Every other skip too, counted by its reason, so that none passes unseen in -q's dots.
    suite = set(_suite_skipped)
    reasons: dict[str, int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        if getattr(rep, "nodeid", None) in suite:
            continue
        lr = getattr(rep, "longrepr", None)
        reason = str(lr[2] if isinstance(lr, tuple) and len(lr) == 3 else lr).removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{n} test{'' if n == 1 else 's'} skipped: {reason}")


@pytest.fixture(scope="session")
def local():
    """The archives built from this repository alone (tests/local_archives.py)."""
    return local_archives.local()


@pytest.fixture(scope="session")
def suite_dir() -> Path:
    return SUITE


@pytest.fixture(params=SCHEMES)
def scheme(request) -> str:
    return request.param


@pytest.fixture
def small_path(scheme) -> Path:
    return SUITE / scheme / "small.zim"


@pytest.fixture
def wikibooks_path(scheme) -> Path:
    return SUITE / scheme / WIKIBOOKS


@pytest.fixture
def small(small_path):
    with libzim.reader.Archive(small_path) as archive:
        yield archive


BIG_BIN_SIZE = 6 << 20  # random bytes: stored uncompressed
BIG_TXT_SIZE = 8 << 20  # base64 of random bytes: zstd-compressed cluster, slow to decompress
BIG_PAGES = 200


@pytest.fixture(scope="session")
def big_zim(tmp_path_factory) -> Path:
    """A multi-MB archive built by zimwriterfs (zim-tools) from generated files."""
    from corpus import build_zim_from_dir

    if shutil.which("zimwriterfs") is None:
        raise RuntimeError("zimwriterfs not found: apt-get install -y zim-tools")
    root = tmp_path_factory.mktemp("bigzim")
    html = root / "html"
    html.mkdir()
    rnd = random.Random(20240611)
    for i in range(BIG_PAGES):
        paras = "".join(f"<p>paragraph {j} of page {i}: {rnd.random()}</p>" for j in range(40))
        (html / f"page{i:03d}.html").write_text(
            f"<html><head><title>Page {i:03d}</title></head><body><h1>Page {i:03d}</h1>{paras}</body></html>"
        )
    links = "".join(f'<a href="page{i:03d}.html">page {i}</a> ' for i in range(BIG_PAGES))
    (html / "index.html").write_text(
        f"<html><head><title>Big test archive</title></head><body>{links}</body></html>"
    )
    (html / "big.bin").write_bytes(rnd.randbytes(BIG_BIN_SIZE))
    import base64

    (html / "big.txt").write_bytes(base64.b64encode(rnd.randbytes(BIG_TXT_SIZE * 3 // 4)))
    out = root / "big.zim"
    build_zim_from_dir(html, out, title="Big test archive", fulltext=False)
    return out


JOIN_TIMEOUT = 120


def run_threads(targets, timeout=JOIN_TIMEOUT):
    """Run each callable in its own thread, all released together by a
    barrier; re-raise the first failure; a thread still running after
    timeout seconds fails the test (a stall is a bug too)."""
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(fn,), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {timeout} s: {stuck}"
    if errors:
        raise errors[0]
