"""``zim mcp``: a Model Context Protocol server over archives, for assistants (needs the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .errors import PROG, CLIError, one_line

MCP_CLUSTER_CACHE_MIB = 64


def _load() -> Any:
    """The ``libzim.mcp`` module, or a CLIError saying how to install the extra."""
    try:
        import libzim.mcp as mcp_module
    except ImportError as e:
        from libzim._extras import install_hint
        raise CLIError(f"zim mcp needs the mcp extra: {install_hint('mcp')} ({one_line(e)})", kind="ImportError")
    return mcp_module


def _catalogue(module: Any, args: argparse.Namespace) -> Any:
    from libzim.serve.library import find_archives

    files = find_archives(args.archives)
    if not files:
        raise CLIError("no ZIM archive found in " + ", ".join(args.archives))
    for f in files:
        if not f.is_file():
            raise CLIError(f"{f}: no such file", file=str(f))
    try:
        return module.Catalogue(files, base_url=args.base_url)
    except Exception as e:  # noqa: BLE001 - one line naming the file, as every command
        raise CLIError(one_line(e), kind=type(e).__name__)


def cmd_mcp(args: argparse.Namespace) -> int:
    """``zim mcp``: serve the tools over stdio (default) or streamable HTTP until the
    client closes stdin, or SIGINT / SIGTERM; returns the exit status."""
    module = _load()
    if not 0 <= args.port <= 65535:
        raise CLIError("--port must be between 0 and 65535", 2)
    token = args.token or os.environ.get("ZIM_MCP_TOKEN") or None
    if args.http and not token and not module.is_loopback(args.address):
        raise CLIError(f"--address {args.address} is reachable from other machines: give a bearer token "
                       "(--token or ZIM_MCP_TOKEN)", 2)
    from libzim import set_cluster_cache_max_size

    # Each search reads its hits' articles for snippets: as zim serve, a bigger cache.
    set_cluster_cache_max_size(MCP_CLUSTER_CACHE_MIB << 20)
    catalogue = _catalogue(module, args)
    server = module.create_server(catalogue)
    names = ", ".join(catalogue.books)
    try:
        if not args.http:
            sys.stderr.write(f"{PROG} mcp: {len(catalogue.books)} archive(s) ({names}) on stdio\n")
            server.run()
            return 0
        return _run_http(module, server, args, token, names)
    finally:
        catalogue.close()


def _run_http(module: Any, server: Any, args: argparse.Namespace, token: str | None, names: str) -> int:
    import uvicorn

    app = module.http_app(server, host=args.address, token=token)
    sys.stderr.write(f"{PROG} mcp: archive(s) {names} on http://{args.address}:{args.port}/mcp"
                     f"{' (bearer token required)' if token else ''}\n")
    sys.stderr.flush()
    config = uvicorn.Config(app, host=args.address, port=args.port, log_level="warning", ws="none",
                            timeout_graceful_shutdown=5, server_header=False)
    from .serve import run_uvicorn

    run_uvicorn(uvicorn.Server(config), args.address, args.port)
    return 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim mcp`` and its options."""
    p = sub.add_parser("mcp", help="serve archives to assistants over the Model Context Protocol",
                       description="A Model Context Protocol server: tools to search and read the given ZIM "
                                   "archives (files, or folders of them), over stdio (default) or streamable HTTP. "
                                   "Needs the mcp extra (the error says how to install it).")
    p.add_argument("archives", nargs="+", metavar="ARCHIVE", help="ZIM file, or a folder of them")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    p.add_argument("--address", default="127.0.0.1",
                   help="with --http: address to listen on (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", "-p", type=int, default=8765, help="with --http: port (default 8765)")
    p.add_argument("--token", default=None,
                   help="with --http: bearer token every request must carry (default: $ZIM_MCP_TOKEN)")
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="a running zim serve: hits and articles cite URL/content/BOOK/PATH (default zim://BOOK/PATH)")
    p.set_defaults(func=cmd_mcp)
