"""The ASGI application: kiwix-serve's URLs on this binding.

The handlers live by concern (``content``, ``search``, ``catalog``); each
module's ``routes(server)`` gives its Routes and :data:`ROUTE_MODULES` lists
them in the order they are tried: a new module adds itself there (before
``content``'s tail, whose ``/BOOK/PATH`` matches anything). The shared state
is :class:`~libzim.serve.core.Server` (``app.state.server``).
"""

from __future__ import annotations

import asyncio
import os
import signal
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable, Iterable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import catalog, content, librarypage, search, viewer
from .content import parse_range, parse_ranges
from .fastpath import FastPath, checked_routes
from .core import (QUICK, SLOW, Guard, HTTPError, Limits, Options, Prefix, PriorityPool, Server, error_response,
                   root_of, url_root)
from .library import Library
from .libraryfile import Reloader, Source

__all__ = ["Limits", "Options", "PriorityPool", "QUICK", "ROUTE_MODULES", "SLOW", "create_app", "parse_range",
           "parse_ranges"]

ROUTE_MODULES: list[Callable[[Server], list[Route]]] = [
    search.routes, catalog.routes, librarypage.routes, viewer.routes, content.routes,
    content.tail_routes,  # last: /BOOK/PATH matches anything
]


def create_app(paths: Iterable[str | os.PathLike[str]] | Library, *, threads: int | None = None,
               limits: Limits | None = None, search_cache: int = 64, downloads: bool = False,
               search_bar: bool = True, library_button: bool = True, block_external: bool = False,
               options: Options | None = None, root: str = "", monitor_library: bool = False,
               reload_on_sighup: bool = False, answer_cache: int = 16 << 20) -> Starlette:
    """The ASGI app serving ``paths`` (ZIM files or folders of them) or a Library.

    Mount it in another Starlette / FastAPI app with ``app.mount("/zim", create_app([...]))``;
    ``app.state.server`` holds the Server (its ``library``, ``options`` and worker ``pool``).
    ``downloads=True`` serves each book's .zim file at ``/download/BOOK.zim`` and links it
    from the OPDS catalog (kiwix-serve serves no files; off by default: a big archive is a
    big download). ``search_bar``, ``library_button`` (the reader's toolbar; kiwix-serve's
    ``--nosearchbar``, ``--nolibrarybutton``) and ``block_external`` (``-b``: external links
    through ``/catch/external``) go into ``options`` (an :class:`Options`; when given, the
    keyword arguments above are ignored).

    ``root`` serves everything under that prefix (kiwix-serve ``--urlRootLocation``).
    A library built by a :class:`~libzim.serve.libraryfile.Source` can be reloaded
    (``app.state.server.reloader``): ``monitor_library`` reloads it when a library file
    changes, ``reload_on_sighup`` on SIGHUP (for a command line: it takes the signal
    from whoever else handles it). A request keeps the library it started with.

    ``answer_cache``: bytes of recent content answers kept on the event loop (and an eighth
    of it for suggestions), answered without a worker: a repeated page view, style sheet or
    script is served in a fraction of the CPU (bench/results/request-path.md); 0: none.
    """
    lib = paths if isinstance(paths, Library) else Library(paths, search_cache=search_cache)
    lim = limits or Limits()
    opts = options or Options(search_bar=search_bar, library_button=library_button,
                              block_external=block_external, downloads=downloads)
    server = Server(lib, threads or min(32, (os.cpu_count() or 1) * 2), lim, opts, answer_cache)
    reloader = Reloader(server, monitor_library) if isinstance(lib.source, Source) else None
    server.reloader = reloader

    async def on_http_error(request: Request, exc: Exception) -> Response:
        head, root = request.method == "HEAD", root_of(request)
        if isinstance(exc, HTTPError):
            return error_response(exc.status, exc.message, head, root)
        if isinstance(exc, HTTPException):
            msg = "No such page." if exc.status_code == 404 else str(exc.detail)
            return error_response(exc.status_code, msg, head, root)
        return error_response(500, "The server failed to answer this request.", head, root)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watcher = None
        if reloader is not None and (monitor_library or reload_on_sighup):
            if reload_on_sighup:
                asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, reloader.request)
            watcher = asyncio.create_task(reloader.run())
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()
            server.pool.shutdown(wait=True, cancel_futures=True)

    routes = [r for module_routes in ROUTE_MODULES for r in module_routes(server)]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPError: on_http_error, HTTPException: on_http_error,
                                        Exception: on_http_error})
    app.state.server = server
    mount = url_root(root)
    app.state.root = mount
    # Content, suggestions and the viewer's assets skip the router (fastpath.py);
    # innermost of ours: Guard and Prefix apply to them as to every URL.
    app.add_middleware(FastPath, server=server, shapes=checked_routes(routes), on_error=on_http_error)
    if mount:
        app.add_middleware(Prefix, root=mount)
    app.add_middleware(Guard, limits=lim)  # outermost: before anything else reads the request
    return app
