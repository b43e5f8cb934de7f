"""``zim serve``: serve archives over HTTP with kiwix-serve's URLs (needs the ``serve`` extra).

It takes kiwix-serve 3.8's command line as it is (a unit file changes only the
program's name), and options of its own. Where a default differs from
kiwix-serve's (the address, the port), one line at start-up says so.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
import threading
from typing import Any

from .errors import PROG, CLIError, one_line
from .search import SUGGEST_MODES

SERVE_CLUSTER_CACHE_MIB = 64
DEFAULT_ADDRESS, DEFAULT_PORT = "127.0.0.1", 8080
# kiwix-serve -i's words for "every address": uvicorn's host for each ("" is every
# interface, IPv4 and IPv6, each on its own socket).
ADDRESS_WORDS = {"all": "", "ipv4": "0.0.0.0", "ipv6": "::"}


def _imports() -> Any:
    try:
        import uvicorn

        from libzim.serve import app as _app  # noqa: F401 - needs starlette
        return uvicorn
    except ImportError as e:
        from libzim._extras import install_hint
        raise CLIError(f"zim serve needs the serve extra: {install_hint('serve')} ({one_line(e)})",
                       kind="ImportError")


def _check(args: argparse.Namespace) -> None:
    """Usage errors (exit 2) before anything is opened."""
    if args.daemon:
        raise CLIError("-d/--daemon: zim serve does not detach itself; run it under systemd (Type=simple), "
                       "a container, or `nohup zim serve ... &`", 2)
    if not args.paths:
        raise CLIError("give ZIM archives (or folders of them), or --library LIBRARY.xml", 2)
    if args.threads is not None and args.threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    if args.port is not None and not 0 <= args.port <= 65535:
        raise CLIError("--port must be between 0 and 65535", 2)
    if args.cluster_cache is not None and args.cluster_cache < 0:
        raise CLIError("--cluster-cache must be >= 0", 2)
    if args.answer_cache < 0:
        raise CLIError("--answer-cache must be >= 0", 2)
    for name in ("archive_cache", "searcher_cache", "suggestion_cache"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise CLIError(f"--{name.replace('_', '-')} must be >= 1", 2)
    for name in ("searchLimit", "ipConnectionLimit", "attachToProcess"):
        if getattr(args, name) < 0:
            raise CLIError(f"--{name} must be >= 0", 2)
    if args.monitorLibrary and not args.library:
        raise CLIError("--monitorLibrary watches library files: give --library LIBRARY.xml", 2)


def _custom_index(path: str | None) -> str | None:
    """kiwix-serve --customIndex: an HTML file served as the welcome page."""
    if path is None:
        return None
    if not path.lower().endswith((".html", ".htm")):
        raise CLIError(f"{path}: --customIndex needs an .html file", file=path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(16 << 20)
    except OSError as e:
        raise CLIError(f"{path}: cannot read the custom index ({e.strerror or e})", file=path)
    if not text.strip():
        raise CLIError(f"{path}: the custom index is empty", file=path)
    return text


def _caches(args: argparse.Namespace) -> tuple[Any, Any]:
    """The shelf's cache sizes (the options, else from RLIMIT_NOFILE) and the record cache."""
    from libzim.serve.bookinfo import InfoCache, default_cache_path
    from libzim.serve.shelf import CacheSizes, default_sizes
    d = default_sizes()
    sizes = CacheSizes(args.archive_cache or d.archives, args.searcher_cache or d.searchers,
                       args.suggestion_cache or d.suggesters)
    path = args.book_cache if args.book_cache is not None else str(default_cache_path())
    return sizes, InfoCache(None if path.lower() in ("", "none") else path)


def _source(args: argparse.Namespace) -> Any:
    from libzim.serve.libraryfile import Source
    from libzim.serve.library import find_archives
    sizes, info = _caches(args)
    if args.library:
        # kiwix-serve splits LIBRARYPATH at ';' for several files
        files = [f for p in args.paths for f in p.split(";") if f]
        return Source(library_files=files, skip_invalid=args.skipInvalid, date_aliases=args.nodatealiases,
                      sizes=sizes, info=info)
    files = find_archives(args.paths)
    if not files:
        raise CLIError("no ZIM archive found in " + ", ".join(args.paths))
    for f in files:
        if not f.is_file():
            raise CLIError(f"{f}: no such file", file=str(f))
    return Source(archives=[str(f) for f in files], skip_invalid=args.skipInvalid, date_aliases=args.nodatealiases,
                  sizes=sizes, info=info)


def _differences(args: argparse.Namespace) -> list[str]:
    notes = []
    if args.address is None:
        notes.append(f"listening on {DEFAULT_ADDRESS} only (kiwix-serve listens on all addresses: "
                     "give -i all for that)")
    if args.port is None:
        notes.append(f"port {DEFAULT_PORT} (kiwix-serve's default is 80: give -p 80 for that)")
    return notes


def _watch_parent(pid: int, server: Any) -> None:
    """kiwix-serve -a: stop when process ``pid`` is gone (checked every second)."""
    def run() -> None:
        while not server.should_exit:
            if not os.path.exists(f"/proc/{pid}"):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    sys.stderr.write(f"{PROG}: process {pid} ended (-a): stopping\n")
                    server.should_exit = True
                    return
                except PermissionError:
                    pass
            threading.Event().wait(1.0)
    threading.Thread(target=run, name="zim-serve-attach", daemon=True).start()


def cmd_serve(args: argparse.Namespace) -> int:
    """``zim serve``: serve the archives over HTTP with uvicorn until SIGTERM or SIGINT; returns the
    exit status."""
    if args.version:
        from libzim.version import get_versions
        print(f"zim serve (libzim-c) {get_versions().get('libzim-c', '')}".rstrip())
        for k, v in get_versions().items():
            print(f"  {k} {v}")
        return 0
    uvicorn = _imports()
    from libzim import get_cluster_cache_max_size, set_cluster_cache_max_size
    from libzim.serve import create_app
    from libzim.serve.core import Options
    from libzim.serve.protocol import HEAD_LIMIT, ConnectionRules, loop_name, protocol_class
    _check(args)
    try:
        http = protocol_class(args.http, ConnectionRules(per_address=args.ipConnectionLimit,
                                                         max_connections=args.max_connections,
                                                         head_timeout=args.head_timeout))
    except ImportError as e:
        raise CLIError(f"--http httptools needs httptools: pip install httptools ({one_line(e)})", kind="ImportError")
    loop = loop_name()
    index = _custom_index(args.customIndex)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format=f"{PROG}: %(message)s")
    source = _source(args)
    try:
        library = source.load()
    except Exception as e:  # noqa: BLE001 - one line naming the file, as every command
        raise CLIError(one_line(e), kind=type(e).__name__)
    if not library.books:
        sys.stderr.write(f"{PROG}: warning: the library has no book to serve\n")
    threads = args.threads or min(32, (os.cpu_count() or 1) * 2)
    # Snippets read every hit's article: with libzim-c's 16 MiB default, the
    # decoded clusters of a 50 MiB documentation archive were re-decoded on
    # most searches (CPU per snippet page 6.6 ms at 16 MiB, 2.8 ms at 64 MiB).
    set_cluster_cache_max_size((SERVE_CLUSTER_CACHE_MIB if args.cluster_cache is None else args.cluster_cache) << 20)
    options = Options(search_bar=not args.nosearchbar, library_button=not args.nolibrarybutton,
                      block_external=args.blockexternal, downloads=args.downloads, search_limit=args.searchLimit,
                      catalog_only=args.catalogOnly, content_server_url=(args.contentServerURL or "").rstrip("/"),
                      custom_index=index, suggest_mode=args.suggest_mode)
    app = create_app(library, threads=threads, options=options, root=args.urlRootLocation,
                     monitor_library=args.monitorLibrary, reload_on_sighup=True, answer_cache=args.answer_cache << 20)
    address = DEFAULT_ADDRESS if args.address is None else args.address
    host = ADDRESS_WORDS.get(address, address)
    port = DEFAULT_PORT if args.port is None else args.port
    for note in _differences(args):
        sys.stderr.write(f"{PROG}: note: {note}\n")
    names = ", ".join(itertools.islice(library.books, 20)) + (", ..." if len(library.books) > 20 else "")
    sz = library.shelf.sizes
    shown = f"[{host}]" if ":" in host else (host or "*")
    parser = "h11" if "H11" in str(getattr(http, "__name__", http)).upper() else "httptools"
    sys.stderr.write(f"{PROG}: serving {len(library.books)} book(s) ({names}) on http://{shown}:{port}"
                     f"{app.state.root}/ with {threads} worker threads (+1 for quick requests), a {get_cluster_cache_max_size() >> 20} MiB "
                     f"cluster cache, {parser} on {loop}; at most {sz.archives} archives, {sz.searchers} books' searchers "
                     f"and {sz.suggesters} suggestion searchers open\n")
    sys.stderr.flush()
    config = uvicorn.Config(
        app, host=host, port=port, access_log=not args.no_access_log, log_level="debug" if args.verbose else "info",
        # httptools parses in C (its head bounded by HEAD_LIMIT, as h11's below); no
        # websockets are served.
        http=http, ws="none", loop=loop,
        # Bounds a client cannot lift: open connections (ours: ConnectionRules, which
        # cuts idle ones first), idle keep-alive, header size; uvicorn stops on
        # SIGTERM / SIGINT, finishing the requests under way.
        limit_concurrency=None, timeout_keep_alive=args.keep_alive, timeout_graceful_shutdown=10,
        h11_max_incomplete_event_size=HEAD_LIMIT, server_header=False,
    )
    server = uvicorn.Server(config)
    if args.attachToProcess:
        _watch_parent(args.attachToProcess, server)
    try:
        run_uvicorn(server, address, port)
    finally:
        app.state.server.library.close()
    return 0


def run_uvicorn(server: Any, address: str, port: int) -> None:
    """Runs a ``uvicorn.Server`` until it stops (zim serve's and zim mcp --http's);
    a CLIError if it never started."""
    try:
        server.run()
    except SystemExit:  # uvicorn exits this way when it cannot start (port taken, ...)
        pass
    if not server.started:
        raise CLIError(f"cannot serve on {address}:{port} (uvicorn's reason above)", kind="OSError")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim serve`` and its options: kiwix-serve 3.8's, then ours."""
    p = sub.add_parser("serve", help="serve archives over HTTP, with kiwix-serve's URLs",
                       description="Serve ZIM archives (files, or folders of them), or the books of kiwix-manage "
                                   "library files (--library), over HTTP with kiwix-serve's URLs: library page, "
                                   "content, search, suggestions, OPDS catalog. Takes kiwix-serve's options. "
                                   "Needs the serve extra (the error says how to install it).")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="ZIM file, or a folder of them; with --library, library XML files")
    k = p.add_argument_group("kiwix-serve's options")
    k.add_argument("-i", "--address", default=None,
                   help=f"address to listen on; 'all', 'ipv4', 'ipv6' for every one (default {DEFAULT_ADDRESS}: "
                        "kiwix-serve's is all)")
    k.add_argument("-p", "--port", type=int, default=None,
                   help=f"port (default {DEFAULT_PORT}: kiwix-serve's is 80)")
    k.add_argument("-t", "--threads", type=int, default=None,
                   help="worker threads for libzim's work (default 2 x CPUs, at most 32), and one more for suggestions and content only")
    k.add_argument("-l", "--library", action="store_true",
                   help="the PATHs are kiwix-manage library XML files (several merge; ';' separates too)")
    k.add_argument("-M", "--monitorLibrary", action="store_true",
                   help="reload the library when a library file changes (SIGHUP always reloads it)")
    k.add_argument("-r", "--urlRootLocation", default="/", metavar="ROOT",
                   help="URL prefix of every page (default /)")
    k.add_argument("-b", "--blockexternal", action="store_true",
                   help="send links out of the archives through a warning page (/catch/external)")
    k.add_argument("-m", "--nolibrarybutton", action="store_true", help="no library button in the reader's toolbar")
    k.add_argument("-n", "--nosearchbar", action="store_true", help="no search bar in the reader's toolbar")
    k.add_argument("-z", "--nodatealiases", action="store_true",
                   help="also answer each book's name without its _YYYY-MM date (despite the option's name)")
    k.add_argument("-c", "--customIndex", default=None, metavar="FILE",
                   help="an HTML file served as the welcome page instead of the library")
    k.add_argument("-s", "--searchLimit", type=int, default=0,
                   help="most books one full-text search may cover (default 0: any)")
    k.add_argument("-k", "--skipInvalid", action="store_true",
                   help="log and skip archives that cannot be read instead of stopping")
    k.add_argument("-L", "--ipConnectionLimit", type=int, default=0,
                   help="most open connections from one address (default 0: no limit; 6 or more advised)")
    k.add_argument("-v", "--verbose", action="store_true", help="log debugging details")
    k.add_argument("-a", "--attachToProcess", type=int, default=0, metavar="PID",
                   help="stop when process PID is no longer running")
    k.add_argument("-d", "--daemon", action="store_true",
                   help="refused: zim serve does not detach (use systemd, a container or nohup)")
    k.add_argument("--catalogOnly", action="store_true",
                   help="the OPDS catalog does not link content served here (with --contentServerURL: there)")
    k.add_argument("--contentServerURL", default=None, metavar="URL",
                   help="root URL of the server whose content the catalog links")
    k.add_argument("-V", "--version", action="store_true", help="print the versions and exit")
    o = p.add_argument_group("zim serve's own options")
    o.add_argument("--max-connections", type=int, default=1000,
                   help="open connections at most; beyond, the longest idle one is closed (default 1000)")
    o.add_argument("--head-timeout", type=float, default=20.0, metavar="SECONDS",
                   help="a request's line and headers must arrive within this (default 20)")
    o.add_argument("--keep-alive", type=float, default=5.0, metavar="SECONDS",
                   help="an idle connection is closed after this (default 5)")
    o.add_argument("--cluster-cache", type=int, default=None, metavar="MIB",
                   help=f"decoded-cluster cache of the process, in MiB (default {SERVE_CLUSTER_CACHE_MIB}; "
                        "libzim-c's default elsewhere is 16)")
    o.add_argument("--downloads", action="store_true",
                   help="serve each archive's file at /download/BOOK.zim, linked from the OPDS catalog")
    o.add_argument("--http", choices=("auto", "httptools", "h11"), default="auto",
                   help="HTTP parser: httptools (C; in the serve extra) or h11 (pure Python); "
                        "default auto: httptools when installed")
    o.add_argument("--suggest-mode", choices=SUGGEST_MODES, default="index",
                   help="how /suggest finds titles: index (default: libzim's title index, kiwix-serve's "
                        "results), titles (the titles that start with the term, by binary search), auto "
                        "(titles when 100 or more start with the term, else index: for large archives such "
                        "as Wikipedia, where the index takes tens of ms for one letter)")
    o.add_argument("--archive-cache", type=int, default=None, metavar="N",
                   help="archives kept open at most, least recently used closed first (default: the open-file "
                        "limit / 8, e.g. 128 at ulimit -n 1024: each holds 2 descriptors, so archives, searchers "
                        "and suggestion searchers together stay under half the limit)")
    o.add_argument("--searcher-cache", type=int, default=None, metavar="N",
                   help="books whose full-text searchers are kept open (a searcher over k books counts k; also "
                        "the most books one search may cover; default: the open-file limit / 32, e.g. 32: "
                        "up to 3 descriptors each)")
    o.add_argument("--suggestion-cache", type=int, default=None, metavar="N",
                   help="suggestion searchers kept open (default: the open-file limit / 32, e.g. 32)")
    o.add_argument("--book-cache", default=None, metavar="FILE",
                   help="where what each archive's catalog entry needs is kept between starts, by path, size "
                        "and time (default $XDG_CACHE_HOME/libzim-c/bookinfo.json; 'none': not kept)")
    o.add_argument("--answer-cache", type=int, default=16, metavar="MIB",
                   help="recent content answers kept to answer again without a worker (up to 256 KiB each with "
                        "their gzip; of a larger one its gzip alone), in MiB, and an eighth of it for suggestion "
                        "answers (default 16; 0: none)")
    o.add_argument("--no-access-log", action="store_true", help="do not log each request")
    p.set_defaults(func=cmd_serve)
