"""The argument parser: each command module adds its subparser; usage errors on one line."""

from __future__ import annotations

import argparse
from typing import Any

import libzim

from . import bench, check, demo, get, info, mcp, search, serve
from .errors import PROG, CLIError


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line: ``zim: error: ...`` (exit 2), printed by main()."""

    def error(self, message: str) -> Any:
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"see '{PROG} {sub} --help'" if sub else f"see '{PROG} --help'"
        raise CLIError(f"{message} ({hint})", 2, kind="UsageError")


def version_text() -> str:
    """What ``zim --version`` prints: the package's and libzim's versions."""
    try:
        from libzim.version import get_libzim_version

        lz = get_libzim_version()
    except Exception:  # noqa: BLE001
        lz = "?"
    return f"{PROG} (libzim-c) {libzim.__version__}, libzim {lz}"


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``zim`` with every subcommand."""
    parser = Parser(
        prog=PROG,
        description="Inspect, search and check ZIM archives (libzim-c).",
        epilog="Run 'zim COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    info.add_parser(sub)
    search.add_search_parser(sub)
    search.add_suggest_parser(sub)
    get.add_parser(sub)
    check.add_parser(sub)
    bench.add_parser(sub)
    demo.add_parser(sub)
    serve.add_parser(sub)
    mcp.add_parser(sub)
    return parser
