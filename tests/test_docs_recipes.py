"""The install recipes of docs/getting-started.md work as written (opt-in: slow).

    LIBZIM_C_TEST_RECIPES=1 python3 -m pytest -q tests/test_docs_recipes.py

Runs the shell blocks of "From a clone, into a venv" and "From an sdist", as
the page gives them, in a `git clone` of this checkout's HEAD with HOME set to
an empty tmp dir (the venv goes to ~/zim-venv). Each compiles the extension
(a minute or two on 2 cores) and the sdist recipe fetches `build` from PyPI,
so the default run skips them. The `apt-get install` line is not run (it needs
root and changes the machine); the packages it names must be installed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(os.environ.get("LIBZIM_C_TEST_RECIPES") != "1",
                                reason="slow (compiles the extension twice); LIBZIM_C_TEST_RECIPES=1 runs it")
PAGE = REPO_ROOT / "docs" / "getting-started.md"


def section_blocks(title: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)


def split_apt(block: str) -> tuple[list[str], str]:
    """The packages of the block's apt-get line, and the block without it."""
    joined = block.replace("\\\n", " ")
    packages, rest = [], []
    for line in joined.splitlines():
        if line.startswith("apt-get install"):
            packages = [w for w in shlex.split(line)[2:] if not w.startswith("-")]
        else:
            rest.append(line)
    return packages, "\n".join(rest)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    root = tmp_path_factory.mktemp("recipes")
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(root / "clone")], check=True)
    (root / "home").mkdir()
    return root


def run(block: str, clone) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["HOME"] = str(clone / "home")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=clone / "clone", env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{block}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_from_a_clone_into_a_venv(clone):
    (block,) = section_blocks("From a clone, into a venv")
    packages, commands = split_apt(block)
    assert "libzim-dev" in packages
    missing = [p for p in packages
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    assert not missing, f"the recipe's packages are not installed here: {missing}"
    out = run(commands, clone)
    import libzim.version

    assert out.strip().splitlines()[-1] == libzim.version.get_libzim_version()


def test_from_an_sdist(clone):
    if not (clone / "home" / "zim-venv").exists():
        test_from_a_clone_into_a_venv(clone)
    (block,) = section_blocks("From an sdist")
    run(block, clone)
    check = "cd ~ && ~/zim-venv/bin/python -c 'import libzim, sys; print(libzim.__file__)'"
    out = run(check, clone)
    assert "site-packages/libzim/__init__.py" in out
