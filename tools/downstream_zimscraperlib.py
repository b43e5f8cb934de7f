#!/usr/bin/env python3
"""zimscraperlib 4.0.0's ZIM tests (tests/zim of its sdist) against this checkout's libzim.

    python3 tools/downstream_zimscraperlib.py [PYTEST ARGS]

A downstream check: zimscraperlib is python-libzim's main user. Everything of theirs is
fetched at run time into a cache (LIBZIM_C_DOWNSTREAM_CACHE, default
~/.cache/libzim-c/zimscraperlib-4.0.0), nothing is committed:
  - a venv with zimscraperlib's dependencies pinned below (every one but libzim);
  - its sdist, from PyPI's simple API, checked against the sha256 below, unpacked.
zimscraperlib itself runs from the sdist's src/ and libzim from this checkout (built in
place first), both through PYTHONPATH: pytest's header names the files imported, and
the run fails if either comes from anywhere else. Network tests are deselected (list
below, with reasons); expected failures are strict, so a fix shows up as a failure too.
Exit status: pytest's (non-zero on any unexpected failure, pass or skip).

This file is also the pytest plugin of that run (-p tools.downstream_zimscraperlib).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERSION = "4.0.0"
SDIST = f"zimscraperlib-{VERSION}.tar.gz"
SDIST_SHA256 = "5570a9c7efbe117ff27cc20f3fcaa4ed5d305e580a20399ab60375f742dc4281"
SIMPLE_API = "https://pypi.org/simple/zimscraperlib/"

# zimscraperlib 4.0.0's dependencies (its pyproject.toml), minus libzim, pinned within
# its ranges to a set that passes, plus the pytest of its [test] extra.
# pymupdf: 1.24.14 and later extract one line of its test PDF differently
# (test_get_pdf_index_data[2]); 1.24.7 is from zimscraperlib 4.0.0's time.
PINS = [
    "iso639-lang==2.6.3",
    "requests==2.34.2",
    "colorthief==0.2.1",
    "python-resize-image==1.1.20",
    "Babel==2.19.0",
    "python-magic==0.4.27",
    "beautifulsoup4==4.15.0",
    "lxml==5.4.0",
    "optimize-images==1.5.1",
    "regex==2026.11.19",
    "pymupdf==1.24.7",
    "CairoSVG==2.9.1",
    "yt-dlp==2026.10.26",
    "pytest==8.2.2",
    "pytest-mock==3.14.0",
]

# What is not run, in one place. Tests that use one of these fixtures need the network
# (they download from the web, or the fixture does): deselected.
NETWORK_FIXTURES = {
    "small_zim_file": "downloads a ZIM from download.openzim.org",
    "real_zim_file": "downloads a ZIM from download.openzim.org",
    "valid_http_url": "fetches google.com",
    "valid_https_url": "fetches google.com",
    "http_error_url": "fetches github.com",
    "timeout_url": "waits for a connection timeout",
    "png_image_url": "downloads from commons.wikimedia.org",
    "gzip_html_url": "downloads from en.wikipedia.org",
    "gzip_nonhtml_url": "downloads from mirror.download.kiwix.org",
}
# Tests expected to fail here, strict (xfail_strict): a pass fails the run until its
# entry goes. The reason says what would make it pass.
EXPECTED_FAILURES: dict[str, str] = {}
if os.geteuid() == 0:
    EXPECTED_FAILURES["tests/zim/test_fs.py::test_validate_zimfile_creatable_folder_not_writable"] = (
        "run as root: a folder made with mode 0o111 is still writable for root"
    )


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "libzim-c"
    return Path(os.environ.get("LIBZIM_C_DOWNSTREAM_CACHE") or default / f"zimscraperlib-{VERSION}")


def step(what: str, start: float) -> None:
    print(f"downstream: {what} ({time.monotonic() - start:.1f} s)", file=sys.stderr, flush=True)


def ensure_venv(cache: Path) -> Path:
    """The venv with PINS, made with this Python (the in-place build's ABI); reused while
    the Python and the pins are the same."""
    venv = cache / "venv"
    py = venv / "bin" / "python"
    stamp = venv / "libzim-c-pins.json"
    want = json.dumps({"python": sys.version, "executable": sys.executable, "pins": PINS})
    if py.exists() and stamp.exists() and stamp.read_text() == want:
        return py
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *PINS], check=True)
    stamp.write_text(want)
    step(f"venv with zimscraperlib's dependencies in {venv}", t0)
    return py


def ensure_sdist(cache: Path) -> Path:
    """The sdist unpacked; downloaded once (the simple API's JSON names its URL)."""
    tree = cache / f"zimscraperlib-{VERSION}"
    if (tree / "tests" / "zim").is_dir():
        return tree
    t0 = time.monotonic()
    archive = cache / SDIST
    if not archive.exists():
        req = urllib.request.Request(SIMPLE_API, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            files = json.load(r)["files"]
        url = next(f["url"] for f in files if f["filename"] == SDIST)
        with urllib.request.urlopen(url, timeout=120) as r:
            data = r.read()
        if hashlib.sha256(data).hexdigest() != SDIST_SHA256:
            raise SystemExit(f"downstream: {url}: sha256 differs from the pinned {SDIST_SHA256}")
        archive.write_bytes(data)
    with tarfile.open(archive) as tar:
        # The "data" filter (no links out, no absolute paths) where this Python has it.
        tar.extractall(cache, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    step(f"{SDIST} unpacked in {cache}", t0)
    return tree


def main() -> int:
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    # In place, as tools/test.sh tests it; a no-op when the .so is up to date.
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    step("in-place build of libzim", t0)
    py = ensure_venv(cache)
    tree = ensure_sdist(cache)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tree / "src")]),
               LIBZIM_C_DOWNSTREAM_TREE=str(tree))
    # Its tests import modules from elsewhere, e.g. the subprocess of
    # test_make_zim_file_no_file_on_error: PYTHONPATH reaches it too.
    cmd = [str(py), "-m", "pytest", "-p", "tools.downstream_zimscraperlib", "-p", "no:cacheprovider",
           "-o", "xfail_strict=true", "-q", "-rfEsxX", "tests/zim", *sys.argv[1:]]
    t0 = time.monotonic()
    rc = subprocess.run(cmd, cwd=tree, env=env).returncode
    step(f"zimscraperlib {VERSION} tests/zim: exit status {rc}", t0)
    return rc


# -- pytest plugin (loaded in the venv by main's command line) -------------------------

_RUN: dict[str, list[str]] = {"deselected": [], "skipped": []}


def _under(module: Any, where: Path) -> bool:
    return Path(module.__file__).resolve().is_relative_to(where.resolve())


def pytest_configure(config: Any) -> None:
    import libzim
    import pytest
    import zimscraperlib

    tree = Path(os.environ["LIBZIM_C_DOWNSTREAM_TREE"])
    if not _under(libzim, ROOT) or _under(libzim, tree):
        raise pytest.UsageError(f"downstream: libzim imported from {libzim.__file__}, not from {ROOT}")
    if not _under(zimscraperlib, tree / "src"):
        raise pytest.UsageError(f"downstream: zimscraperlib imported from {zimscraperlib.__file__}, not from {tree}")


def pytest_report_header(config: Any) -> list[str]:
    import libzim
    import zimscraperlib

    return [f"libzim: {libzim.__file__}", f"zimscraperlib: {zimscraperlib.__file__}"]


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    import pytest

    keep, dropped, seen = [], [], set()
    for item in items:
        network = sorted(set(getattr(item, "fixturenames", ())) & NETWORK_FIXTURES.keys())
        if network:
            dropped.append(item)
            _RUN["deselected"].append(f"{item.nodeid}: {NETWORK_FIXTURES[network[0]]} (fixture {network[0]})")
            continue
        if item.nodeid in EXPECTED_FAILURES:
            seen.add(item.nodeid)
            item.add_marker(pytest.mark.xfail(reason=EXPECTED_FAILURES[item.nodeid], strict=True))
        keep.append(item)
    # A stale entry (renamed upstream) fails the whole run, but not a narrowed one.
    stale = set(EXPECTED_FAILURES) - seen
    if stale and config.args == ["tests/zim"] and not config.option.keyword:
        raise pytest.UsageError(f"expected failures no longer collected: {sorted(stale)}")
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_runtest_logreport(report: Any) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _RUN["skipped"].append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    terminalreporter.section("downstream: deselected (network)")
    for line in _RUN["deselected"]:
        terminalreporter.line(line)
    if _RUN["skipped"]:
        terminalreporter.line(f"downstream: {len(_RUN['skipped'])} skipped: nothing may be skipped silently", red=True)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _RUN["skipped"] and exitstatus == 0:
        session.exitstatus = 1


if __name__ == "__main__":
    sys.exit(main())
