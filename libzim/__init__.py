"""libzim-c: read ZIM archives and search them from many threads.

A drop-in for python-libzim's reader, search, suggestion, version and writer modules,
written as a C extension that releases the GIL around libzim's work.
"""
import os as _os

# Imported first: the extension's own cluster cache takes its byte budget
# from a ZIM_CLUSTERCACHE the user set (N clusters, N MiB), not from ours below.
from libzim._libzim import (
    ArchiveError,
    ClosedError,
    EntryNotFoundError,
    InvalidIndexError,
    NotSupportedError,
    SearchError,
    WriterError,
    ZimError,
)

# libzim 8.1.1 keeps 16 decompressed clusters per archive, read from this
# variable when an archive opens; a snippet search reads up to 16 articles,
# and with 16 clusters the benchmark's searches spent most of their time
# decompressing the same clusters again (bench/results/snippets.md).  32
# halved that for about 30 MiB more per archive; a user's value is kept.
_os.environ.setdefault("ZIM_CLUSTERCACHE", "32")
from libzim import reader, search, suggestion, version

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # libzim.writer (enum, pathlib, datetime, typing, threading) costs more
    # than the rest of `import libzim`; `import libzim.writer`, `from libzim
    # import writer` and `libzim.writer` all still work, importing it then.
    if name == "writer":
        import importlib

        return importlib.import_module("libzim.writer")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ArchiveError",
    "ClosedError",
    "EntryNotFoundError",
    "InvalidIndexError",
    "NotSupportedError",
    "SearchError",
    "WriterError",
    "ZimError",
    "reader",
    "search",
    "suggestion",
    "version",
    "writer",
]
