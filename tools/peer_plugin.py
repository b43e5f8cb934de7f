"""pytest plugin for python-libzim's own tests (run by tools/peer_suite.py).

- Their reader tests download archives with urllib.request.urlretrieve from
  GitHub; this serves the copies peer_suite.py fetched (LIBZIM_C_PEER_DATA)
  instead, by the URL's file name, and refuses any other URL.
- tools/peer_xfail.txt lists the tests expected to fail, each with its
  reason: they become strict xfails (a listed test that passes fails the
  run); an entry that names no collected test fails the run too.
- The libzim tested must be this checkout's (LIBZIM_C_PEER_ROOT), or with
  LIBZIM_C_TEST_INSTALLED=1 an installed one, never the checkout's.
"""
from __future__ import annotations

import os
import shutil
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

DATA = Path(os.environ["LIBZIM_C_PEER_DATA"])
ROOT = Path(os.environ["LIBZIM_C_PEER_ROOT"])
XFAIL_LIST = Path(__file__).with_name("peer_xfail.txt")


def _urlretrieve(url: str, filename: Any = None, *args: Any, **kwargs: Any) -> tuple[str, None]:
    name = urllib.parse.unquote(os.path.basename(urllib.parse.urlparse(url).path))
    source = DATA / name
    if not source.is_file() or filename is None:
        raise OSError(f"peer_plugin: no local copy of {url} (no network to GitHub here)")
    shutil.copyfile(source, filename)
    return str(filename), None


# Before their modules are imported: they bind the name at import.
urllib.request.urlretrieve = _urlretrieve  # type: ignore[assignment]


def read_xfails(major: int, version: str) -> dict[str, str]:
    """{test id: reason} for this libzim major from peer_xfail.txt's
    `MAJORS TEST_ID # reason` lines; fails on a major not measured."""
    out: dict[str, str] = {}
    measured: set[int] = set()
    for line in XFAIL_LIST.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("measured "):
            measured = {int(m) for m in line.split()[1:]}
            continue
        entry, sep, reason = line.partition(" # ")
        fields = entry.split()
        if not sep or not reason.strip() or len(fields) != 2:
            raise pytest.UsageError(f"{XFAIL_LIST}: not `MAJORS TEST_ID # reason`: {line!r}")
        if major in {int(m) for m in fields[0].split(",")}:
            out[fields[1]] = reason.strip()
    if major not in measured:
        raise pytest.UsageError(
            f"{XFAIL_LIST}: no expectations measured for libzim {version}: run the suite, "
            "check each failure, and list it"
        )
    return out


def pytest_configure(config: pytest.Config) -> None:
    import libzim

    where = Path(libzim.__file__).resolve().parent
    installed = os.environ.get("LIBZIM_C_TEST_INSTALLED") == "1"
    if installed == (where == ROOT / "libzim"):
        raise pytest.UsageError(f"peer suite imports libzim from {where} (LIBZIM_C_TEST_INSTALLED={installed})")
    import libzim.version

    version = libzim.version.get_libzim_version()
    config._libzim_peer_xfails = read_xfails(int(version.split(".")[0]), version)  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xfails: dict[str, str] = config._libzim_peer_xfails  # type: ignore[attr-defined]
    seen = set()
    for item in items:
        test_id = f"{Path(item.location[0]).name}::{item.name}"
        if test_id in xfails:
            seen.add(test_id)
            item.add_marker(pytest.mark.xfail(reason=xfails[test_id], strict=True))
    # With -k or a test id on the command line only some are collected.
    if len(items) >= 100:
        stale = sorted(set(xfails) - seen)
        if stale:
            raise pytest.UsageError(f"{XFAIL_LIST} names tests that do not exist: {stale}")
