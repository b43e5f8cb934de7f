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


def test_an_installed_copy_gets_packages_not_a_name_no_index_serves(tmp_path, monkeypatch):
    # Issue 39: libzim-c is on no package index; 'libzim-c[serve]' found nothing.
    from libzim import _extras

    monkeypatch.setattr(_extras, "_checkout_root", lambda: None)
    monkeypatch.setattr(_extras, "_externally_managed", lambda: False)
    monkeypatch.setattr(_extras, "extra_packages", lambda extra: ["starlette>=0.37", "uvloop>=0.19; sys_platform != 'win32'"])
    assert _extras.install_hint("serve") == f"{sys.executable} -m pip install 'starlette>=0.37' 'uvloop>=0.19'"
    monkeypatch.setattr(_extras, "extra_packages", lambda extra: [])
    assert _extras.install_hint("serve") == "the serve extra's packages (this copy of libzim-c does not list them)"


def test_the_hint_uses_the_running_interpreter_by_path(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(Path(libzim.__file__).parent, clone / "libzim", ignore=shutil.ignore_patterns("__pycache__"))
    (clone / "pyproject.toml").write_text('[project]\nname = "libzim-c"\n')
    serve, _ = _run(clone, tmp_path)
    assert serve.startswith(f"{sys.executable} -m pip install -e ") or "externally managed" in serve


def test_an_externally_managed_python_is_sent_to_a_venv(monkeypatch):
    # Debian's python3 (12 and 13): pip refuses to install into it (PEP 668).
    from libzim import _extras

    monkeypatch.setattr(_extras, "_checkout_root", lambda: Path("/src/libzim-c"))
    monkeypatch.setattr(_extras, "_externally_managed", lambda: True)
    monkeypatch.setattr(_extras, "extra_packages", lambda extra: ["starlette>=0.37"])
    assert _extras.install_hint("serve") == (
        f"{sys.executable} is externally managed (PEP 668): install into a virtual environment, "
        "bash tools/bootstrap.sh in the clone makes .venv with the serve extra; "
        "python3 -m venv VENV && VENV/bin/python -m pip install -e '/src/libzim-c[serve]'")


def test_externally_managed_is_read_from_the_stdlib_marker(tmp_path, monkeypatch):
    from libzim import _extras

    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    monkeypatch.setattr(_extras.sysconfig, "get_path", lambda name: str(tmp_path))
    assert _extras._externally_managed() is False
    (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
    assert _extras._externally_managed() is True
    monkeypatch.setattr(sys, "prefix", "/some/venv")
    assert _extras._externally_managed() is False
