"""MkDocs hooks for the documentation site (mkdocs.yml's `hooks:`).

The benchmark pages show the charts and tables that bench/ writes into
bench/results/. Copying them into docs/ would leave two copies to keep equal
(and large PNGs twice in the repository), and a symlink would also pull every
results file into the page tree; instead this adds bench/results/*.png and
*.md to the site as files under bench-results/, read from where they are.
A page links them where they are in the repository, `../bench/results/NAME`
from docs/ (`../../bench/results/NAME` from docs/guides/), so the link works
on a forge that shows the Markdown; on_page_markdown rewrites each such link
to the site's copy, `bench-results/NAME` relative to the page, and mkdocs
checks those links like any other.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # mkdocs is a docs requirement; results_link is tested without it
    from mkdocs.structure.files import Files

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
# The target of a Markdown link or image: ](target) or ](target "title").
_LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<rest>[^)]*)\)")


def on_files(files: Files, config, **kwargs) -> Files:
    from mkdocs.structure.files import File

    for path in sorted(RESULTS.glob("*")):
        if path.suffix in {".png", ".md"}:
            files.append(File.generated(config, f"bench-results/{path.name}", abs_src_path=str(path)))
    return files


def results_link(target: str, page_src: str, docs_dir: str) -> str | None:
    """``target``, a link of the page ``page_src`` (relative to docs/), as a link to the
    site's bench-results/ copy when it names a file of bench/results/; else None."""
    if "://" in target or target.startswith("/"):
        return None
    page_dir = Path(docs_dir, page_src).parent
    path = Path(os.path.normpath(page_dir / target))
    if path.parent != RESULTS:
        return None
    return Path(os.path.relpath(Path(docs_dir, "bench-results", path.name), page_dir)).as_posix()


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    def rewrite(m: re.Match[str]) -> str:
        link = results_link(m["target"], page.file.src_uri, config["docs_dir"])
        return m[0] if link is None else f"]({link}{m['rest']})"

    return _LINK.sub(rewrite, markdown)
