"""The MCP server over the tools: the SDK's server, stdio or streamable HTTP.

On the official ``mcp`` SDK 2.x (``mcp.server.mcpserver.MCPServer``, 1.x's
``FastMCP`` renamed): it derives each tool's input schema from the function's
annotations, runs synchronous tools in worker threads (``anyio.to_thread``),
and turns ``ToolError`` into a tool result marked as an error.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
from typing import Any, Callable

from libzim._cache import lease_scope
from libzim.serve.shelf import BookUnavailable

from .catalogue import Catalogue, ToolInputError
from .tools import Tools

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

__all__ = ["create_server", "http_app", "is_loopback", "INSTRUCTIONS", "DESCRIPTIONS"]

INSTRUCTIONS = ("Offline ZIM archives (Wikipedia, documentation, ...). search finds articles, read "
                "gives their text; cite the 'cite' URL.")

# One line each: the tool list is sent to the model with every request.
DESCRIPTIONS = {
    "search": "Full-text search, one ranking across archives. Hits: archive, path, title, snippet "
              "(query words in **bold**), score, cite. Page with offset.",
    "read": "Article text by archive+path (from search). Long text is cut at max_chars: continue "
            "from next_offset, or pass one of the returned headings as section.",
    "suggest": "Article titles matching a prefix or words (type-ahead, 'did you mean'); when 100+ titles "
               "start with the query, only those, in title order.",
    "archives": "The archives available, 100 at a time (page with offset): name, title, description, "
                "language, article count, fulltext (searchable), date.",
    "random": "A random article of an archive.",
    "links": "An article's links to other articles of its archive (path, title, link text).",
}


def _tool_error(fn: Callable[..., str]) -> Callable[..., str]:
    """Our ToolInputError as the SDK's ToolError: a tool result marked as an error with
    the message, not the SDK's "Error executing tool" for an unexpected exception. The
    call runs in a lease scope: the archives it opens stay open until it returns, even
    if the library's shelf evicts them meanwhile; an archive that cannot be opened is
    an error result."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> str:
        try:
            with lease_scope():
                return fn(*args, **kwargs)
        except ToolInputError as e:
            raise ToolError(str(e)) from None
        except BookUnavailable as e:
            raise ToolError(e.message) from None
    return call


def create_server(catalogue: Catalogue, *, name: str = "zim") -> MCPServer[Any]:
    """The MCP server (the SDK's ``MCPServer``) with the
    tools over ``catalogue``; run it with ``server.run()`` (stdio) or serve
    ``http_app(server)``."""
    tools = Tools(catalogue)
    server = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations.model_validate({"readOnlyHint": True})

    def search(query: str, archives: list[str] | None = None, limit: int = 10, offset: int = 0) -> str:
        return tools.search(query, archives, limit, offset)

    def read(archive: str, path: str, section: str | None = None, offset: int = 0,
             max_chars: int = 8000, main_only: bool = True) -> str:
        return tools.read(archive, path, section, offset, max_chars, main_only)

    def suggest(query: str, archives: list[str] | None = None, limit: int = 10) -> str:
        return tools.suggest(query, archives, limit)

    def archives(offset: int = 0, limit: int = 100) -> str:
        return tools.archives(offset, limit)

    def random(archive: str) -> str:
        return tools.random(archive)

    def links(archive: str, path: str, limit: int = 100) -> str:
        return tools.links(archive, path, limit)

    for fn in (search, read, suggest, archives, random, links):
        server.add_tool(_tool_error(fn), name=fn.__name__, description=DESCRIPTIONS[fn.__name__],
                        annotations=read_only, structured_output=False)
    return server


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer TOKEN``
    (compared in constant time), else 401; lifespan events pass through."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve the request if it carries the token, else answer 401."""
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error":"a bearer token is required (Authorization: Bearer TOKEN)"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer[Any], *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The streamable HTTP ASGI app of ``server`` at ``/mcp``: DNS-rebinding
    protection on loopback (the SDK's), the bearer token check when ``token``
    is given; refuses a non-loopback ``host`` without a token."""
    if not token and not is_loopback(host):
        raise ValueError(f"listening on {host} needs a bearer token (--token or ZIM_MCP_TOKEN)")
    app = server.streamable_http_app(host=host)
    return BearerAuth(app, token) if token else app
