"""What libzim.dask's two jobs share: the library search (library.py and
library_worker.py) and read_archives (frame.py) report an archive that gives
no answer the same way, as (path, kind, message)."""

from __future__ import annotations

import os

import libzim


def _classify(path: str, exc: BaseException) -> tuple[str, str, str]:
    if isinstance(exc, libzim.SearchError):
        kind = "no-index"
    elif isinstance(exc, libzim.ArchiveError):
        kind = "corrupt" if os.path.exists(path) or os.path.exists(path + "aa") else "missing"
    else:
        kind = "error"
    return (path, kind, f"{type(exc).__name__}: {exc}".splitlines()[0])

