"""``zim get``: an entry's content, byte for byte."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import libzim
from libzim import ZimError

from .archives import open_archive, resolve
from .capture import Fd2Capture
from .errors import PROG, CLIError, one_line


def cmd_get(args: argparse.Namespace) -> int:
    """``zim get``: write an entry's content (redirects followed) to stdout or -o FILE; returns the
    exit status."""
    archive = open_archive(args.archive)
    with Fd2Capture():
        try:
            try:
                entry = archive.get_entry_by_path(args.path)
            except libzim.EntryNotFoundError:
                # `zim info` shows the main entry's own path (e.g. "mainPage"),
                # which lives outside the content namespace: accept it too.
                if not (archive.has_main_entry and archive.main_entry.path == args.path):
                    raise
                entry = archive.main_entry
            entry = resolve(entry)
            item = entry.get_item()
            mimetype = item.mimetype
            content = item.content
        except ZimError as e:
            err: BaseException | None = e
        else:
            err = None
    if err is not None:
        raise CLIError(one_line(err, args.archive), kind=type(err).__name__, file=args.archive)
    if args.output in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        try:
            with open(args.output, "wb") as f:
                f.write(content)
        except OSError as e:
            raise CLIError(f"cannot write {args.output}: {e.strerror or e}", kind=type(e).__name__,
                           file=args.output)
        sys.stderr.write(f"{PROG}: wrote {len(content):,} bytes ({mimetype}) of {entry.path} to {args.output}\n")
    return 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim get`` and its options."""
    p = sub.add_parser("get", help="write an entry's content to stdout or a file",
                       description="Write the content of the entry at PATH (following redirects), byte for byte.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("path", metavar="PATH", help="entry path, e.g. main.html")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_get)
