"""Shared fixtures for the reader tests.

The test archives live in ../shared/zim-testing-suite (read-only, written by
other people's tools). If that directory is missing the whole suite fails at
collection: a reader test suite that silently skips its data proves nothing.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SUITE = REPO_ROOT.parent / "shared" / "zim-testing-suite"

if not (SUITE / "nons" / "small.zim").is_file() or not (SUITE / "withns" / "small.zim").is_file():
    raise RuntimeError(
        f"ZIM test data not found at {SUITE} (expected nons/ and withns/ with small.zim): "
        "the reader tests need ../shared/zim-testing-suite next to the repository"
    )

# Import the extension from this work tree (the lead builds it in place).
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import libzim  # noqa: E402
import libzim.reader  # noqa: E402

if not Path(libzim.__file__).resolve().is_relative_to(REPO_ROOT):
    raise RuntimeError(f"tests import libzim from {libzim.__file__}, not from {REPO_ROOT}")

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
    from libzim._corpus import build_zim_from_dir

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
