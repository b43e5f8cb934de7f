"""``zim serve``: a kiwix-serve-compatible HTTP server on this binding (ASGI, Starlette + uvicorn).

Needs the ``serve`` extra (from a clone ``pip install -e '.[serve]'``, which tools/bootstrap.sh does in the clone's .venv); ``import libzim`` does not.

    from libzim.serve import create_app
    app = create_app(["wikipedia.zim", "library/"])   # any ASGI server, or mount it

    from libzim.serve import Source                     # kiwix-manage library files, reloadable
    app = create_app(Source(library_files=["library.xml"]).load(), root="/wiki", monitor_library=True)
"""

from __future__ import annotations

from .app import Limits, Options, create_app
from .library import Book, Library, book_name_from_path, find_archives
from .libraryfile import LibraryFileError, Source

__all__ = ["Book", "Library", "LibraryFileError", "Limits", "Options", "Source", "book_name_from_path", "create_app",
           "find_archives"]
