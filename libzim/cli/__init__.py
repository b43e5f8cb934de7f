"""The ``zim`` command line: inspect, search and check ZIM archives.

    zim info ARCHIVE [--json]
    zim search ARCHIVE... QUERY [--limit N] [--no-snippets] [--threads N --repeat M] [--json]
    zim suggest ARCHIVE QUERY [--limit N] [--json]
    zim get ARCHIVE PATH [-o FILE]
    zim check ARCHIVE [--json]
    zim bench [ARCHIVE...] [--quick]
    zim demo [--threads N] [--cache DIR]

Also reachable as ``python -m libzim``.  Errors are reported as one line,
``zim: error: <message>``, with exit status 1 (2 for usage errors, 130 on
Ctrl-C); with --json, as one JSON object on that line:
``{"error": {"type": ..., "message": ..., "file": ...}}``.  Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Sequence

from libzim import ZimError

from .capture import quiet
from .errors import CLIError, one_line, print_error, report_as_json
from .parser import build_parser


def silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    # After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``zim`` and ``python -m libzim``; returns the exit status."""
    try:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    argv = list(sys.argv[1:] if argv is None else argv)
    options = argv[: argv.index("--")] if "--" in argv else argv
    report_as_json("--json" in options)  # before parsing: usage errors too
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and getattr(args, "command", None) != "bench":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except CLIError as e:
        print_error(e.message, kind=e.kind or "UsageError")
        return e.code
    if getattr(args, "command", None) is None:
        parser.print_help(sys.stderr)
        return 2

    try:
        if args.command == "bench":
            code = args.func(args, extra)
        elif args.command in ("info", "get", "suggest"):
            # Single-threaded: libzim's own stderr prints (assertion dumps on
            # corrupt archives) are held back, so an error stays one line.
            with quiet():
                code = args.func(args)
        else:
            code = args.func(args)
        sys.stdout.flush()
        return int(code or 0)
    except CLIError as e:
        if e.code == 2:  # a usage error: about the command line, not a file
            print_error(e.message, kind=e.kind or "UsageError", file=e.file)
        else:
            print_error(e.message, kind=e.kind or "Error", file=e.file or the_archive(args))
        return e.code
    except ZimError as e:
        print_error(one_line(e), kind=type(e).__name__, file=the_archive(args))
        return 1
    except KeyboardInterrupt:
        try:
            sys.stderr.write("\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if "--json" in options:  # a program reading the errors sees why it stopped
            print_error("interrupted", kind="KeyboardInterrupt")
        if threading.active_count() > 1:
            # Worker threads may be deep inside libzim; don't wait for them.
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os._exit(130)
        return 130
    except BrokenPipeError:
        silence_stdout()
        return 141
    except OSError as e:
        name = getattr(e, "filename", None)
        print_error(one_line(e, name) if name else one_line(e), kind=type(e).__name__, file=name)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug; keep the promise of one line unless asked
        if os.environ.get("ZIM_DEBUG"):
            raise
        print_error(f"internal error: {type(e).__name__}: {one_line(e)} (set ZIM_DEBUG=1 for a traceback)",
                    kind="InternalError")
        return 1


def the_archive(args: argparse.Namespace) -> str | None:
    """The one archive a command was given (the file an error is about), else None."""
    archives = getattr(args, "archives", None) or [getattr(args, "archive", None)]
    return archives[0] if len(archives) == 1 else None
