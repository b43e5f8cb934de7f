"""Every GIL-progress probe is marked @gil_only, so that it skips, with the
reason, on a free-threaded build (conftest.gil_only): there is no GIL whose
release it could measure, and unmarked it fails there (issue 31, item 11:
test_text.py's two probes were unmarked, and the free-threaded recipe failed
on them)."""

from __future__ import annotations

import ast
from pathlib import Path

PROBES = {"assert_releases_gil", "held_fractions"}  # gilprobe's measuring calls
TESTS = Path(__file__).resolve().parent


def _calls_probe(fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) in PROBES
               for n in ast.walk(fn))


def _marked(fn: ast.FunctionDef) -> bool:
    return any(getattr(d, "id", None) == "gil_only" for d in fn.decorator_list)


def test_every_gil_probe_is_gil_only() -> None:
    probes, unmarked = [], []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_") and _calls_probe(fn):
                probes.append(f"{path.name}::{fn.name}")
                if not _marked(fn):
                    unmarked.append(f"{path.name}::{fn.name}")
    assert len(probes) >= 8, probes  # the probes this looks for are found at all
    assert not unmarked, f"GIL probes without @gil_only: {unmarked}"
