"""The install hint for a missing extra names a command that works for the running copy."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import libzim

CODE = "from libzim._extras import install_hint; print(install_hint('serve')); print(install_hint('nosuch'))"


def _run(package_parent: Path, cwd: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    out = subprocess.run([sys.executable, "-c", CODE], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_a_clone_gets_its_own_path(tmp_path):
    # A copy of the package beside a pyproject.toml naming libzim-c stands for a clone.
    clone = tmp_path / "my clone"
    shutil.copytree(Path(libzim.__file__).parent, clone / "libzim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (clone / "pyproject.toml").write_text(
        '[project]\nname = "libzim-c"\n[project.optional-dependencies]\nserve = ["starlette>=0.37", "uvicorn"]\n')
    serve, nosuch = _run(clone, tmp_path)
    assert f"-m pip install -e '{clone}[serve]'" in serve
    assert "(or: 'starlette>=0.37' 'uvicorn')" in serve
    assert nosuch.endswith(f"-m pip install -e '{clone}[nosuch]'")


def test_an_installed_copy_gets_the_distribution_name(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(Path(libzim.__file__).parent, site / "libzim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    serve, _ = _run(site, tmp_path)
    assert "-m pip install 'libzim-c[serve]'" in serve
    assert "-e " not in serve
