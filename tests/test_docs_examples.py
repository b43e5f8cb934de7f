"""Every code example of the documentation runs, as written.

The pages of docs/ show Python only as copies of files the tests run, each
block after a line naming its file (`<!-- docs/examples/NAME.py, kept equal to
the file by tests/test_docs_examples.py -->`) and checked here to equal it, so
the pages read whole as Markdown on a forge too; each such
file is run here (examples/serve_mount.py, a server, by the test named in
ELSEWHERE) against an archive written by the writing example itself, and its
output checked. The README's example, which GitHub shows without includes, is
taken from README.md and run the same way.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, child_python

DOCS = REPO_ROOT / "docs"
EXAMPLES = DOCS / "examples"
# Example file -> strings its output must hold (run with the written archive).
RUN_HERE = {
    "docs/examples/read_archive.py": ["3 entries, main page: home", "title: My archive", "Event loop text/html",
                                      "The event loop runs callbacks.", "  parser Parser"],
    "docs/examples/search_threads.py": ["'event loop': [('loop', 100)", "<b>Event</b> <b>loop</b>",
                                        "suggestion: parser Parser"],
    "docs/examples/article_text.py": ["The event loop runs callbacks.", "parser Parser\nThe parser reads the event stream."],
    "docs/examples/pickling.py": ["bytes pickled", "['loop', 'home']", "b'<html><head><title>Event loop</title>"],
    "docs/examples/dask_library.py": ["'loop', 100, '<b>Event</b> <b>loop</b>", "failures: []"],
    "docs/examples/dask_parquet.py": ["loop | Event loop / The event loop runs callbacks.",
                                      "failures: ['missing: ArchiveError: "],
    "examples/usage.py": ["-> home: text/html", "loop Event loop 100", "failed checks: none"],
}
WRITER = "docs/examples/write_archive.py"
# Included by a page, run by another test (a server: tests/test_serve.py mounts it).
ELSEWHERE = {"examples/serve_mount.py": "tests/test_serve.py"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$",
                   re.M | re.S)
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
# The line before an example's block names the file it is a copy of.
MARKER = re.compile(r"^<!-- (\S+\.py), kept equal to the file by tests/test_docs_examples\.py -->$")


def run(path: Path, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                          timeout=120, **child_python())


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "example.zim"
    proc = run(REPO_ROOT / WRITER, path)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {path}" in proc.stdout
    return path


@pytest.mark.parametrize("example", sorted(RUN_HERE))
def test_example_runs(archive, example, tmp_path):
    args: list[object] = [archive]
    if example.endswith(("dask_library.py", "dask_parquet.py")):
        pytest.importorskip("distributed")
    if example.endswith("dask_parquet.py"):
        pytest.importorskip("pyarrow")
        # An output folder first; a missing archive beside the good one shows a failure row.
        args = [tmp_path / "parquet", archive, tmp_path / "missing.zim"]
    proc = run(REPO_ROOT / example, *args)
    assert proc.returncode == 0, proc.stderr
    for expected in RUN_HERE[example]:
        assert expected in proc.stdout, f"{example}: {expected!r} not in its output:\n{proc.stdout}"


def test_writing_example_leaves_no_file_when_the_block_raises(tmp_path):
    # What the writing example's last comment says: an exception in the block leaves no file.
    out = tmp_path / "out.zim"
    code = (REPO_ROOT / WRITER).read_text().replace('creator.set_mainpath("home")', 'raise SystemExit(3)')
    script = tmp_path / "write_fails.py"
    script.write_text(code)
    proc = run(script, out)
    assert proc.returncode == 3, proc.stderr
    assert not out.exists()


def python_blocks(text: str) -> list[str]:
    return [m["body"] for m in FENCE.finditer(text) if m["info"].strip().split(" ")[:1] in (["python"], ["py"])]


def marked_python_blocks(text: str) -> list[tuple[str | None, str]]:
    """(the example file the marker line before it names, or None; the body) per python block."""
    out = []
    for m in FENCE.finditer(text):
        if m["info"].strip().split(" ")[:1] not in (["python"], ["py"]):
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before)
        out.append((marker[1] if marker else None, m["body"]))
    return out


def test_every_python_block_in_the_docs_is_a_tested_file_as_it_is():
    # Pages read as Markdown on a forge too, where an include line would show as
    # itself (issue 31): each example is inlined, and must equal the file the tests run.
    tested = {*RUN_HERE, WRITER, *ELSEWHERE}
    pages = sorted(DOCS.rglob("*.md"))
    assert pages, "no pages under docs/"
    problems, shown = [], set()
    for page in pages:
        where = page.relative_to(REPO_ROOT)
        for example, body in marked_python_blocks(page.read_text(encoding="utf-8")):
            if example is None:
                problems.append(f"{where}: a python block without the line naming its file before it:\n{body}")
            elif example not in tested:
                problems.append(f"{where}: shows {example}, which no test runs")
            elif body != (REPO_ROOT / example).read_text(encoding="utf-8"):
                problems.append(f"{where}: its copy of {example} differs from the file: copy the file in again")
            else:
                shown.add(example)
    assert not problems, "\n".join(problems)
    assert shown, "no example found in the pages"


def test_no_page_uses_include_lines():
    for page in sorted(DOCS.rglob("*.md")):
        for body in python_blocks(page.read_text(encoding="utf-8")):
            assert not any(INCLUDE.match(line) for line in body.splitlines()), f"{page}: an include line"


def test_every_example_file_is_run():
    files = {f"docs/examples/{p.name}" for p in EXAMPLES.glob("*.py")}
    assert files, "no examples under docs/examples/"
    assert files <= {*RUN_HERE, WRITER}, f"not run by this test: {sorted(files - {*RUN_HERE, WRITER})}"
    for example, test in ELSEWHERE.items():
        assert Path(example).stem in (REPO_ROOT / test).read_text(), f"{test} does not run {example}"


def test_readme_example_runs(archive, tmp_path):
    blocks = python_blocks((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "README.md should hold one python example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0])
    proc = run(script, archive)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"home text/html {len(bytes(_content(archive, 'home')))}"
    assert any(line.startswith("loop Event loop 100 <b>Event</b> <b>loop</b>") for line in out), proc.stdout


def _content(path: Path, entry: str) -> bytes:
    from libzim.reader import Archive

    with Archive(path) as a:
        return bytes(a.get_entry_by_path(entry).get_item().content)
