#!/usr/bin/env python3
"""Check the built documentation site: every public name is in the API reference, documented.

    python3 tools/docs_check.py SITE_DIR     # after `mkdocs build -d SITE_DIR`
    python3 tools/docs_check.py              # builds the site into a tmp dir first

tools/docs.sh runs it after `mkdocs build --strict`. It fails (exit 1), listing
each problem, when:

- a public name is missing from the generated reference. Public names: each
  public module's __all__ (at run time), plus every name its stub
  (libzim/NAME.pyi) defines or re-exports (`X as X`), plus, for each class
  among them, its members not starting with "_": those the stub declares,
  those the class defines at run time (a member missing from the stub would
  be missing from the reference) and a dataclass's fields. A name is present
  when a reference page has a heading with its anchor (`libzim.reader.Archive`,
  `libzim.reader.Archive.close`); a re-export (`libzim.Archive`) is present when
  its module's page links to its target's heading, which must exist (for a
  standard-library object, such as `libzim.UUID`, a link to its documentation).
- a public name has no docstring in what the reference renders: the objects
  loaded by griffe as mkdocstrings loads them (the stubs, with the
  docstrings filled in from the imported objects by tools/griffe_runtime_docs.py).
  A data attribute (a dataclass field, an enum member, a constant) counts as
  documented when the docstring of its class or module names it (the
  reference shows that text right above it).
- a page cites a test as `tests/FILE.py::NAME` (the differences table links
  each row to its test) and that file has no such test function or class.

mkdocs --strict itself checks links between pages and to headings.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Module -> its reference page (docs/reference/PAGE.md).
MODULES = {
    "libzim": "libzim",
    "libzim.reader": "reader",
    "libzim.search": "search",
    "libzim.suggestion": "suggestion",
    "libzim.version": "version",
    "libzim.writer": "writer",
    "libzim.dask": "dask",
    "libzim.serve": "serve",
    "libzim.mcp": "mcp",
}
TEST_CITATION = re.compile(r"tests/([\w/]+\.py)::(\w+)")


class _Anchors(HTMLParser):
    """Heading ids and link targets of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag) and a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a" and a.get("href"):
            self.hrefs.add(a["href"] or "")


def page_anchors(site: Path, page: str) -> _Anchors:
    parser = _Anchors()
    html = site / "reference" / page / "index.html"
    if html.exists():
        parser.feed(html.read_text(encoding="utf-8"))
    return parser


def stub_names(module: str) -> tuple[dict[str, str | None], dict[str, set[str]]]:
    """The public names a module's stub declares: name -> re-export target (or None),
    and class name -> the public members its body declares."""
    rel = module.replace(".", "/")
    path = ROOT / (rel + ".pyi")
    if not path.exists():
        path = ROOT / rel / "__init__.pyi"
    if not path.exists():
        return {}, {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, str | None] = {}
    members: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = None
            members[node.name] = {n for n in _body_names(node.body) if not n.startswith("_")}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for n in _body_names([node]):
                if n == "__all__":
                    names.update((x, names.get(x)) for x in ast.literal_eval(node.value))  # type: ignore[arg-type]
                else:
                    names[n] = None
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.asname is not None and (alias.asname == alias.name or node.module.startswith("libzim")):
                    # `X as X` (or `Item as BaseWritingItem` from our own modules): a re-export.
                    names[alias.asname] = f"{node.module}.{alias.name}"
    public = {n: t for n, t in names.items() if not n.startswith("_")}
    return public, members


def _body_names(body: list[ast.stmt]) -> list[str]:
    out = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
        elif isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return out


def runtime_members(cls: type) -> set[str]:
    names = {n for n in vars(cls) if not n.startswith("_")}
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
    return names


def griffe_package():
    import griffe

    sys.path.insert(0, str(ROOT / "tools"))
    from griffe_runtime_docs import RuntimeDocstrings

    return griffe.load(
        "libzim",
        search_paths=[str(ROOT)],
        allow_inspection=True,
        extensions=griffe.load_extensions(RuntimeDocstrings()),
    )


def documented(pkg, path: str) -> bool:
    """Whether the reference renders a docstring for path (or its class names it)."""
    try:
        obj = pkg[path.removeprefix("libzim.")] if path != "libzim" else pkg
        if obj.is_alias:
            obj = obj.final_target
    except Exception:  # noqa: BLE001 - unresolvable: reported as undocumented
        return False
    if obj.docstring is not None and obj.docstring.value.strip():
        return True
    if obj.is_attribute and obj.parent is not None:
        doc = obj.parent.docstring.value if obj.parent.docstring else ""
        return re.search(rf"\b{re.escape(obj.name)}\b", doc) is not None
    return False


def check_reference(site: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    pages = {m: page_anchors(site, p) for m, p in MODULES.items()}
    ids = set().union(*(p.ids for p in pages.values()))
    pkg = griffe_package()
    problems: list[str] = []
    checked = 0
    for module, page in MODULES.items():
        try:
            mod = importlib.import_module(module)
        except ImportError as e:  # an optional extra missing: requirements-docs.txt lists them
            problems.append(f"{module}: cannot import it to check its reference ({e})")
            continue
        declared, stub_members = stub_names(module)
        names = dict(declared)
        for n in getattr(mod, "__all__", []):
            names.setdefault(n, None)
        if not pages[module].ids:
            problems.append(f"{module}: no reference page (docs/reference/{page}.md)")
            continue
        for name, target in sorted(names.items()):
            obj = getattr(mod, name, None)
            if inspect.ismodule(obj):
                target = obj.__name__
            full = f"{module}.{name}"
            where = full
            if full not in ids:
                ours = target is not None and target.startswith("libzim")
                if target is None or (ours and target not in ids):
                    problems.append(f"{full}: not in the reference (no heading #{full} on reference/{page})")
                    continue
                if not any(h.endswith("#" + target) for h in pages[module].hrefs):
                    problems.append(f"{full}: reference/{page} does not link to its target {target}")
                    continue
                if not ours:
                    checked += 1  # another library's object (uuid.UUID): the link is its documentation
                    continue
                where = target
            checked += 1
            if not documented(pkg, where):
                problems.append(f"{where}: no docstring in the reference")
            if not inspect.isclass(obj) or where != full:
                continue  # a re-exported class is checked on its own module's page
            for member in sorted(runtime_members(obj) | stub_members.get(name, set())):
                mfull = f"{full}.{member}"
                checked += 1
                if mfull not in ids:
                    problems.append(f"{mfull}: not in the reference (no heading #{mfull} on reference/{page})")
                elif not documented(pkg, mfull):
                    problems.append(f"{mfull}: no docstring in the reference")
    print(f"docs_check: {checked} public names and members looked up in the reference", file=sys.stderr)
    return problems


def check_test_citations(root: Path = ROOT) -> list[str]:
    problems = []
    for md in sorted((root / "docs").rglob("*.md")):
        for file, name in TEST_CITATION.findall(md.read_text(encoding="utf-8")):
            test = root / "tests" / file
            if not test.exists():
                problems.append(f"{md.relative_to(root)}: cites tests/{file}, which does not exist")
            elif not re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b", test.read_text(encoding="utf-8"), re.M):
                problems.append(f"{md.relative_to(root)}: cites tests/{file}::{name}, which is not there")
    return problems


def main(argv: list[str]) -> int:
    if argv:
        site = Path(argv[0])
        problems = check_reference(site)
    else:
        with tempfile.TemporaryDirectory(prefix="libzim-c-docs.") as tmp:
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", tmp], cwd=ROOT, check=True)
            problems = check_reference(Path(tmp))
    problems += check_test_citations()
    for p in problems:
        print(f"docs_check: {p}", file=sys.stderr)
    if problems:
        print(f"docs_check: {len(problems)} problems", file=sys.stderr)
        return 1
    print("docs_check: every public name is in the reference, with a docstring; every cited test exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
