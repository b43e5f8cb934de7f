"""Check what the sdist and the wheel carry: everything needed, nothing else.

    python3 tools/check_dist.py DIST_DIR      # holds one *.tar.gz and one *.whl

The sdist must hold every tracked file of src/ and libzim/ (a header left out
builds nowhere but here) and the build files; the wheel must hold the package,
its stubs, py.typed and the extension, and no build or bench tooling.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_FILES = {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md"}


def tracked(*dirs: str) -> set[str]:
    out = subprocess.run(["git", "ls-files", *dirs], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def sdist_problems(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    wanted = tracked("src", "libzim") | BUILD_FILES
    problems = [f"sdist lacks {n}" for n in sorted(wanted - names)]
    problems += [f"sdist carries {n}" for n in sorted(names) if n.startswith(("tests/", "tools/", "bench/"))]
    return problems


def wheel_problems(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    package = {n for n in tracked("libzim") if n.endswith((".py", ".pyi", "py.typed"))}
    problems = [f"wheel lacks {n}" for n in sorted(package - names)]
    if not any(n.startswith("libzim/_libzim.") and n.endswith(".so") for n in names):
        problems.append("wheel lacks the extension libzim/_libzim*.so")
    problems += [
        f"wheel carries {n}" for n in sorted(names) if not n.startswith(("libzim/", "libzim_c-"))
    ]
    return problems


def main(argv: list[str]) -> int:
    dist = Path(argv[0])
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        print(f"check_dist: expected one sdist and one wheel in {dist}", file=sys.stderr)
        return 2
    problems = sdist_problems(sdists[0]) + wheel_problems(wheels[0])
    for p in problems:
        print(f"check_dist: {p}", file=sys.stderr)
    if not problems:
        print(f"check_dist: {sdists[0].name} and {wheels[0].name} carry what they should")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
