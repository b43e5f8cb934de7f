"""What to tell a user who lacks an optional extra (``serve``, ``dask``, ``mcp``).

The project is on no package index, so ``pip install 'libzim-c[serve]'`` finds
nothing: a copy run from a clone needs the clone's path, an installed copy the
extra's packages by name, and either the pip of the interpreter that is running
(a venv's, or a message about PEP 668 for Debian's system python3). This finds
which one is running and says the command that works for it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import sys
import sysconfig
from pathlib import Path

_DIST = "libzim-c"


def _checkout_root() -> Path | None:
    """The clone this package runs from (its parent holds our pyproject.toml), else None."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if re.search(r'^name\s*=\s*"libzim-c"', text, re.M) else None


def _extra_packages_from_checkout(root: Path, extra: str) -> list[str]:
    import tomllib

    with open(root / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f).get("project", {}).get("optional-dependencies", {})
    return [str(r) for r in extras.get(extra, [])]


def _extra_packages_installed(extra: str) -> list[str]:
    try:
        requires = importlib.metadata.requires(_DIST) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = re.compile(r"""extra\s*==\s*["']%s["']""" % re.escape(extra))
    return [r.split(";")[0].strip() for r in requires if marker.search(r)]


def extra_packages(extra: str) -> list[str]:
    """The requirements of EXTRA as declared by this copy (pyproject.toml or installed metadata)."""
    root = _checkout_root()
    if root is not None:
        return _extra_packages_from_checkout(root, extra)
    return _extra_packages_installed(extra)


def _externally_managed() -> bool:
    """True for an interpreter whose pip refuses to install outside a venv (PEP 668: Debian's
    python3 in 12 and 13 alike), false inside any virtual environment."""
    if sys.prefix != sys.base_prefix:
        return False
    stdlib = sysconfig.get_path("stdlib")
    return bool(stdlib) and os.path.isfile(os.path.join(stdlib, "EXTERNALLY-MANAGED"))


def pip_command() -> str:
    """``PYTHON -m pip install`` for the interpreter that is running, by its full path, so the
    packages land where this copy of libzim-c imports them (not in whatever ``pip`` is first on
    PATH)."""
    return f"{shlex.quote(sys.executable)} -m pip install"


def install_hint(extra: str) -> str:
    """A command that installs EXTRA for the copy of libzim-c that is running.

    From a clone: ``PYTHON -m pip install -e '/path/to/clone[EXTRA]'`` (then the extra's
    packages, for whoever prefers those); an installed copy: its packages by name (libzim-c
    is on no package index, so ``libzim-c[EXTRA]`` would find nothing). PYTHON is the
    running interpreter's path; when that is an externally managed system Python (PEP 668),
    whose pip refuses, the hint says to install into a virtual environment instead.
    """
    root = _checkout_root()
    pkgs = [p.split(";")[0].strip() for p in extra_packages(extra)]
    names = " ".join(f"'{p}'" for p in pkgs)
    if root is not None:
        target = f"-e {shlex.quote(f'{root}[{extra}]')}"
    elif pkgs:
        target = names
    else:
        return f"the {extra} extra's packages (this copy of libzim-c does not list them)"
    if _externally_managed():
        where = "bash tools/bootstrap.sh in the clone makes .venv with the serve extra; " if root else ""
        return (f"{sys.executable} is externally managed (PEP 668): install into a virtual environment, "
                f"{where}python3 -m venv VENV && VENV/bin/python -m pip install {target}")
    cmd = f"{pip_command()} {target}"
    if root is not None and pkgs:
        cmd += f" (or: {names})"
    return cmd
