"""Terminal and JSON output: bold, wrapping, sizes."""

from __future__ import annotations

import html
import json
import os
import shutil
import sys
import textwrap
from typing import Any


BOLD = "\033[1m"

RESET = "\033[0m"


def stdout_is_tty() -> bool:
    """True if stdout is a terminal (False when it is closed or replaced)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_tty() -> bool:
    """True if stderr is a terminal (False when it is closed or replaced)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def use_bold() -> bool:
    """Whether to print bold: stdout is a terminal, NO_COLOR is unset and TERM is not dumb."""
    return stdout_is_tty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def render_snippet(snippet: str, bold: bool) -> str:
    """libzim snippets are HTML-escaped text with <b>..</b> around matched terms."""
    text = " ".join(snippet.split())
    if bold:
        text = text.replace("<b>", "\x01").replace("</b>", "\x02")
    else:
        text = text.replace("<b>", "").replace("</b>", "")
    return html.unescape(text)


def ansi(text: str) -> str:
    """Turn the \\x01 and \\x02 markers of a text into the terminal's bold on and off sequences."""
    return text.replace("\x01", BOLD).replace("\x02", RESET)


def wrap(text: str, indent: str, bold: bool) -> str:
    """Wrap to the terminal when stdout is one; plain output stays one line per field."""
    if not stdout_is_tty():
        return indent + ansi(text) if bold else indent + text
    width = max(40, shutil.get_terminal_size((100, 24)).columns - 1)
    wrapped = textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)
    return ansi(wrapped) if bold else wrapped


def print_json(obj: Any) -> None:
    """Print obj as indented JSON, UTF-8 whatever the locale."""
    # JSON is UTF-8 whatever the locale says; write the bytes ourselves.
    data = (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def human_size(n: int) -> str:
    """A byte count with thousands separators, and in KiB, MiB, GiB or TiB past 1024."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{n:,} bytes ({size:.1f} {unit})"
        size /= 1024
    return f"{n:,} bytes"  # pragma: no cover


def yes_no(flag: bool) -> str:
    """'yes' for a true flag, 'no' for a false one."""
    return "yes" if flag else "no"
