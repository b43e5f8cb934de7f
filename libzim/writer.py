"""Writing ZIM archives (python-libzim's libzim.writer).

`Creator` drives libzim's writer from C (libzim._libzim._Creator) with the GIL
released while libzim works; libzim's worker threads call back into the
Python objects below (content providers, index data) taking the GIL.  The
base classes are plain Python, as in python-libzim, so subclasses behave the
same.

Usage::

    with Creator(pathlib.Path("myfile.zim")) as creator:
        creator.config_verbose(False)   # config_* before entering the block
        creator.add_metadata("Name", b"my name")
        creator.add_item(MyItemSubclass(path, title, mimetype, content))
        creator.set_mainpath(path)
"""
from __future__ import annotations

import atexit
import datetime
import enum
import os
import pathlib
import threading
import weakref
from collections.abc import Generator
from typing import Any, Dict, Optional, Tuple, Union

from libzim import _libzim
from libzim._libzim import _Creator, _WriterBlob

Blob = _WriterBlob

__all__ = [
    "Creator",
    "Compression",
    "Blob",
    "Hint",
    "Item",
    "ContentProvider",
    "FileProvider",
    "StringProvider",
    "IndexData",
]


class Compression(enum.Enum):
    """Compression algorithms available to create ZIM files."""

    none = 0
    zstd = 1


class Hint(enum.Enum):
    """How the creator should handle an item or redirection."""

    COMPRESS = 0
    FRONT_ARTICLE = 1


class ContentProvider:
    """Provides an item's content to the Creator, as one or more Blobs."""

    def __init__(self) -> None:
        self.generator: Optional[Generator[Blob, None, None]] = None

    def get_size(self) -> int:
        """Size of the whole content in bytes (the sum of the fed blobs)."""
        raise NotImplementedError("get_size must be implemented.")

    def feed(self) -> Blob:
        """The next blob of content; an empty blob at the end."""
        if self.generator is None:
            self.generator = self.gen_blob()
        try:
            # libzim reads the blob until the next feed(): keep it.
            self._blob = next(self.generator)
        except StopIteration:
            self._blob = Blob("")
        return self._blob

    def gen_blob(self) -> Generator[Blob, None, None]:
        """Yields the blobs of the content."""
        raise NotImplementedError("gen_blob (ro feed) must be implemented")


class StringProvider(ContentProvider):
    """ContentProvider for one str (encoded as UTF-8) or bytes."""

    def __init__(self, content: Union[str, bytes]) -> None:
        super().__init__()
        self.content = content.encode("UTF-8") if isinstance(content, str) else content

    def get_size(self) -> int:
        return len(self.content)

    def gen_blob(self) -> Generator[Blob, None, None]:
        yield Blob(self.content)


class FileProvider(ContentProvider):
    """ContentProvider for a file, read in chunks of 1 MiB."""

    def __init__(self, filepath: Union[pathlib.Path, str]) -> None:
        super().__init__()
        self.filepath = filepath
        self.size = os.path.getsize(self.filepath)

    def get_size(self) -> int:
        return self.size

    def gen_blob(self) -> Generator[Blob, None, None]:
        bsize = 1048576
        with open(self.filepath, "rb") as fh:
            res = fh.read(bsize)
            while res:
                yield Blob(res)
                res = fh.read(bsize)


class Item:
    """An entry to add with Creator.add_item(): subclass it.

    A subclass may define get_indexdata(): when it is absent or None, libzim
    indexes the content itself (HTML); when it returns a falsy value, the
    item is not indexed; else it returns an IndexData.
    """

    def __init__(self) -> None:
        self._blob: Any = None

    def get_path(self) -> str:
        """Full path of the item: unique in the archive."""
        raise NotImplementedError("get_path must be implemented.")

    def get_title(self) -> str:
        """Title of the item (suggestions, title index)."""
        raise NotImplementedError("get_title must be implemented.")

    def get_mimetype(self) -> str:
        """MIME type of the content."""
        raise NotImplementedError("get_mimetype must be implemented.")

    def get_contentprovider(self) -> ContentProvider:
        """ContentProvider of the whole content."""
        raise NotImplementedError("get_contentprovider must be implemented.")

    def get_hints(self) -> Dict[Hint, int]:
        """Hints for the creator (compression, front article)."""
        raise NotImplementedError("get_hints must be implemented.")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(path={self.get_path()}, title={self.get_title()})"


class IndexData:
    """What to index for an item, when it is not its content: subclass it."""

    def has_indexdata(self) -> bool:
        """Whether there is anything to index."""
        return False

    def get_title(self) -> str:
        """Title to index for the item (instead of its get_title())."""
        raise NotImplementedError("get_title must be implemented.")

    def get_content(self) -> str:
        """Text to index for the item (instead of its HTML content)."""
        raise NotImplementedError("get_content must be implemented.")

    def get_keywords(self) -> str:
        """Space-separated keywords to index."""
        raise NotImplementedError("get_keywords must be implemented.")

    def get_wordcount(self) -> int:
        """Number of words in the content."""
        raise NotImplementedError("get_wordcount must be implemented.")

    def get_geoposition(self) -> Optional[Tuple[float, float]]:
        """(latitude, longitude), or None."""
        return None


# Creations still open at exit are discarded before the interpreter stops
# the threads that libzim's workers would need to call back into Python.
_open: "weakref.WeakSet[Creator]" = weakref.WeakSet()
_open_lock = threading.Lock()


@atexit.register
def _discard_open_creators() -> None:
    with _open_lock:
        creators = list(_open)
    for creator in creators:
        creator._abort()


class Creator(_Creator):
    """Creates a ZIM archive: configure, then add entries in a `with` block.

    An exception inside the block discards the archive (no file is left at
    `filename`, libzim's temporary files removed); leaving the block normally
    writes it.  python-libzim 3.13.1 finishes the archive anyway (its issue
    #42).

    Threads: libzim works with the GIL released; its worker threads
    (config_nbworkers) call back into content providers and index data,
    taking the GIL for those calls only.  add_item() and the other add_*()
    calls may come from several threads on one Creator (one call into libzim
    at a time), where python-libzim crashes.  Errors are WriterError, a
    RuntimeError as python-libzim's, with the raising callback's exception as
    __cause__.
    """

    def __enter__(self) -> "Creator":
        """Start writing (libzim writes to ``<filename>.tmp``) and return self.

        WriterError if already started or finished.  Runs with the GIL
        released; a creation still open at interpreter exit is discarded.
        """
        super().__enter__()
        with _open_lock:
            _open.add(self)
        return self

    def config_compression(self, compression: Union[Compression, str]) -> "Creator":
        """Set the compression of clusters, a Compression or its name ('zstd',
        'none'), and return self.  Before the with block only (WriterError once
        started)."""
        if not isinstance(compression, Compression):
            compression = getattr(Compression, compression.lower())
        return super().config_compression(compression)

    def add_metadata(
        self,
        name: str,
        content: Union[str, bytes, datetime.date, datetime.datetime],
        mimetype: str = "text/plain;charset=UTF-8",
    ) -> None:
        """Add the metadata entry name ('Title', 'Language', ...).

        content is bytes, a str (stored UTF-8 encoded) or, for 'Date', a date
        or datetime (stored as YYYY-MM-DD).  Inside the with block only
        (WriterError before); libzim runs with the GIL released.
        """
        if name == "Date" and isinstance(content, (datetime.date, datetime.datetime)):
            content = content.strftime("%Y-%m-%d").encode("UTF-8")
        if isinstance(content, str):
            content = content.encode("UTF-8")
        super().add_metadata(name=name, content=content, mimetype=mimetype)

    def __repr__(self) -> str:
        return f"Creator(filename={self.filename})"


_libzim._writer_register(Item, Hint)
