"""Every relative link of the README and the documentation pages names a file of
the repository, so each one works where the Markdown is read: on a forge as
well as in the site (whose build, `mkdocs build --strict`, checks its own
links; tools/mkdocs_hooks.py maps bench/results/ links to the site's copy)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote

from conftest import REPO_ROOT

# Inline links and images, ](target) or ](target "title"); reference definitions, [x]: target.
LINK = re.compile(r"\]\((?P<t>[^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(?P<r>\S+)", re.M)
FENCE = re.compile(r"^( *)(```+|~~~+).*?^\1\2\s*$", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def relative_links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))  # code is not links
    out = []
    for m in LINK.finditer(text):
        target = m["t"] or m["r"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            continue  # another site, mailto:, a heading of this page
        out.append(target)
    return out


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in relative_links(page):
        path = (page.parent / unquote(target.split("#", 1)[0])).resolve()
        if not (path.is_file() or (path / "index.md").is_file() or (path / "README.md").is_file()):
            broken.append(target)
        elif REPO_ROOT not in path.parents:
            broken.append(f"{target} (outside the repository)")
    return broken


def test_every_relative_link_names_a_file_of_the_repository():
    problems = [f"{page.relative_to(REPO_ROOT)}: {target}" for page in pages() for target in broken_links(page)]
    assert not problems, "links to nothing in the repository:\n" + "\n".join(problems)


def test_the_check_finds_links(tmp_path):
    assert len(relative_links(REPO_ROOT / "README.md")) > 10
    bad = tmp_path / "bad.md"
    bad.write_text("[a](../bench-results/x.md) [b](b.md#x) `[c](nowhere.md)` [d](https://x.org/y) [e](#here)\n")
    (tmp_path / "b.md").write_text("# b\n")
    assert relative_links(bad) == ["../bench-results/x.md", "b.md#x"]
    assert broken_links(bad)[0] == "../bench-results/x.md"  # the site-only form of issue 31


def test_results_links_map_to_the_site_copy():
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    import mkdocs_hooks

    docs = str(REPO_ROOT / "docs")
    assert mkdocs_hooks.results_link("../bench/results/serve.md", "benchmarks.md", docs) == "bench-results/serve.md"
    assert mkdocs_hooks.results_link("../../bench/results/serve.png", "guides/serving.md", docs) == \
        "../bench-results/serve.png"
    assert mkdocs_hooks.results_link("guides/serving.md", "index.md", docs) is None
    assert mkdocs_hooks.results_link("https://x.org/bench/results/a.md", "index.md", docs) is None
