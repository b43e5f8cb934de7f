"""tools/docs_check.py's parts that need no site build (tools/docs.sh runs the rest).

The differences table cites the test behind each row as tests/FILE.py::NAME;
checking those here keeps a renamed test from leaving the table pointing at
nothing, even where the documentation stage does not run.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import docs_check  # noqa: E402


def test_every_cited_test_exists():
    assert docs_check.check_test_citations() == []
    cited = docs_check.TEST_CITATION.findall((REPO_ROOT / "docs" / "differences.md").read_text())
    assert len(cited) >= 20, "the differences table should cite a test per row"


def test_a_missing_test_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_here():\n    pass\n")
    (tmp_path / "docs" / "page.md").write_text(
        "`tests/test_x.py::test_here` `tests/test_x.py::test_gone` `tests/test_y.py::test_any`\n")
    assert docs_check.check_test_citations(tmp_path) == [
        "docs/page.md: cites tests/test_x.py::test_gone, which is not there",
        "docs/page.md: cites tests/test_y.py, which does not exist",
    ]


@pytest.mark.parametrize("module", [m for m in docs_check.MODULES if m not in ("libzim.dask", "libzim.serve", "libzim.mcp")])
def test_stub_names_hold_the_modules_all(module):
    # What the reference check looks for includes everything the module exports.
    declared, _ = docs_check.stub_names(module)
    assert set(importlib.import_module(module).__all__) <= set(declared)


def test_stub_names_see_re_exports_and_class_members():
    declared, members = docs_check.stub_names("libzim")
    assert declared["Archive"] == "libzim.reader.Archive"
    assert declared["BaseWritingItem"] == "libzim.writer.Item"
    _, reader_members = docs_check.stub_names("libzim.reader")
    assert {"get_entry_by_path", "close", "filename"} <= reader_members["Archive"]
    assert not any(m.startswith("_") for m in reader_members["Archive"])
