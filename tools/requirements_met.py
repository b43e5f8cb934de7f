#!/usr/bin/env python3
"""Exit 0 when every requirement in the given files is installed, with its dependencies.

    python3 tools/requirements_met.py requirements-dev.txt

tools/bootstrap.sh runs this first and calls pip only when it exits 1: pip takes
seconds to find that everything is there already; this takes a tenth of one. It
reads only what those files use (names, extras, version specifiers, markers,
-r includes, comments); anything else, or any doubt, is exit 1: pip then decides.
Dependencies are followed through the installed distributions' metadata, so a
missing or outdated dependency of a dependency also sends the run to pip.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a fresh machine: pip's copy
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]


class Unmet(Exception):
    pass


def read(path: Path) -> list[Requirement]:
    out = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            out += read(path.parent / line[3:].strip())
            continue
        if line.startswith("-"):
            raise Unmet(f"{path}: option {line!r} not understood")
        try:
            out.append(Requirement(line))
        except InvalidRequirement as e:
            raise Unmet(f"{path}: {e}") from None
    return out


def check(req: Requirement, extra: str, seen: set[tuple[str, str]]) -> None:
    if req.marker is not None and not req.marker.evaluate({"extra": extra}):
        return
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        raise Unmet(f"{req.name} is not installed") from None
    if not req.specifier.contains(version, prereleases=True):
        raise Unmet(f"{req.name} {version} does not satisfy {req.specifier}")
    # The distribution's own requirements, for no extra and for each extra asked for.
    for want in ("", *sorted(req.extras)):
        key = (canonicalize_name(req.name), want)
        if key in seen:
            continue
        seen.add(key)
        for dep in md.requires(req.name) or ():
            check(Requirement(dep), want, seen)


def main(files: list[str]) -> int:
    try:
        seen: set[tuple[str, str]] = set()
        for f in files:
            for req in read(Path(f)):
                check(req, "", seen)
    except (Unmet, InvalidRequirement, OSError) as e:
        print(f"requirements_met: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
