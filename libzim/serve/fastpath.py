"""The hot URLs on a short path: content, raw content, suggestions and the viewer's assets.

A page view is mostly these requests (the article, its images, styles and
scripts; one suggestion per keystroke). Through Starlette each one walked the
router's list of routes (a regex per route, tried in order), its exception
layers and its endpoint wrapper before our handler ran. :class:`FastPath` sits
in front of the router (inside Guard and Prefix, so the limits, the CORS header
and the root prefix apply as before) and sends the URLs it recognises straight
to the same handler functions, with the same error pages; every other URL, and
any URL whose shape it does not take for certain, goes on to Starlette.

It only takes a URL shape when Starlette's own routes would have given it to
the same handler: :func:`checked_routes` asks the router, at start-up, which
endpoint answers a probe URL of each shape, so a route module added before
``content`` that claims one of these URLs turns the fast path off for it.
"""

from __future__ import annotations

from typing import Awaitable, Callable, Iterable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from . import content, search, viewer
from .core import HTTPError, Server

__all__ = ["FastPath", "checked_routes"]

Handler = Callable[[Server, Request], Awaitable[Response]]

# shape -> (a probe URL of that shape, the handler Starlette's routes give it)
SHAPES: dict[str, tuple[str, Handler]] = {
    "content": ("/content/b/p/q.html", content.content),
    "book_root": ("/content/b", content.book_root),
    "raw": ("/raw/b/content/p/q.html", content.raw_content),
    "meta": ("/raw/b/meta/Title", content.raw_meta),
    "suggest": ("/suggest", search.suggest),
}
# The viewer's files, probed one by one: ``/skin/NAME`` is one route pattern, but a route
# module before the viewer's may claim some names (the library page's ``library.css``, ``.js``).
SHAPES.update({"skin/" + name: ("/skin/" + name, viewer.asset) for name in viewer.ASSET_NAMES})


def checked_routes(routes: Iterable[BaseRoute]) -> dict[str, Handler]:
    """The shapes whose probe URL the router gives to the expected handler (the first route
    that fully matches it, as Starlette tries them)."""
    routes = list(routes)
    out: dict[str, Handler] = {}
    for shape, (probe, handler) in SHAPES.items():
        scope: Scope = {"type": "http", "path": probe, "root_path": "", "method": "GET"}
        for r in routes:
            match, _ = r.matches(scope)
            if match == Match.FULL:
                if getattr(getattr(r, "endpoint", None), "__wrapped__", None) is handler:
                    out[shape] = handler
                break
    return out


class FastPath:
    """Pure-ASGI layer answering the hot URL shapes itself (see the module's docstring)."""

    def __init__(self, app: ASGIApp, server: Server, shapes: dict[str, Handler],
                 on_error: Callable[[Request, Exception], Awaitable[Response]]) -> None:
        self.app = app
        self.server = server
        self.shapes = shapes
        self.on_error = on_error

    def match(self, path: str) -> tuple[Handler, dict[str, str]] | None:
        """The handler and path parameters Starlette's routes would give ``path`` (the route
        path, below the mount); None for anything else."""
        if "\n" in path:  # Starlette's ".*" stops at a newline: leave such URLs to it
            return None
        s = self.shapes
        if path.startswith("/content/"):
            book, sep, rest = path[9:].partition("/")
            if not book:
                return None
            if sep:
                h = s.get("content")
                return (h, {"book": book, "path": rest}) if h else None
            h = s.get("book_root")
            return (h, {"book": book}) if h else None
        if path.startswith("/raw/"):
            book, sep, rest = path[5:].partition("/")
            if not book or not sep:
                return None
            if rest.startswith("content/"):
                h = s.get("raw")
                return (h, {"book": book, "path": rest[8:]}) if h else None
            if rest.startswith("meta/"):
                name = rest[5:]
                h = s.get("meta")
                return (h, {"book": book, "name": name}) if h and name and "/" not in name else None
            return None
        if path == "/suggest":
            h = s.get("suggest")
            return (h, {}) if h else None
        if path.startswith("/skin/"):
            h = s.get(path[1:])  # only the names probed (the viewer's own files)
            return (h, {"name": path[6:]}) if h else None
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root:  # Starlette routes the path below its mount
            if not path.startswith(root):
                await self.app(scope, receive, send)
                return
            path = path[len(root):]
        found = self.match(path)
        if found is None:
            await self.app(scope, receive, send)
            return
        handler, params = found
        if (handler is content.content or handler is content.raw_content) and await content.send_kept(
                self.server, scope, send, params["book"], params["path"], handler is content.raw_content):
            return  # a kept answer, sent as the handler would have sent it
        if handler is search.suggest and await search.send_kept(self.server, scope, send):
            return
        if "path_params" in scope:  # a mounting app's own parameters stay, as Starlette's Route keeps them
            params = {**scope["path_params"], **params}
        scope["path_params"] = params
        request = Request(scope, receive)
        try:
            response = await handler(self.server, request)
        except (HTTPError, HTTPException) as e:  # create_app's handler, as Starlette's router calls it;
            response = await self.on_error(request, e)  # anything else goes to Starlette's outer layer
        await response(scope, receive, send)
