"""``zim serve``: serve archives over HTTP with kiwix-serve's URLs (needs the ``serve`` extra)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .errors import PROG, CLIError, one_line

SERVE_CLUSTER_CACHE_MIB = 64


def cmd_serve(args: argparse.Namespace) -> int:
    """``zim serve``: serve the archives over HTTP with uvicorn until SIGTERM or SIGINT; returns the
    exit status."""
    try:
        import uvicorn

        from libzim import get_cluster_cache_max_size, set_cluster_cache_max_size
        from libzim.serve import Library, create_app
        from libzim.serve.library import find_archives
        from libzim.serve.protocol import HEAD_LIMIT, loop_name, protocol_class
    except ImportError as e:
        from libzim._extras import install_hint
        raise CLIError(f"zim serve needs the serve extra: {install_hint('serve')} ({one_line(e)})",
                       kind="ImportError")
    if args.threads is not None and args.threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    if not 0 <= args.port <= 65535:
        raise CLIError("--port must be between 0 and 65535", 2)
    try:
        http = protocol_class(args.http)
    except ImportError as e:
        raise CLIError(f"--http httptools needs httptools: pip install httptools ({one_line(e)})", kind="ImportError")
    loop = loop_name()
    files = find_archives(args.archives)
    if not files:
        raise CLIError("no ZIM archive found in " + ", ".join(args.archives))
    for f in files:
        if not f.is_file():
            raise CLIError(f"{f}: no such file", file=str(f))
    try:
        library = Library(files)
    except Exception as e:  # noqa: BLE001 - one line naming the file, as every command
        raise CLIError(one_line(e), kind=type(e).__name__)
    if args.cluster_cache is not None and args.cluster_cache < 0:
        raise CLIError("--cluster-cache must be >= 0", 2)
    threads = args.threads or min(32, (os.cpu_count() or 1) * 2)
    # Snippets read every hit's article: with libzim-c's 16 MiB default, the
    # decoded clusters of a 50 MiB documentation archive were re-decoded on
    # most searches (CPU per snippet page 6.6 ms at 16 MiB, 2.8 ms at 64 MiB).
    set_cluster_cache_max_size((SERVE_CLUSTER_CACHE_MIB if args.cluster_cache is None else args.cluster_cache) << 20)
    app = create_app(library, threads=threads, downloads=args.downloads, search_bar=not args.nosearchbar,
                     library_button=not args.nolibrarybutton, block_external=args.blockexternal)
    names = ", ".join(library.books)
    sys.stderr.write(f"{PROG}: serving {len(library.books)} book(s) ({names}) on http://{args.address}:{args.port}/ "
                     f"with {threads} worker threads, a {get_cluster_cache_max_size() >> 20} MiB cluster cache, "
                     f"{'h11' if http == 'h11' else 'httptools'} on {loop}\n")
    sys.stderr.flush()
    config = uvicorn.Config(
        app, host=args.address, port=args.port, access_log=not args.no_access_log, log_level="info",
        # httptools parses in C (its head bounded by HEAD_LIMIT, as h11's below); no
        # websockets are served.
        http=http, ws="none", loop=loop,
        # Bounds a client cannot lift: open connections, idle keep-alive, header size;
        # uvicorn stops on SIGTERM / SIGINT, finishing the requests under way.
        limit_concurrency=args.max_connections, timeout_keep_alive=5, timeout_graceful_shutdown=10,
        h11_max_incomplete_event_size=HEAD_LIMIT, server_header=False,
    )
    server = uvicorn.Server(config)
    try:
        server.run()
    except SystemExit:  # uvicorn exits this way when it cannot start (port taken, ...)
        pass
    finally:
        library.close()
    if not server.started:
        raise CLIError(f"cannot serve on {args.address}:{args.port} (uvicorn's reason above)", kind="OSError")
    return 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim serve`` and its options."""
    p = sub.add_parser("serve", help="serve archives over HTTP, with kiwix-serve's URLs",
                       description="Serve ZIM archives (files, or folders of them) over HTTP with "
                                   "kiwix-serve's URLs: library page, content, search, suggestions, OPDS catalog. "
                                   "Needs the serve extra (the error says how to install it).")
    p.add_argument("archives", nargs="+", metavar="ARCHIVE", help="ZIM file, or a folder of them")
    p.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", "-p", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--threads", "-t", type=int, default=None,
                   help="worker threads for libzim's work (default 2 x CPUs, at most 32)")
    p.add_argument("--max-connections", type=int, default=1000,
                   help="open connections before new ones get 503 (default 1000)")
    p.add_argument("--cluster-cache", type=int, default=None, metavar="MIB",
                   help=f"decoded-cluster cache of the process, in MiB (default {SERVE_CLUSTER_CACHE_MIB}; "
                        "libzim-c's default elsewhere is 16)")
    p.add_argument("--downloads", action="store_true",
                   help="serve each archive's file at /download/BOOK.zim, linked from the OPDS catalog")
    p.add_argument("--http", choices=("auto", "httptools", "h11"), default="auto",
                   help="HTTP parser: httptools (C; in the serve extra) or h11 (pure Python); "
                        "default auto: httptools when installed")
    p.add_argument("--no-access-log", action="store_true", help="do not log each request")
    p.add_argument("-b", "--blockexternal", action="store_true",
                   help="send links out of the archives through a warning page (/catch/external)")
    p.add_argument("-m", "--nolibrarybutton", action="store_true", help="no library button in the reader's toolbar")
    p.add_argument("-n", "--nosearchbar", action="store_true", help="no search bar in the reader's toolbar")
    p.set_defaults(func=cmd_serve)
