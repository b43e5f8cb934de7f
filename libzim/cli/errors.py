"""Errors phrased for the user: one line on stderr, ``zim: error: ...``.

With ``--json`` the line is a JSON object instead, for programs:
``{"error": {"type": "ArchiveError", "message": "...", "file": "x.zim"}}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


PROG = "zim"


class CLIError(Exception):
    """An error already phrased for the user: printed as one line, then exit ``code``."""

    def __init__(self, message: str, code: int = 1, *, kind: str | None = None,
                 file: str | os.PathLike[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.kind = kind  # the exception behind it ("ArchiveError"), for --json
        self.file = file  # the file it is about, for --json


# Set by main() when the command line asks for --json: errors are JSON too.
_json_errors = False


def report_as_json(on: bool) -> None:
    """Report later errors as one JSON object per line (--json) instead of ``zim: error: ...``."""
    global _json_errors
    _json_errors = on


def one_line(exc: BaseException | str, name: str | os.PathLike[str] | None = None) -> str:
    """Collapse an exception message to one line; make sure it names ``name``."""
    if isinstance(exc, BaseException):
        text = str(exc.args[0]) if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
        if not text.strip():
            text = type(exc).__name__
    else:
        text = exc
    text = " ".join(text.split())
    if len(text) > 600:
        text = text[:597] + "..."
    if name is not None:
        name = str(name)
        if name not in text and Path(name).name not in text:
            text = f"{name}: {text}"
    return text


def short(text: str, limit: int = 60) -> str:
    """repr() of a user string, cut short: error lines stay readable."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def plural(n: int, word: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``word``, pluralised unless n is 1 (``plural`` for irregular
    words)."""
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def say(level: str, message: str) -> None:
    """``zim: LEVEL: message`` on stderr; a closed or broken stderr is not an error of its own."""
    try:
        sys.stderr.write(f"{PROG}: {level}: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def print_error(message: str, *, kind: str = "Error", file: str | os.PathLike[str] | None = None) -> None:
    """The error line: ``zim: error: message``, or with --json one JSON object.

    ``kind`` names the exception (ArchiveError, FileNotFoundError, UsageError, ...).
    """
    if not _json_errors:
        say("error", message)
        return
    # ASCII-only JSON: valid whatever stderr's encoding does to other characters.
    obj = {"error": {"type": kind, "message": message, "file": None if file is None else os.fspath(file)}}
    try:
        sys.stderr.write(json.dumps(obj) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def warn(message: str) -> None:
    """Print ``zim: warning: message`` on stderr (a broken stderr is ignored)."""
    say("warning", message)
