"""Errors phrased for the user: one line on stderr, ``zim: error: ...``."""

from __future__ import annotations

import os
import sys
from pathlib import Path


PROG = "zim"


class CLIError(Exception):
    """An error already phrased for the user: printed as one line, then exit ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


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
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def say(level: str, message: str) -> None:
    """``zim: LEVEL: message`` on stderr; a closed or broken stderr is not an error of its own."""
    try:
        sys.stderr.write(f"{PROG}: {level}: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def print_error(message: str) -> None:
    say("error", message)


def warn(message: str) -> None:
    say("warning", message)
