"""``zim mcp``: a Model Context Protocol server that lets an assistant search and read ZIM archives.

Needs the ``mcp`` extra (the official MCP SDK); ``import libzim`` does not.

    from libzim.mcp import Catalogue, create_server
    server = create_server(Catalogue(["wikipedia.zim", "library/"]))
    server.run()   # stdio; or serve libzim.mcp.http_app(server) with uvicorn

The tools (``search``, ``read``, ``suggest``, ``archives``, ``random``,
``links``) are also plain functions on ``libzim.mcp.Tools``.
"""

from __future__ import annotations

from .catalogue import Catalogue, ToolInputError
from .server import create_server, http_app, is_loopback
from .tools import Tools

__all__ = ["Catalogue", "ToolInputError", "Tools", "create_server", "http_app", "is_loopback"]
