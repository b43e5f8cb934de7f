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
    # Issue 39: the key names the folder; the file keeps the short name books are served by.
    assert path.parent.parent == tmp_path
    assert path.parent.name == "rustjava__rust-doc_1.63.0+dfsg1-2+openjdk-17-doc_17.0.21_deb12u1__f2"
    assert path.name == "rustjava.zim"
    versions["rust-doc"] = "1.64.0-1"  # an upgrade rebuilds
    assert corpus.combined_doc_zim_path("rustjava", cache_dir=tmp_path) != path
    monkeypatch.setattr(corpus, "package_version", lambda p: None)
    with pytest.raises(RuntimeError, match="apt-get install -y rust-doc"):
        corpus.combined_doc_zim_path("rustjava", cache_dir=tmp_path)


def make_linked_tree(root: Path) -> Path:
    """python3-doc's layout in small: the page's scripts are symlinks out of the tree
    (relative, as Debian makes them, and absolute), beside a dangling one."""
    js = root / "usr-share-javascript" / "jquery"
    js.mkdir(parents=True)
    (js / "jquery.js").write_text("/* jquery */ window.jq = 1;")
    (root / "elsewhere.js").write_text("/* absolute */")
    (root / "outside.html").write_text(PAGE.format(t="Outside", b="not in the tree"))
    tree = root / "doc" / "html"
    (tree / "_static").mkdir(parents=True)
    (tree / "_static" / "jquery.js").symlink_to("../../../usr-share-javascript/jquery/jquery.js")
    (tree / "_static" / "abs.js").symlink_to(root / "elsewhere.js")
    (tree / "_static" / "gone.js").symlink_to("../../../usr-share-javascript/absent.js")
    (tree / "_static" / "loop").symlink_to("..")  # a directory link back up: never followed forever
    (tree / "guide").mkdir()
    (tree / "guide" / "index.html").write_text(PAGE.format(t="Guide", b="guide text"))
    (tree / "index.html").write_text(
        '<!DOCTYPE html><html><head><title>Linked</title>'
        '<script src="_static/jquery.js"></script><script src=\'_static/abs.js\'></script>'
        '<script src=_static/gone.js></script><link rel="stylesheet" href="_static/missing.css">'
        '</head><body><p>linked scripts</p><a href="guide/">guide</a> <a href="#top">top</a>'
        '<a href="https://example.org/x.html">far</a> <a href="mailto:a@b.c">mail</a>'
        '<a href="../../outside.html">up</a> <a href="/rooted.html">rooted</a>'
        '<a href="guide/index.html?x=1#s">again</a><pre>&lt;a href=&quot;text.html&quot;&gt;</pre>'
        '</body></html>')
    return tree


def test_build_follows_symlinks_and_reports_missing_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 31: python3-doc's _static/jquery.js and underscore.js (links into
    # /usr/share/javascript) were left out of the demo archive, and nothing said so.
    tree = make_linked_tree(tmp_path)
    monkeypatch.chdir("/")  # relative links resolve against their own directory, not here
    out = corpus.build_zim_from_dir(tree, tmp_path / "out" / "linked.zim", title="Linked", fulltext=False)
    with Archive(out) as zim:
        assert bytes(zim.get_entry_by_path("_static/jquery.js").get_item().content) == b"/* jquery */ window.jq = 1;"
        assert bytes(zim.get_entry_by_path("_static/abs.js").get_item().content) == b"/* absolute */"
        assert zim.has_entry_by_path("guide/index.html")
        assert not zim.has_entry_by_path("_static/gone.js")
        assert not any(zim.has_entry_by_path(f"_static/loop/{p}") for p in ("index.html", "_static/jquery.js"))
    report = (out.parent / "linked.zim.missing.txt").read_text().splitlines()
    assert report == [
        "../../outside.html\treferenced by index.html\toutside the tree the archive is built from",
        "/rooted.html\treferenced by index.html\tan absolute path: a ZIM has no server root to resolve it against",
        "_static/gone.js\treferenced by index.html\tleft out of the tree: a dangling symlink to "
        "../../../usr-share-javascript/absent.js",
        "_static/missing.css\treferenced by index.html\tnot in the tree (the source never had it)",
    ]
    err = capsys.readouterr().err
    assert f"corpus: linked.zim: 4 referenced files are not in the archive (first: ../../outside.html: " in err


def test_copy_tree_reports_what_it_left_out(tmp_path: Path) -> None:
    tree = make_linked_tree(tmp_path)
    left_out = corpus._copy_tree(tree, tmp_path / "copy")
    assert left_out == [
        ("_static/gone.js", "a dangling symlink to ../../../usr-share-javascript/absent.js"),
        ("_static/loop", f"a symlink back to its own parent {tree} (a loop)"),
    ]
    assert (tmp_path / "copy" / "_static" / "jquery.js").read_text() == "/* jquery */ window.jq = 1;"
    assert not (tmp_path / "copy" / "_static" / "jquery.js").is_symlink()


def test_a_tree_with_everything_referenced_reports_nothing(tmp_path: Path) -> None:
    tree = tmp_path / "html"
    tree.mkdir()
    (tree / "index.html").write_text('<html><head><title>t</title></head><body><a href="b.html">b</a></body></html>')
    (tree / "b.html").write_text(PAGE.format(t="B", b="bee"))
    out = corpus.build_zim_from_dir(tree, tmp_path / "ok.zim", title="Fine", fulltext=False)
    assert (tmp_path / "ok.zim.missing.txt").read_text() == ""
    assert corpus.missing_references(tree, corpus.archive_paths(out)) == []


def test_doc_archive_build_is_announced_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 31: the demo's first run was silent for the half minute of its archive build.
    tree = tmp_path / "html"
    tree.mkdir()
    (tree / "index.html").write_text(PAGE.format(t="Docs", b="documentation words"))
    monkeypatch.setattr(corpus, "package_version", lambda p: "1.0-1")
    monkeypatch.setattr(corpus, "debian_doc_html_dir", lambda p: (tree, p))
    said: list[str] = []
    out = corpus.ensure_debian_doc_zim("some-doc", tmp_path / "cache", announce=said.append)
    assert out == tmp_path / "cache" / f"some-doc__some-doc_1.0-1__f{corpus._BUILD_FORMAT}" / "some-doc.zim"
    assert out.is_file()
    assert said == [f"building {out} from {tree} with zimwriterfs, once (about a minute on 2 idle cores, "
                    "a few on a busy machine; the full-text index is most of it)"]
    assert corpus.ensure_debian_doc_zim("some-doc", tmp_path / "cache", announce=said.append) == out
    assert len(said) == 1  # cached: nothing long to announce


def test_an_archive_cached_under_the_old_flat_name_is_moved_into_its_folder(tmp_path, monkeypatch):
    # Issue 39: caches made before the short names are reused, not rebuilt.
    monkeypatch.setattr(corpus, "package_version", lambda p: "1.0-1")
    monkeypatch.setattr(corpus, "debian_doc_html_dir", lambda p: (tmp_path / "nowhere", p))
    key = f"some-doc__some-doc_1.0-1__f{corpus._BUILD_FORMAT}"
    (tmp_path / f"{key}.zim").write_bytes(b"ZIM bytes")
    out = corpus.ensure_debian_doc_zim("some-doc", tmp_path)
    assert out == tmp_path / key / "some-doc.zim"
    assert out.read_bytes() == b"ZIM bytes" and not (tmp_path / f"{key}.zim").exists()
