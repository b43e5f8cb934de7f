"""The CLI outside a source checkout, as an installed package runs it: the demo
and the benchmark need the checkout's tools/ and bench/, and say so in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import libzim
from conftest import INSTALLED, REPO_ROOT
from libzim.cli.demo import checkout


@pytest.fixture(scope="module")
def installed_copy(tmp_path_factory) -> dict:
    """cwd= and env= for a child python that imports a copy of the package with no checkout around it."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(Path(libzim.__file__).parent, site / "libzim", ignore=shutil.ignore_patterns("__pycache__"))
    return {"cwd": site, "env": dict(os.environ, PYTHONPATH=str(site))}


def zim(kw: dict, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "libzim", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, **kw)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zim: error: "), proc.stderr
    return lines[0]


def test_demo_outside_a_checkout_says_what_to_do(installed_copy):
    line = zim(installed_copy, "demo")
    assert "source checkout" in line and "zim-tools" in line, line
    assert "zim demo ARCHIVE" in line, line  # what works without one


def test_bench_outside_a_checkout_runs_only_the_builtin_one(installed_copy):
    line = zim(installed_copy, "bench", "--quick")
    assert "give ARCHIVE paths" in line, line  # not "running .../bench/run.py"


def test_the_checkout_is_found_only_from_the_in_place_build():
    assert checkout() == (None if INSTALLED else REPO_ROOT)
