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
Ctrl-C).  Standard library only.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Sequence

from libzim import ZimError

from .capture import quiet
from .errors import CLIError, one_line, print_error
from .parser import build_parser


def silence_stdout() -> None:
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
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and getattr(args, "command", None) != "bench":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
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
        print_error(e.message)
        return e.code
    except ZimError as e:
        print_error(one_line(e))
        return 1
    except KeyboardInterrupt:
        try:
            sys.stderr.write("\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
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
        print_error(one_line(e, getattr(e, "filename", None)) if getattr(e, "filename", None) else one_line(e))
        return 1
    except Exception as e:  # noqa: BLE001 - a bug; keep the promise of one line unless asked
        if os.environ.get("ZIM_DEBUG"):
            raise
        print_error(f"internal error: {type(e).__name__}: {one_line(e)} (set ZIM_DEBUG=1 for a traceback)")
        return 1
