#!/usr/bin/env python3
"""Run python-libzim 3.13.1's own tests against this checkout's libzim.

    python3 tools/peer_suite.py [pytest arguments...]

Nothing of theirs is committed. At run time this fetches, into a cache
directory (LIBZIM_C_PEER_CACHE, default ~/.cache/libzim-c/peer):

- python-libzim's sdist from PyPI (its simple API; the sha256 PyPI lists is
  checked), for tests/test_libzim_{reader,creator,version}.py;
- the archives its reader tests download from GitHub, which is not reachable
  here: libkiwix's test/data/{zimfile.zim, example.zim, corner_cases#&.zim}
  from Debian's libkiwix source package (`apt-get source`, which checks the
  tarball against the archive's signed index), and zim-testing-suite's
  nons/small.zim from ../shared/zim-testing-suite (or LIBZIM_C_TEST_DATA).

tools/peer_plugin.py (a pytest plugin) then serves those files to the tests'
urlretrieve() and turns the entries of tools/peer_xfail.txt into strict
xfails: a listed test that passes fails the run, and so does any failure not
listed. Exit status: pytest's. With LIBZIM_C_TEST_INSTALLED=1 the installed
libzim is tested instead of the checkout's.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "3.13.1"
SDIST = f"libzim-{VERSION}.tar.gz"
TEST_FILES = ("test_libzim_reader.py", "test_libzim_creator.py", "test_libzim_version.py")
KIWIX_SOURCE = "libkiwix/trixie"
KIWIX_ARCHIVES = ("zimfile.zim", "example.zim", "corner_cases#&.zim")
SOURCES_ENTRY = """Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("LIBZIM_C_PEER_CACHE", Path.home() / ".cache" / "libzim-c" / "peer"))


def log(msg: str) -> None:
    print(f"peer_suite: {msg}", file=sys.stderr, flush=True)


def fetch_tests() -> Path:
    """python-libzim's three test files, unpacked from its sdist."""
    dest = CACHE / f"python-libzim-{VERSION}" / "tests"
    if all((dest / name).is_file() for name in TEST_FILES):
        return dest
    req = urllib.request.Request(
        "https://pypi.org/simple/libzim/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310
        files = json.load(r)["files"]
    entry = next(f for f in files if f["filename"] == SDIST)
    log(f"downloading {entry['url']}")
    with urllib.request.urlopen(entry["url"], timeout=120) as r:  # noqa: S310
        data = r.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["hashes"]["sha256"]:
        raise SystemExit(f"peer_suite: {SDIST}: sha256 {digest}, PyPI lists {entry['hashes']['sha256']}")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = Path(tmp) / SDIST
        sdist.write_bytes(data)
        with tarfile.open(sdist) as tar:
            for name in TEST_FILES:
                member = tar.getmember(f"libzim-{VERSION}/tests/{name}")
                (dest / name).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    return dest


def ensure_deb_src() -> None:
    """A deb-src entry with trixie, which carries libkiwix 14 and its test data."""
    listed = subprocess.run(
        ["apt-get", "source", "--print-uris", KIWIX_SOURCE], capture_output=True, text=True
    )
    if "orig.tar" in listed.stdout:
        return
    if os.geteuid() != 0:
        raise SystemExit("peer_suite: no deb-src entry for trixie, and adding one needs root")
    path = Path("/etc/apt/sources.list.d/libzim-c-src.sources")
    log(f"adding {path} and running apt-get update")
    path.write_text(SOURCES_ENTRY)
    subprocess.run(["bash", str(Path(__file__).resolve().parent / "apt.sh"), "update"], check=True)


def fetch_kiwix_archives(data: Path, names: tuple[str, ...] = KIWIX_ARCHIVES) -> None:
    """libkiwix's test/data/NAMES into ``data``, from Debian's libkiwix source package."""
    if all((data / name).is_file() for name in names):
        return
    ensure_deb_src()
    with tempfile.TemporaryDirectory() as tmp:
        # The .dsc and debian.tar.xz 404 on some mirrors while the orig
        # tarball arrives (and apt checks it against the signed Sources
        # index): apt's exit status is not the test, the tarball is.
        proc = subprocess.run(
            ["apt-get", "source", "--download-only", KIWIX_SOURCE],
            cwd=tmp, capture_output=True, text=True,
        )
        tarballs = list(Path(tmp).glob("libkiwix_*.orig.tar.*"))
        if not tarballs:
            raise SystemExit(f"peer_suite: apt-get source {KIWIX_SOURCE} gave no orig tarball:\n{proc.stderr}")
        data.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as tar:
            links: dict[str, str] = {}
            for member in tar.getmembers():
                parts = member.name.split("/")
                if parts[1:3] == ["test", "data"] and len(parts) == 4 and parts[-1] in names:
                    if member.isfile():
                        (data / parts[-1]).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
                    elif member.issym() and "/" not in member.linkname:  # another file there, under this name
                        links[parts[-1]] = f"{parts[0]}/test/data/{member.linkname}"
            for name, target in links.items():
                (data / name).write_bytes(tar.extractfile(tar.getmember(target)).read())  # type: ignore[union-attr]
    missing = [n for n in names if not (data / n).is_file()]
    if missing:
        raise SystemExit(f"peer_suite: {tarballs[0].name} lacks test/data/{missing}")


def small_zim() -> Path:
    base = Path(os.environ.get("LIBZIM_C_TEST_DATA", ROOT.parent / "shared" / "zim-testing-suite"))
    path = base / "nons" / "small.zim"
    if not path.is_file():
        raise SystemExit(f"peer_suite: {path} not found (set LIBZIM_C_TEST_DATA)")
    return path


def main() -> int:
    tests = fetch_tests()
    data = CACHE / "data"
    fetch_kiwix_archives(data)
    shutil.copyfile(small_zim(), data / "small.zim")
    env = dict(os.environ, LIBZIM_C_PEER_DATA=str(data), LIBZIM_C_PEER_ROOT=str(ROOT))
    paths = [str(ROOT / "tools")]
    if os.environ.get("LIBZIM_C_TEST_INSTALLED") != "1":
        paths.insert(0, str(ROOT))
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p])
    cmd = [
        sys.executable, "-m", "pytest", "-p", "peer_plugin", "-p", "no:cacheprovider",
        "--rootdir", str(tests), "-q", "-rfEX",
        *[str(tests / name) for name in TEST_FILES], *sys.argv[1:],
    ]
    # From a directory of the cache: the checkout's own tests/conftest.py
    # and pyproject's pytest settings are not ours to apply to their suite.
    return subprocess.run(cmd, cwd=tests, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
