"""Opening archives and reading them for the commands, with errors as CLIError."""

from __future__ import annotations

import os
import sys
from typing import Any

from libzim import ZimError

from .capture import Fd2Capture
from .errors import CLIError, one_line


def open_archive(path: str | os.PathLike[str]) -> Any:
    """Open an Archive for a command; any error becomes one CLIError line naming the file (libzim's
    stderr words are held back, and passed on only when it opened)."""
    from libzim.reader import Archive

    err: Exception | None = None
    with Fd2Capture() as cap:
        try:
            archive = Archive(path)
        except (ZimError, OSError, ValueError, TypeError) as e:
            err = e
    if err is not None:
        raise CLIError(one_line(err, path), kind=type(err).__name__, file=path)
    if cap.text.strip():  # libzim complained but opened it: pass its words on
        sys.stderr.write(cap.text)
    return archive


def read_metadata(archive: Any) -> dict[str, Any]:
    """Metadata as text when it is UTF-8 text, else {"bytes": N}."""
    out: dict[str, Any] = {}
    for key in archive.metadata_keys:
        try:
            raw = bytes(archive.get_metadata(key))
        except ZimError as e:
            out[key] = {"error": one_line(e)}
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            out[key] = {"bytes": len(raw)}
            continue
        if "\x00" in text:
            out[key] = {"bytes": len(raw)}
        else:
            out[key] = text
    return out


def resolve(entry: Any, limit: int = 50) -> Any:
    """Follow redirects (bounded, so a redirect loop cannot hang us)."""
    seen = 0
    while entry.is_redirect:
        seen += 1
        if seen > limit:
            raise CLIError(f"{entry.path}: more than {limit} redirects (redirect loop?)")
        entry = entry.get_redirect_entry()
    return entry
