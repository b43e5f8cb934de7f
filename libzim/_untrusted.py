"""check_untrusted(): open an archive from an untrusted source in a child process first.

Every defect found in libzim 8.1.1 and Xapian 1.4 that this binding can see
coming is checked in-process before the library reaches it (README, "Corrupt
archives"). What remains crashes inside the libraries, where a binding in the
same process cannot catch it: a corrupt Xapian index segfaults in
Xapian::Database's constructor when a searcher is made. So this opens the
archive and both index databases in a short-lived child interpreter and
reports how that went; the caller's process never touches the file with
native code until the child came back alive.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from libzim import ArchiveError  # set before libzim imports reader, which imports this

__all__ = ["check_untrusted"]

# argv: package parent, file name, offset or "-", size or "-". The child's
# clean errors (ZimError) are the real open's to report: only a crash or a
# hang is this check's finding.
_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import libzim
from libzim.reader import Archive
from libzim.search import Searcher
from libzim.suggestion import SuggestionSearcher
kw = {k: int(v) for k, v in zip(("offset", "size"), sys.argv[3:5]) if v != "-"}
try:
    a = Archive(sys.argv[2], **kw)
    if a.has_fulltext_index:
        Searcher(a)
    SuggestionSearcher(a)
except libzim.ZimError:
    pass
"""


def check_untrusted(
    filename: str | os.PathLike[str],
    *,
    offset: int | None = None,
    size: int | None = None,
    timeout: float = 120.0,
) -> None:
    """Raise ArchiveError if opening the archive or its search indexes crashes or hangs.

    Runs the open, the full-text index and the title index in a child
    process. Returns None when the child survived (the archive may still be
    invalid: Archive() then raises its usual one-line ZimError). Open the
    same file, replaced atomically if at all, right after.
    """
    name = os.fsdecode(os.fspath(filename))
    package_parent = str(Path(__file__).resolve().parent.parent)
    cmd = [sys.executable, "-I", "-S", "-c", _CHILD, package_parent, name,
           "-" if offset is None else str(int(offset)), "-" if size is None else str(int(size))]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ArchiveError(f"{name}: unsafe to open: checking it did not finish in {timeout:g} s") from None
    if proc.returncode < 0:
        try:
            how = signal.Signals(-proc.returncode).name
        except ValueError:
            how = f"signal {-proc.returncode}"
        raise ArchiveError(f"{name}: unsafe to open: reading it crashed the checking process ({how})")
    if proc.returncode != 0:
        last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise ArchiveError(f"{name}: cannot check: the checking process failed: {last[0]}")
