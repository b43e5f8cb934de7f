"""libzim-c: read ZIM archives and search them from many threads.

A drop-in for python-libzim's reader, search, suggestion and version modules,
written as a C extension that releases the GIL around libzim's work.
"""
from libzim._libzim import (
    ArchiveError,
    ClosedError,
    EntryNotFoundError,
    InvalidIndexError,
    NotSupportedError,
    SearchError,
    ZimError,
)
from libzim import reader, search, suggestion, version

__version__ = "0.1.0"

__all__ = [
    "ArchiveError",
    "ClosedError",
    "EntryNotFoundError",
    "InvalidIndexError",
    "NotSupportedError",
    "SearchError",
    "ZimError",
    "reader",
    "search",
    "suggestion",
    "version",
]
