"""MkDocs hooks for the documentation site (mkdocs.yml's `hooks:`).

The benchmark pages show the charts and tables that bench/ writes into
bench/results/. Copying them into docs/ would leave two copies to keep equal
(and large PNGs twice in the repository), and a symlink would also pull every
results file into the page tree; instead this adds bench/results/*.png and
*.md to the site as files under bench-results/, read from where they are.
A page links them as `bench-results/NAME` (relative to docs/), and mkdocs
checks those links like any other.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def on_files(files: Files, config, **kwargs) -> Files:
    for path in sorted(RESULTS.glob("*")):
        if path.suffix in {".png", ".md"}:
            files.append(File.generated(config, f"bench-results/{path.name}", abs_src_path=str(path)))
    return files
