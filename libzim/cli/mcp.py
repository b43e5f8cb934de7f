"""``zim mcp``: a Model Context Protocol server over archives, for assistants (needs the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import itertools
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
    from libzim.serve.libraryfile import Source
    from libzim.serve.library import find_archives

    from .serve import _caches

    for name in ("archive_cache", "searcher_cache", "suggestion_cache"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise CLIError(f"--{name.replace('_', '-')} must be >= 1", 2)
    sizes, info = _caches(args)
    if args.library:
        files = [f for p in args.archives for f in p.split(";") if f]
        source = Source(library_files=files, skip_invalid=True, sizes=sizes, info=info)
    else:
        found = find_archives(args.archives)
        if not found:
            raise CLIError("no ZIM archive found in " + ", ".join(args.archives))
        for f in found:
            if not f.is_file():
                raise CLIError(f"{f}: no such file", file=str(f))
        source = Source(archives=[str(f) for f in found], sizes=sizes, info=info)
    try:
        return module.Catalogue(source.load(), base_url=args.base_url)
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
    names = ", ".join(itertools.islice(catalogue.books, 20)) + (", ..." if len(catalogue.books) > 20 else "")
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
    p.add_argument("archives", nargs="+", metavar="ARCHIVE", help="ZIM file, or a folder of them (with --library: "
                                                                    "kiwix-manage library files)")
    p.add_argument("--library", "-l", action="store_true",
                   help="the ARCHIVEs are kiwix-manage library.xml files (books whose file is missing or not a "
                        "ZIM file are skipped, logged)")
    p.add_argument("--archive-cache", type=int, default=None, metavar="N",
                   help="archives kept open at most (default: the open-file limit / 8; as zim serve)")
    p.add_argument("--searcher-cache", type=int, default=None, metavar="N",
                   help="books whose searchers are kept open, and the most one search may cover "
                        "(default: the open-file limit / 32)")
    p.add_argument("--suggestion-cache", type=int, default=None, metavar="N",
                   help="suggestion searchers kept open (default: the open-file limit / 32)")
    p.add_argument("--book-cache", default=None, metavar="FILE",
                   help="the archives' records between starts (default $XDG_CACHE_HOME/libzim-c/bookinfo.json; "
                        "'none': not kept)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    p.add_argument("--address", default="127.0.0.1",
                   help="with --http: address to listen on (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", "-p", type=int, default=8765, help="with --http: port (default 8765)")
    p.add_argument("--token", default=None,
                   help="with --http: bearer token every request must carry (default: $ZIM_MCP_TOKEN)")
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="a running zim serve: hits and articles cite URL/content/BOOK/PATH (default zim://BOOK/PATH)")
    p.set_defaults(func=cmd_mcp)
