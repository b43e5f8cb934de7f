"""tools/corpus.py's combined archives: several HTML trees in one ZIM.

Built from small trees here (the real one, rust-doc + openjdk-17-doc, takes
minutes and is bench-only); each tree has what broke or would have broken the
real build: a quoted meta-refresh URL, one without "url=", one to a page
that is not in the tree, and a relative symlink to a directory.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import corpus  # noqa: E402

from libzim.reader import Archive  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("zimwriterfs") is None, reason="zimwriterfs (zim-tools) missing")

PAGE = "<!DOCTYPE html><html><head><title>{t}</title></head><body><p>{b}</p></body></html>"
REFRESH = ('<!DOCTYPE html><html><head><title>Redirecting</title>'
           '<meta http-equiv="refresh" content="{c}"></head><body>moved</body></html>')


def make_trees(root: Path) -> tuple[Path, Path]:
    a = root / "src-a"
    (a / "book").mkdir(parents=True)
    (a / "index.html").write_text(PAGE.format(t="Alpha home", b="alpha welcome"))
    (a / "book" / "ownership.html").write_text(PAGE.format(t="Ownership", b="borrowing lifetimes"))
    (a / "quoted.html").write_text(REFRESH.format(c="0;URL='book/ownership.html'"))
    (a / "gone.html").write_text(REFRESH.format(c="0;url=book/missing.html"))
    (a / "part.html").write_text(REFRESH.format(c="0;url=book/ownership.html#moves"))
    # Debian's layout for openjdk-17-doc: the doc root links to another package's tree.
    real = root / "elsewhere" / "api"
    real.mkdir(parents=True)
    (real / "index.html").write_text(PAGE.format(t="Beta API", b="concurrent hash map"))
    (real / "summary.html").write_text(REFRESH.format(c="0;index.html"))
    b = root / "src-b"
    b.mkdir()
    (b / "api").symlink_to("../elsewhere/api")
    (b / "index.html").write_text(PAGE.format(t="Beta home", b="beta welcome"))
    (b / "copyright").write_text("packaging, not documentation")
    return a, b


def test_combined_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = make_trees(tmp_path)
    monkeypatch.chdir("/")  # the symlink must resolve against its own directory, not here
    before = (a / "quoted.html").read_text()
    out = corpus.build_combined_zim(
        [("alpha", a, "index.html", "alpha 1.0"), ("beta", b, "index.html", "beta 2.0")],
        tmp_path / "out" / "combined.zim", title="alpha + beta", name="test_combined",
        description="two trees",
    )
    assert (a / "quoted.html").read_text() == before  # the source tree is never written

    with Archive(out) as zim:
        main = zim.main_entry.get_item() if not zim.main_entry.is_redirect else \
            zim.main_entry.get_redirect_entry().get_item()
        assert main.path == "index.html"
        page = bytes(main.content).decode()
        assert 'href="alpha/index.html"' in page and 'href="beta/index.html"' in page
        assert zim.get_entry_by_path("alpha/book/ownership.html").title == "Ownership"
        assert zim.get_entry_by_path("beta/api/index.html").title == "Beta API"  # through the link
        quoted = zim.get_entry_by_path("alpha/quoted.html")
        assert quoted.is_redirect
        assert quoted.get_redirect_entry().path == "alpha/book/ownership.html"
        part = zim.get_entry_by_path("alpha/part.html")  # a redirect cannot keep its fragment
        assert part.is_redirect and part.get_redirect_entry().path == "alpha/book/ownership.html"
        summary = zim.get_entry_by_path("beta/api/summary.html")
        assert summary.is_redirect and summary.get_redirect_entry().path == "beta/api/index.html"
        gone = zim.get_entry_by_path("alpha/gone.html")  # kept as a page, without its refresh
        assert not gone.is_redirect and "refresh" not in bytes(gone.get_item().content).decode()
        assert not zim.has_entry_by_path("beta/copyright")
        assert zim.has_fulltext_index


def test_combined_path_names_every_package_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"rust-doc": "1.63.0+dfsg1-2", "openjdk-17-doc": "17.0.21~deb12u1"}
    monkeypatch.setattr(corpus, "package_version", versions.get)
    path = corpus.combined_doc_zim_path("rustjava", cache_dir=tmp_path)
    assert path.parent == tmp_path
    assert path.name == "rustjava__rust-doc_1.63.0+dfsg1-2+openjdk-17-doc_17.0.21_deb12u1__f1.zim"
    versions["rust-doc"] = "1.64.0-1"  # an upgrade rebuilds
    assert corpus.combined_doc_zim_path("rustjava", cache_dir=tmp_path) != path
    monkeypatch.setattr(corpus, "package_version", lambda p: None)
    with pytest.raises(RuntimeError, match="apt-get install -y rust-doc"):
        corpus.combined_doc_zim_path("rustjava", cache_dir=tmp_path)
