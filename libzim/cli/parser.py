"""The argument parser: one subparser per command, usage errors on one line."""

from __future__ import annotations

import argparse
from typing import Any

import libzim

from .bench import cmd_bench
from .check import cmd_check
from .demo import DEMO_PACKAGE, cmd_demo
from .errors import PROG
from .get import cmd_get
from .info import cmd_info
from .search import cmd_search, cmd_suggest


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line: ``zim: error: ...`` (exit 2)."""

    def error(self, message: str) -> Any:
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"see '{PROG} {sub} --help'" if sub else f"see '{PROG} --help'"
        self.exit(2, f"{PROG}: error: {message} ({hint})\n")


def version_text() -> str:
    try:
        from libzim.version import get_libzim_version

        lz = get_libzim_version()
    except Exception:  # noqa: BLE001
        lz = "?"
    return f"{PROG} (libzim-c) {libzim.__version__}, libzim {lz}"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Inspect, search and check ZIM archives (libzim-c).",
        epilog="Run 'zim COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("info", help="show an archive's header, counts and metadata",
                       description="Show an archive's size, uuid, entry counts, main entry, indexes, checksum and metadata.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "search",
        help="full-text search across one or more archives",
        description=(
            "Full-text search over every given archive that has a full-text index, with one "
            "Searcher. With --threads/--repeat the search is run many times from several "
            "threads sharing that Searcher, and throughput and latency are printed on stderr."
        ),
    )
    p.add_argument("archives", metavar="ARCHIVE", nargs="+", help="ZIM files to search")
    p.add_argument("query", metavar="QUERY", help="the query (quote it if it has spaces)")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="number of results (default 10)")
    p.add_argument("--snippets", action=argparse.BooleanOptionalAction, default=True,
                   help="include snippets (default: yes)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="run the search from N threads sharing one Searcher (default 1)")
    p.add_argument("--repeat", type=int, default=None, metavar="M",
                   help="run the search M times in all (default: 1, or 20 per thread with --threads)")
    p.add_argument("--json", action="store_true", help="print JSON (snippets keep libzim's <b> tags)")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("suggest", help="title suggestions", description="Title suggestions for a partial title.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("query", metavar="QUERY", help="the beginning of a title, or words in it")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="number of suggestions (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_suggest)

    p = sub.add_parser("get", help="write an entry's content to stdout or a file",
                       description="Write the content of the entry at PATH (following redirects), byte for byte.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("path", metavar="PATH", help="entry path, e.g. main.html")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_get)

    p = sub.add_parser(
        "check", help="verify an archive's integrity",
        description="Run libzim's integrity checks one by one, then the checksum. Exit 1 if any fails.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "bench",
        help="benchmark search throughput",
        description=(
            "In a source checkout without ARCHIVE arguments, run the project's benchmark "
            "(bench/run.py; extra options are passed on to it). Given ARCHIVE paths, or "
            "with --builtin, run a small built-in benchmark: a fixed set of queries, 1 and 2 "
            "threads, without and with snippets, printing searches/s."
        ),
    )
    p.add_argument("archives", metavar="ARCHIVE", nargs="*", help="ZIM files with a full-text index")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--builtin", action="store_true", help="use the built-in benchmark even in a checkout")
    p.add_argument("--threads", default=None, metavar="LIST", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="seconds per configuration (built-in default 1, 0.5 with --quick)")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="results per search (built-in; default 10)")
    p.add_argument("--cache", metavar="DIR", help="where the demo archive is cached (built-in without ARCHIVE)")
    p.add_argument("--json", action="store_true", help="print JSON (built-in benchmark)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "demo",
        help="search the Python documentation from many threads",
        description=(
            f"Build (once, cached) a ZIM of Debian's {DEMO_PACKAGE}, search it for a few queries "
            "with snippets, then measure searches/s from 1 and N threads sharing one Searcher."
        ),
    )
    p.add_argument("--threads", type=int, default=None, metavar="N", help="threads for the throughput run (default: CPUs, 2..8)")
    p.add_argument("--cache", metavar="DIR", help="cache directory for the built archive")
    p.add_argument("--limit", "-n", type=int, default=3, metavar="N", help="results shown per query (default 3)")
    p.add_argument("--duration", type=float, default=2.0, metavar="S", help="seconds per throughput run (default 2)")
    p.set_defaults(func=cmd_demo)
    return parser
