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


# python-libzim's compiled module is `libzim` itself, so its classes and
# functions are also top-level names there (`libzim.Archive`, `libzim.Creator`,
# `libzim.BaseWritingItem` for the writer's Item): the same objects here,
# looked up on first use so `import libzim` does not import the writer.
_TOP_LEVEL = {
    "Archive": ("reader", "Archive"),
    "Entry": ("reader", "Entry"),
    "Item": ("reader", "Item"),
    "get_cluster_cache_current_size": ("reader", "get_cluster_cache_current_size"),
    "get_cluster_cache_max_size": ("reader", "get_cluster_cache_max_size"),
    "set_cluster_cache_max_size": ("reader", "set_cluster_cache_max_size"),
    "Query": ("search", "Query"),
    "Search": ("search", "Search"),
    "SearchResultSet": ("search", "SearchResultSet"),
    "Searcher": ("search", "Searcher"),
    "SuggestionResultSet": ("suggestion", "SuggestionResultSet"),
    "SuggestionSearch": ("suggestion", "SuggestionSearch"),
    "SuggestionSearcher": ("suggestion", "SuggestionSearcher"),
    "get_libzim_version": ("version", "get_libzim_version"),
    "get_versions": ("version", "get_versions"),
    "print_versions": ("version", "print_versions"),
    "BaseWritingItem": ("writer", "Item"),
    "Compression": ("writer", "Compression"),
    "ContentProvider": ("writer", "ContentProvider"),
    "Creator": ("writer", "Creator"),
    "FileProvider": ("writer", "FileProvider"),
    "Hint": ("writer", "Hint"),
    "IndexData": ("writer", "IndexData"),
    "StringProvider": ("writer", "StringProvider"),
    "WritingBlob": ("writer", "Blob"),
    "UUID": ("uuid", "UUID"),
}


def __getattr__(name: str) -> object:
    # libzim.writer (enum, pathlib, datetime, typing, threading) costs more
    # than the rest of `import libzim`; `import libzim.writer`, `from libzim
    # import writer` and `libzim.writer` all still work, importing it then.
    import importlib

    if name == "writer":
        return importlib.import_module("libzim.writer")
    if name in _TOP_LEVEL:
        module, attr = _TOP_LEVEL[name]
        value = getattr(importlib.import_module(module if module == "uuid" else f"libzim.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_TOP_LEVEL, "writer"})


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
