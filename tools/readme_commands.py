#!/usr/bin/env python3
"""Prints the README's set-up commands, taken from its text, for checks that run them.

    python3 tools/readme_commands.py            # both, one per line
    python3 tools/readme_commands.py demo|test  # one of them

The commands are the indented code lines of the README's section "Two commands for
a fresh machine": the first runs the demo, the second the tests. tools/stock_debian.sh
runs exactly these lines in a stock Debian tree, so the README and the check cannot
drift apart; this fails (exit 1, one line) when the section does not hold exactly two.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "## Two commands for a fresh machine"


def commands(text: str) -> list[str]:
    """The 4-space-indented lines of the section whose heading starts with HEADING."""
    start = text.find("\n" + HEADING)
    if start < 0:
        raise ValueError(f"no section starting {HEADING!r}")
    body = text[start + 1:].split("\n", 1)[1]
    end = re.search(r"^#{1,2} ", body, re.M)
    body = body[:end.start()] if end else body
    return [line[4:].rstrip() for line in body.splitlines() if line.startswith("    ") and line.strip()]


def main(argv: list[str]) -> int:
    try:
        cmds = commands(README.read_text(encoding="utf-8"))
        if len(cmds) != 2:
            raise ValueError(f"{len(cmds)} indented command lines in {HEADING!r}, expected 2 (demo, test)")
    except (OSError, ValueError) as e:
        print(f"readme_commands: {README}: {e}", file=sys.stderr)
        return 1
    which = argv[1:] or ["demo", "test"]
    for w in which:
        if w not in ("demo", "test"):
            print(f"readme_commands: unknown command {w!r} (demo or test)", file=sys.stderr)
            return 2
        print(cmds[0] if w == "demo" else cmds[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
