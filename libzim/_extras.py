"""What to tell a user who lacks an optional extra (``serve``, ``dask``, ``mcp``).

The project is not on a package index under its own name, so ``pip install
'libzim-c[serve]'`` is only right for a copy pip installed; a copy run from a
clone needs the clone's path. This finds which one is running and says the
command that works for it, with the extra's packages as the fallback.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
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


def install_hint(extra: str) -> str:
    """The pip command that installs EXTRA for the copy of libzim-c that is running.

    From a clone: ``pip install -e '/path/to/clone[EXTRA]'``; installed: ``pip install
    'libzim-c[EXTRA]'`` (pip finds libzim-c installed and adds only the extra's packages);
    either way followed by the packages themselves, for whoever prefers to install those.
    """
    root = _checkout_root()
    pip = f"{Path(sys.executable).name} -m pip install"
    if root is not None:
        cmd = f"{pip} -e '{root}[{extra}]'"
    else:
        cmd = f"{pip} '{_DIST}[{extra}]'"
    pkgs = [p.split(";")[0].strip() for p in extra_packages(extra)]
    if pkgs:
        cmd += " (or: " + " ".join(f"'{p}'" for p in pkgs) + ")"
    return cmd
