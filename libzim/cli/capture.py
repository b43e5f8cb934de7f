"""What libzim prints straight to file descriptor 2, captured so errors stay one line."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any


class Fd2Capture:
    """Capture what libzim writes straight to file descriptor 2.

    libzim 8 prints some diagnostics itself (``Checksum doesn't match``,
    assertion dumps with a backtrace for corrupt clusters) before throwing the
    exception the extension turns into a one-line Python error.  The CLI
    collects that text so the user sees one clear line (and ``check`` can show
    the reason for a failed check).  Process-wide: only use it while no other
    thread may write to stderr.
    """

    def __init__(self) -> None:
        self.text = ""
        self._saved: int | None = None
        self._tmp: Any = None

    def __enter__(self) -> "Fd2Capture":
        """Start sending file descriptor 2 to a temporary file (a no-op if that fails); returns self."""
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        try:
            self._saved = os.dup(2)
            self._tmp = tempfile.TemporaryFile()
            os.dup2(self._tmp.fileno(), 2)
        except OSError:
            if self._saved is not None:
                os.close(self._saved)
            self._saved = None
            if self._tmp is not None:
                self._tmp.close()
                self._tmp = None
        return self

    def __exit__(self, *exc: object) -> None:
        """Restore file descriptor 2 and keep what was written meanwhile in ``text``."""
        if self._saved is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._saved = None
        try:
            self._tmp.seek(0)
            self.text = self._tmp.read().decode("utf-8", "replace")
        finally:
            self._tmp.close()
            self._tmp = None

    def messages(self) -> list[str]:
        """The captured lines, minus backtrace frames and blank lines."""
        out = []
        for line in self.text.splitlines():
            line = line.strip()
            if not line or line.startswith("/") or line.startswith("["):
                continue
            if line not in out:
                out.append(line)
        return out


class quiet:
    """Run libzim calls with its direct stderr prints captured (see Fd2Capture).

    On an exception the captured text is dropped (the exception says it in one
    line; ZIM_DEBUG=1 keeps it); otherwise it is passed on to stderr.
    """

    def __enter__(self) -> "quiet":
        """Start holding back what is written to file descriptor 2; returns self."""
        self._cap = Fd2Capture().__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Stop holding back; pass the text on to stderr unless the block raised (ZIM_DEBUG=1 passes it
        on anyway)."""
        self._cap.__exit__(None, None, None)
        text = self._cap.text
        if text.strip() and (exc_type is None or os.environ.get("ZIM_DEBUG")):
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
