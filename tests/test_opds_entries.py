"""The OPDS entries kept on each book (``Book.rendered``) follow the book's fields:
a first open that learns from the archive, a library file's values applied on reload,
and a reloaded copy of a book, each give the entry written from the new fields."""

from __future__ import annotations

from pathlib import Path

from libzim.serve import opds
from libzim.serve.library import Book
from libzim.serve.libraryfile import _reused


def _book() -> Book:
    return Book(name="ray", title="ray", uuid="0123", path=Path("/nowhere/ray.zim"), complete=False,
                file_says=True)


def test_entry_is_kept_and_the_same_text() -> None:
    b = _book()
    first = opds.entry(b, "", "")
    assert "<title>ray</title>" in first and "<summary></summary>" in first
    assert opds.entry(b, "", "") is first  # kept, not written again
    assert list(b.rendered) == [("opds", "", "", False)]


def test_keys_are_what_else_the_entry_depends_on() -> None:
    b = _book()
    plain, rooted, remote = opds.entry(b, "", ""), opds.entry(b, "/r", "/r"), opds.entry(b, "", None)
    assert 'href="/content/ray"' in plain and 'href="/r/content/ray"' in rooted
    assert "/content/ray" not in remote
    for i in range(10):  # a book keeps at most four; the rest are written every time, still right
        assert f'href="/x{i}/catalog/v2/entry' not in opds.entry(b, f"/x{i}", None)
        assert f"/x{i}/content/ray" in opds.entry(b, "", f"/x{i}")
    assert len(b.rendered) == 4


def test_first_open_replaces_what_was_kept() -> None:
    b = _book()
    before = opds.entry(b, "", "")
    kept = b.rendered
    b.learn({"title": "Ray Charles", "description": "A singer", "article_count": 44, "uuid": "0123"})
    after = opds.entry(b, "", "")
    assert "<title>Ray Charles</title>" in after and "<summary>A singer</summary>" in after
    assert "<articleCount>44</articleCount>" in after and after != before
    assert b.rendered is not kept  # a rendering begun before stores into the old dict


def test_library_file_values_and_a_reloaded_copy() -> None:
    old = _book()
    opds.entry(old, "", "")
    new = _reused(old, Path("/nowhere/ray.zim"), {"title": "Ray (2)", "description": "Reloaded"})
    assert new is not old and new.rendered is not old.rendered
    assert "<title>Ray (2)</title>" in opds.entry(new, "", "")
    assert "<title>ray</title>" in opds.entry(old, "", "")  # the old library's book is unchanged
    old.apply({"description": "Applied"})
    assert "<summary>Applied</summary>" in opds.entry(old, "", "")
