"""``zim check``: libzim's integrity checks one by one, then the checksum."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from typing import Any

from libzim import ZimError

from .archives import open_archive
from .capture import Fd2Capture
from .errors import one_line
from .output import print_json, stderr_is_tty
from .workers import call_in_thread


class ProgressBar:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.enabled = stderr_is_tty()
        self.stream: Any = None
        if self.enabled:
            try:  # a private copy: fd 2 itself is redirected while libzim runs
                self.stream = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
            except OSError:
                self.enabled = False

    def draw(self, done: int, label: str, elapsed: float) -> None:
        """Redraw the bar: done of total steps, the step's label and the seconds elapsed."""
        if not self.enabled:
            return
        width = 24
        filled = int(width * done / self.total) if self.total else width
        line = f"[{'#' * filled}{'-' * (width - filled)}] {done}/{self.total} {label} {elapsed:.1f} s"
        self.stream.write("\r" + line + "\033[K")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the bar's line on the terminal (when the bar is enabled)."""
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self) -> None:
        """Erase the bar and close its terminal stream; later calls do nothing."""
        if self.enabled:
            self.clear()
            self.stream.close()
            self.enabled = False


def run_validate(archive: Any, name: str, bar: ProgressBar, i: int) -> dict[str, Any]:
    """One integrity check, with the reason libzim printed when it fails."""
    t0 = time.perf_counter()
    error: str | None = None
    with Fd2Capture() as cap:
        try:
            failed = call_in_thread(functools.partial(archive.validate, [name]), functools.partial(bar.draw, i, name))
        except ZimError as e:
            failed, error = [name], one_line(e)
    ok = name not in failed
    msg = error or ("; ".join(cap.messages()) if not ok else "")
    if name == "checksum" and not msg:
        if not archive.has_checksum:
            msg = "the archive stores no checksum"
        elif ok:
            msg = f"checksum {archive.checksum} matches"
    result: dict[str, Any] = {"name": name, "ok": ok, "seconds": round(time.perf_counter() - t0, 6)}
    if msg:
        result["message"] = msg
    return result


def print_result(res: dict[str, Any]) -> None:
    """Print one check's line: name, ok or FAILED, seconds, and its message if any."""
    status = "ok" if res["ok"] else "FAILED"
    detail = f"  {res['message']}" if res.get("message") else ""
    print(f"  {res['name']:<17} {status:<6} {res['seconds']:7.2f} s{detail}")
    sys.stdout.flush()


def cmd_check(args: argparse.Namespace) -> int:
    """``zim check``: run every integrity check, then the checksum, with a progress bar on a terminal;
    returns the exit status (1 if any failed)."""
    from libzim.reader import INTEGRITY_CHECKS

    archive = open_archive(args.archive)
    # The structural checks first, then the checksum once, last: it reads the whole file
    # (libzim's own order puts it first, and Archive.check() would read the file again).
    names = [n for n in INTEGRITY_CHECKS if n != "checksum"]
    results: list[dict[str, Any]] = []
    bar = ProgressBar(len(names) + 1)
    if not args.json:
        print(f"Checking {archive.filename} ({len(names)} integrity checks, then the checksum)")
        sys.stdout.flush()
    try:
        for i, name in enumerate([*names, "checksum"]):
            bar.draw(i, name, 0.0)
            res = run_validate(archive, name, bar, i)
            results.append(res)
            if not args.json:
                bar.clear()
                print_result(res)
    finally:
        bar.close()

    failed_names = [r["name"] for r in results if not r["ok"]]
    if args.json:
        print_json({"archive": str(archive.filename), "ok": not failed_names, "checks": results})
    elif failed_names:
        print(f"{len(failed_names)} of {len(results)} checks FAILED: {', '.join(failed_names)}")
    else:
        print(f"All {len(results)} checks passed.")
    return 1 if failed_names else 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim check`` and its options."""
    p = sub.add_parser(
        "check", help="verify an archive's integrity",
        description="Run libzim's integrity checks one by one, then the checksum. Exit 1 if any fails.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_check)
