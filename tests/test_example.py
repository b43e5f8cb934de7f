"""examples/usage.py (the usage example of docs/getting-started.md) runs on archives whose main page is not main.html."""

from __future__ import annotations

import subprocess
import sys

from libzim import writer
from libzim.reader import Archive

from conftest import REPO_ROOT, child_python
from writer_support import TextItem, html

USAGE = REPO_ROOT / "examples" / "usage.py"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(USAGE), *map(str, args)], capture_output=True, text=True,
                          timeout=120, **child_python())


def build(path, main_path: str | None) -> None:
    with writer.Creator(path).config_indexing(True, "eng") as c:
        for name in ("home.html", "other.html"):
            c.add_item(TextItem(name, name, html(f"the event loop of {name}", name)))
        if main_path is not None:
            c.set_mainpath(main_path)


def test_usage_defaults_to_the_main_entry(tmp_path):
    path = tmp_path / "home.zim"
    build(path, "home.html")
    with Archive(path) as a:
        target = a.main_entry.get_item().path
    assert target == "home.html"
    proc = run(path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.endswith(f"-> {target}: text/html, {len(html('the event loop of home.html', 'home.html'))} bytes")


def test_usage_without_main_entry_shows_an_article(tmp_path):
    path = tmp_path / "nomain.zim"
    build(path, None)
    proc = run(path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split(": ")[0].split(" -> ")[1] in {"home.html", "other.html"}


def test_usage_missing_entry_is_one_error_line(tmp_path):
    path = tmp_path / "home.zim"
    build(path, "home.html")
    proc = run(path, "main.html")
    assert proc.returncode == 1
    assert proc.stderr == f"error: {path}: no entry with path 'main.html'\n"
