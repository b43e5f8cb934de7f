"""``zim serve``: a kiwix-serve-compatible HTTP server on this binding (ASGI, Starlette + uvicorn).

Needs the ``serve`` extra (from a clone ``pip install -e '.[serve]'``, installed ``pip install 'libzim-c[serve]'``); ``import libzim`` does not.

    from libzim.serve import create_app
    app = create_app(["wikipedia.zim", "library/"])   # any ASGI server, or mount it
"""

from __future__ import annotations

from .app import Limits, create_app
from .library import Book, Library, book_name_from_path, find_archives

__all__ = ["Book", "Library", "Limits", "book_name_from_path", "create_app", "find_archives"]
