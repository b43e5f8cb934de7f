"""The server's shared state and the HTTP layer every handler module uses.

Handlers run on the event loop and hand every call into libzim (entry lookup,
content read, search, suggestion) to one bounded pool of threads: the binding
releases the GIL inside libzim, so the workers run in parallel, and the event
loop stays free to read requests and write responses.  A worker never touches
a socket: it returns bytes, the loop sends them, so a slow client holds a
buffer, never a worker.  Beyond ``max_pending`` queued jobs the server answers
503 rather than queueing without end.

Each handler module (content, search, catalog, ...) has a ``routes(server)``
function giving its Routes; :func:`libzim.serve.app.create_app` joins them.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import heapq
import importlib
import itertools
import queue
import re
import threading
import uuid as uuidlib
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Hashable, Literal, TypeVar, Union
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from libzim._cache import lease_scope

from . import pages
from .library import Book, Library
from .shelf import BookUnavailable

__all__ = ["AnswerCache", "GET", "HTTPError", "Limits", "Options", "PriorityPool", "QUICK", "SLOW", "SUGGEST_MODES", "Server",
           "endpoint", "error_response"]

T = TypeVar("T")

# SuggestionSearcher.suggest's modes; "index" first: kiwix-serve's results, the default.
# (Spelled out where used: stubtest reads a module-level Literal alias as a
# Union that the runtime object is not.)
SUGGEST_MODES: tuple[Literal["index", "titles", "auto"], ...] = ("index", "titles", "auto")

GET = ["GET", "HEAD"]  # the methods of every route
NO_CACHE = "max-age=0, must-revalidate"  # kiwix-serve's for everything but archive content
# The native module's gzip (libdeflate, src/zimshim_gzip.cpp), outside its public stubs.
_gzip: Callable[[bytes | memoryview, int], bytes] = importlib.import_module("libzim._libzim")._gzip
GZIP_ABOVE = 1400  # kiwix-serve's bound: a smaller body fits one packet anyway
_COMPRESSIBLE = ("text/", "application/javascript", "application/atom", "application/opensearchdescription",
                 "application/json", "application/rss", "application/font-", "application/x-font-",
                 "application/vnd.ms-fontobject", "font/", "image/svg+xml")


def compressible(mimetype: str) -> bool:
    """Whether kiwix-serve gzips this type (text, scripts, feeds, JSON, fonts; SVG too)."""
    return any(m in mimetype for m in _COMPRESSIBLE)


def accepts_gzip(request: Request) -> bool:
    """Whether the request's Accept-Encoding takes gzip (``q=0`` refuses it)."""
    return takes_gzip(request.headers.get("accept-encoding", ""))


def scope_takes_gzip(scope: Scope, refuse: frozenset[bytes]) -> bool | None:
    """For the fast path's direct sends, from the raw ASGI headers: None when the request
    has a header named in ``refuse`` (it needs the full handler), else whether its first
    Accept-Encoding (the one Starlette's ``Headers.get`` gives) takes gzip."""
    encoding = None
    for name, value in scope["headers"]:
        if name in refuse:
            return None
        if name == b"accept-encoding" and encoding is None:
            encoding = value
    return takes_gzip(encoding.decode("latin-1")) if encoding else False


def takes_gzip(header: str) -> bool:
    """Whether an Accept-Encoding value takes gzip (``q=0`` refuses it)."""
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.strip().lower()
            if q.startswith("q="):
                try:
                    return float(q[2:]) > 0
                except ValueError:
                    return False
            return True
    return False


def gzip_bytes(body: bytes | memoryview) -> bytes:
    """``body`` gzipped: by libdeflate at level 6, the size zlib's default (kiwix-serve's)
    makes, in half zlib's CPU (bench/gzip_cost.py); mtime 0, so the same body gives the same
    bytes and its ETag holds. The binding releases the GIL while it compresses."""
    return _gzip(body, 6)


@dataclass(frozen=True)
class Limits:
    """What one request may ask for (defaults: kiwix-serve's caps where it has one).

    ``max_page_length``: search results per page (kiwix-serve caps pageLength
    at 140); ``max_suggest_count``: suggestions per request; ``max_query_chars``:
    characters of a search pattern or suggestion term; ``max_url_bytes``: the
    request target's length (414 above it); ``max_header_bytes``: the names
    and values of a request's headers together (431 above it); ``max_pending``:
    jobs queued for the worker pool before requests get 503.
    """

    max_page_length: int = 140  # kiwix-serve caps pageLength at 140
    max_suggest_count: int = 100
    max_query_chars: int = 1000
    max_url_bytes: int = 8192
    max_header_bytes: int = 16 * 1024
    max_pending: int = 1024  # jobs queued for the workers before 503


@dataclass
class Options:
    """What the server shows and allows (kiwix-serve's flags), shared by every handler.

    ``search_bar`` (kiwix-serve ``--nosearchbar`` turns it off) and
    ``library_button`` (``--nolibrarybutton``): the parts of the reader's
    toolbar; ``block_external`` (``-b``): links out of the archive go through
    ``/catch/external``; ``downloads``: each book's .zim file is served;
    ``search_limit``: how many books one search may cover (0: any);
    ``catalog_only``: only the catalog is served (``--catalogOnly``);
    ``content_server_url``: the server that serves the content the catalog
    links (``--contentServerURL``; "" for this one); ``custom_index``: an HTML
    page served at ``/`` instead of the library (``--customIndex``);
    ``suggest_mode``: the ``mode`` of ``SuggestionSearcher.suggest`` behind
    ``/suggest`` (``--suggest-mode``, ours): "index" (kiwix-serve's results),
    "titles" (the titles starting with the term) or "auto" (titles when 100 or
    more start with it, else the index: for large archives, where the index
    takes tens of ms for a one-letter term). ValueError for another.
    """

    search_bar: bool = True
    library_button: bool = True
    block_external: bool = False
    downloads: bool = False
    search_limit: int = 0
    catalog_only: bool = False
    content_server_url: str = ""
    custom_index: str | None = None
    suggest_mode: Literal["index", "titles", "auto"] = "index"

    def __post_init__(self) -> None:
        # /suggest turns a ValueError from suggest() into "no suggestions":
        # a misspelt mode must fail here, not answer nothing forever.
        if self.suggest_mode not in SUGGEST_MODES:
            raise ValueError(f"suggest_mode must be one of {', '.join(SUGGEST_MODES)}, not {self.suggest_mode!r}")


class HTTPError(Exception):
    """An answer other than 2xx/3xx: its status and the one-line message the page shows."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_TITLES = {400: "Invalid request", 404: "Content not found", 405: "Method not allowed",
           413: "Request too large", 414: "URI too long", 416: "Range not satisfiable",
           431: "Request headers too large",
           500: "Internal server error", 503: "Server busy"}


def error_response(status: int, message: str, head: bool = False, root: str = "") -> Response:
    """The HTML error page of ``status`` (its message escaped; links under ``root``)."""
    body = pages.error_page(status, _TITLES.get(status, "Error"), message, root)
    r = HTMLResponse(body, status_code=status, headers={"Cache-Control": NO_CACHE})
    if head:
        r.body = b""
    return r


_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


class Guard:
    """Pure-ASGI outer layer: only GET and HEAD, no request body, bounded URL and
    headers (whatever server parsed them: uvicorn's h11 bounds only a head still
    arriving, and a mounting app's server may bound none)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        err: Response | None = None
        raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "replace")
        header_list = scope.get("headers") or []
        headers = dict(header_list)
        if scope["method"] not in ("GET", "HEAD"):
            err = error_response(405, "Only GET and HEAD are served.")
            err.headers["Allow"] = "GET, HEAD"
        elif len(raw) + len(scope.get("query_string", b"")) > self.limits.max_url_bytes:
            err = error_response(414, "The URL is too long.")
        elif sum(len(k) + len(v) for k, v in header_list) > self.limits.max_header_bytes:
            err = error_response(431, "The request's headers are too large.")
        elif headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers:
            err = error_response(413, "Requests must not have a body.")
        elif _BAD_ESCAPE.search(raw):  # "%" not followed by two hex digits: not a URL (as libmicrohttpd 1.0)
            err = error_response(400, "The URL has a malformed percent-encoding.")
        if err is not None:
            if scope["method"] == "HEAD":
                err.body = b""
            await err(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":  # kiwix-serve: every response may be read by any page
                message["headers"] = [*message.get("headers", []), (b"access-control-allow-origin", b"*")]
            await send(message)

        await self.app(scope, receive, send_with_cors)


def url_root(text: str) -> str:
    """A ``--urlRootLocation`` as a mount point: "" for the top, else "/a/b" (slashes
    added or dropped as kiwix-serve does)."""
    parts = [p for p in text.split("/") if p]
    return "/" + "/".join(parts) if parts else ""


class Prefix:
    """Pure-ASGI layer serving the app under ``root`` (kiwix-serve ``--urlRootLocation``):
    ``ROOT`` redirects to ``ROOT/``, ``ROOT/...`` goes to the app (its ``root_path`` set,
    so every URL it writes starts with ROOT), anything else is a 404 page."""

    def __init__(self, app: ASGIApp, root: str) -> None:
        self.app = app
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.root:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        mount = str(scope.get("root_path", "")) + self.root
        if path == mount:
            query = scope.get("query_string", b"").decode("latin-1")
            r = redirect(quote(mount, safe="/") + "/" + ("?" + quote(query, safe="&=+%;,/:@") if query else ""))
        elif path.startswith(mount + "/"):
            await self.app({**scope, "root_path": mount}, receive, send)
            return
        else:
            r = error_response(404, "No such page (this server's pages are under "
                                    f"{self.root}/).", scope["method"] == "HEAD", self.root)
        await r(scope, receive, send)


class AnswerCache:
    """A bounded cache of recent answers (least recently used out first), kept on the event
    loop: read and filled by handlers between their awaits, never from a worker, so it needs
    no lock. ``max_bytes`` bounds the sizes its users give (0: it keeps nothing);
    ``max_item``: a larger answer is not kept.

    Why: a content request whose cluster is cached costs libzim microseconds, but handing it
    to a worker thread (submit, wake-up, future, the loop's wake-up) cost a third of the
    request's CPU (bench/results/request-path.md); an article's gzip, made on every request,
    was two thirds of it when the browser asked for gzip."""

    def __init__(self, max_bytes: int, max_item: int = 256 << 10) -> None:
        self.max_bytes = max(0, max_bytes)
        self.max_item = max_item
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._items: dict[Hashable, tuple[object, int]] = {}

    def get(self, key: Hashable) -> object | None:
        """The value kept under ``key`` (now the most recently used), or None."""
        found = self._items.pop(key, None)
        if found is None:
            self.misses += 1
            return None
        self._items[key] = found
        self.hits += 1
        return found[0]

    def __contains__(self, key: Hashable) -> bool:
        """Whether an answer is kept under ``key`` (neither a hit nor a miss, nor a use)."""
        return key in self._items

    def put(self, key: Hashable, value: object, size: int) -> None:
        """Keep ``value`` (``size`` bytes) under ``key``, dropping the least recently used
        answers beyond ``max_bytes``; nothing when it is over ``max_item``."""
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= old[1]
        if size > self.max_item or size > self.max_bytes:
            return
        self._items[key] = (value, size)
        self.size += size
        while self.size > self.max_bytes:
            oldest = next(iter(self._items))
            self.size -= self._items.pop(oldest)[1]

    def clear(self) -> None:
        """Forget every answer."""
        self._items.clear()
        self.size = 0


QUICK, SLOW = 0, 1  # job priorities: suggestions, content, metadata before search pages


class PriorityPool:
    """Worker threads whose free worker takes the most urgent waiting job, and a lane of
    threads of its own for quick jobs.

    Each job goes into a priority queue (priority, then arrival) and one wake-up token
    into the workers' queue; a worker, when it takes a token, runs the best job waiting
    then, not necessarily the one that came with it. So a suggestion that arrives behind a
    queue of search pages waits for one worker to finish its current job, not for the
    queue (measured: suggest p99 149 ms with 8 clients searching, in one FIFO pool).
    Searches only wait while quicker jobs are queued, which are short.

    On a big archive a search page keeps a worker 50-130 ms (Xapian's matcher), so
    waiting for one still cost a suggestion 100 ms at p99 with 8 clients searching
    a 1,000,000-article archive. ``quick_lanes`` more threads therefore take QUICK
    jobs only: a QUICK job also gets a token there when every worker is taken (when one
    is free, its own token starts it at once, so a second would only cost a hand-off: a
    content request that goes to a worker took 12% fewer instructions without it,
    callgrind in bench/results/request-path.md), and whichever thread comes first runs
    it; a lane thread that finds nothing for it waits again. Every job still has its
    token in the workers' queue, so none waits on the lane.

    The threads are our own, not a ThreadPoolExecutor's: a request's hand-off was two
    concurrent Futures (the executor's work item's and ours) chained to an asyncio one by
    ``wrap_future``; :meth:`run` gives the job the loop's own future, and the worker settles
    it with one ``call_soon_threadsafe`` (bench/results/request-path.md). A thread starts
    when a token finds none free, up to the bound; at shutdown, or at the interpreter's exit
    as an executor's, the threads run the jobs already queued, then stop.
    """

    def __init__(self, threads: int, name: str, quick_lanes: int = 1) -> None:
        self.name = name
        self.workers: list[threading.Thread] = []
        self.lane_workers: list[threading.Thread] = []
        self._bounds = (max(1, threads), max(0, quick_lanes))
        self._jobs: list[tuple[int, int, Callable[[], object], _Sink]] = []
        self._runners = [0, 0]  # tokens put and not yet done with: workers', lane's
        self._wake: tuple[queue.SimpleQueue[bool], queue.SimpleQueue[bool]] = (
            queue.SimpleQueue(), queue.SimpleQueue())  # True: run one job; False: stop
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._closed = False
        _live_pools.add(self)

    def submit(self, priority: int, fn: Callable[[], T]) -> Future[T]:
        """Queue ``fn`` at ``priority`` (QUICK before SLOW); its concurrent Future (for a caller
        off the event loop; a request handler awaits :meth:`run`)."""
        future: Future[T] = Future()
        self._queue(priority, fn, future)
        return future

    def run(self, priority: int, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Queue ``fn`` at ``priority``; a future of the running loop, settled on the loop.
        Cancelling it skips the job if no worker has started it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue(priority, fn, (loop, future))
        return future

    def _queue(self, priority: int, fn: Callable[[], object], sink: _Sink) -> None:
        start: list[threading.Thread] = []
        with self._lock:  # tokens are put under the lock, so none comes after shutdown's stops
            if self._closed:
                raise RuntimeError(f"{self.name}: cannot queue a job after shutdown")
            heapq.heappush(self._jobs, (priority, next(self._seq), fn, sink))
            busy = self._runners[0] >= self._bounds[0]
            for kind in (0, 1) if priority == QUICK and busy and self._bounds[1] else (0,):
                self._runners[kind] += 1
                self._wake[kind].put(True)
                threads = self.lane_workers if kind else self.workers
                if self._runners[kind] > len(threads) and len(threads) < self._bounds[kind]:
                    threads.append(threading.Thread(target=self._work, args=(kind,),
                                                    name=f"{self.name}{'-quick' if kind else ''}_{len(threads)}"))
                    start.append(threads[-1])  # this call's own: another may append meanwhile
        for t in start:
            t.start()

    def _work(self, kind: int) -> None:
        wake = self._wake[kind]
        while wake.get():
            self._run_one(SLOW if kind == 0 else QUICK, kind)

    def _run_one(self, worst: int, kind: int) -> None:
        """Run the most urgent waiting job if it is at most ``worst``; else nothing. The thread
        counts itself free before it hands the result over, so the job its waiter queues next
        sees a free worker."""
        with self._lock:
            job = heapq.heappop(self._jobs) if self._jobs and self._jobs[0][0] <= worst else None
        sink = job[3] if job is not None and _wanted(job[3]) else None
        result: object = None
        error: BaseException | None = None
        if job is not None and sink is not None:
            try:
                result = job[2]()
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting request
                error = e
        with self._lock:
            self._runners[kind] -= 1
        if sink is not None:
            _settle(sink, result, error)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop the threads once they have run the jobs already queued (with ``cancel_futures``
        those are cancelled instead); ``wait``: until they have stopped."""
        with self._lock:
            self._closed = True
            jobs: list[tuple[int, int, Callable[[], object], _Sink]] = []
            if cancel_futures:
                jobs, self._jobs = self._jobs, []
            threads = (list(self.workers), list(self.lane_workers))
            for kind in (0, 1):
                for _ in threads[kind]:
                    self._wake[kind].put(False)
        for _, _, _, sink in jobs:  # their requests must not wait for ever
            _cancel(sink)
        if wait:
            for t in threads[0] + threads[1]:
                if t is not threading.current_thread():
                    t.join()


if TYPE_CHECKING:
    # Where a job's result goes: a concurrent Future (submit) or a loop and its future (run).
    _Sink = Union[Future[Any], tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]"]]


def _wanted(sink: _Sink) -> bool:
    """Whether the job is still wanted: a concurrent Future is marked running; a loop's
    future is read from this thread, a hint only (a job cancelled just after still runs,
    and its result is dropped on the loop)."""
    if isinstance(sink, Future):
        return sink.set_running_or_notify_cancel()
    return not sink[1].done()


def _settle(sink: _Sink, result: object, error: BaseException | None) -> None:
    if isinstance(sink, Future):
        if error is None:
            sink.set_result(result)
        else:
            sink.set_exception(error)
        return
    try:
        sink[0].call_soon_threadsafe(_deliver, sink[1], result, error)
    except RuntimeError:  # the loop is closed: nobody waits any more
        pass


def _deliver(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    """On the loop: the job's outcome into its future, unless it was cancelled meanwhile."""
    if future.done():
        return
    if error is None:
        future.set_result(result)
    elif isinstance(error, StopIteration):  # asyncio refuses it (TypeError): the waiter would hang
        future.set_exception(RuntimeError(f"the job raised {error!r}"))
    else:
        future.set_exception(error)


def _cancel(sink: _Sink) -> None:
    if isinstance(sink, Future):
        sink.cancel()
        return
    loop, future = sink
    if asyncio._get_running_loop() is loop:
        future.cancel()
    else:
        try:
            loop.call_soon_threadsafe(future.cancel)
        except RuntimeError:  # the loop is closed
            pass


_live_pools: weakref.WeakSet[PriorityPool] = weakref.WeakSet()


def _stop_pools_at_exit() -> None:
    """As concurrent.futures does for its executors: the interpreter's exit joins
    non-daemon threads, so the pools still open are told to stop first."""
    for pool in list(_live_pools):
        pool.shutdown(wait=False)


threading._register_atexit(_stop_pools_at_exit)  # type: ignore[attr-defined]  # what concurrent.futures uses


class Server:
    """What every handler shares: the library, the options, the limits and the pool.

    ``answers`` and ``suggestions`` keep recent content and suggestion answers
    (:class:`AnswerCache`, ``answer_cache`` bytes and an eighth of it): each answer is kept
    with the Book it came from, and used only for that very Book, so a reload (new Books)
    makes them misses.

    ``library`` may be replaced while requests run (a reload): a handler reads it
    once and keeps the Book it got. Every job :meth:`run` hands a worker runs in a
    lease scope (:func:`libzim._cache.lease_scope`), so a request finishes on the
    archive it started on even if the shelf evicts it meanwhile.
    """

    def __init__(self, library: Library, threads: int, limits: Limits, options: Options | None = None,
                 answer_cache: int = 16 << 20) -> None:
        self.library = library
        self.answers = AnswerCache(answer_cache)  # content's recent answers (content.py)
        self.suggestions = AnswerCache(answer_cache // 8, 64 << 10)  # /suggest's (search.py)
        self.options = options or Options()
        self.limits = limits
        self.pool = PriorityPool(max(1, threads), "zim-serve")
        self.pending = 0
        self.feed_id = str(uuidlib.uuid4())
        self.reloader: object = None  # a libzim.serve.libraryfile.Reloader when the library can be reloaded
        self.state_tags: dict[object, str] = {}  # state_tag's hash of the present library

    @property
    def downloads(self) -> bool:
        """Whether each book's .zim file is served (``Options.downloads``)."""
        return self.options.downloads

    async def run(self, fn: Callable[..., T], *args: object, priority: int = QUICK) -> T:
        """fn(*args) on a worker; 503 when too much is queued already."""
        if self.pending >= self.limits.max_pending:
            raise HTTPError(503, "Too many requests are waiting; try again shortly.")
        self.pending += 1
        try:
            return await self.pool.run(priority, partial(_leased, fn, *args))
        finally:
            self.pending -= 1

    def book(self, name: str | None, status: int = 404) -> Book:
        """The book named ``name``; HTTPError ``status`` when none is given or known."""
        if not name:
            raise HTTPError(status, "No book was given (content=... or books.name=...).")
        b = self.library.get(name)
        if b is None:
            raise HTTPError(status, f"No such book: {name}")
        return b

    @staticmethod
    def int_param(request: Request, name: str, default: int, low: int, high: int | None = None) -> int:
        """The integer query parameter ``name`` (``default`` when absent), at least ``low``
        (400 below), capped at ``high``."""
        text = request.query_params.get(name)
        if text is None or text == "":
            return default
        if not re.fullmatch(r"[+-]?[0-9]{1,9}", text.strip()):
            raise HTTPError(400, f"Invalid value of {name}: {text[:40]}")
        value = int(text)
        if value < low:
            raise HTTPError(400, f"{name} must be at least {low}")
        if value < 0 and value != -1:  # -1 is the only negative value any parameter takes ("all")
            raise HTTPError(400, f"Invalid value of {name}: {text[:40]}")
        return value if high is None else min(value, high)


def _leased(fn: Callable[..., T], *args: object) -> T:
    """fn(*args) in a lease scope: the archives and searchers it takes from the shelf stay
    open until it returns, even if evicted meanwhile; a book that cannot be opened is an
    error page (its status: 404 gone, 500 damaged)."""
    with lease_scope():
        try:
            return fn(*args)
        except BookUnavailable as e:
            raise HTTPError(e.status, e.message) from None


Handler = Callable[[Server, Request], Awaitable[Response]]


def endpoint(server: Server, fn: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint calling ``fn(server, request)``."""
    @functools.wraps(fn)
    async def handle(request: Request) -> Response:
        return await fn(server, request)
    return handle


def root_of(request: Request) -> str:
    """Where the app is mounted ("" at the top), for the URLs it writes (pages quote it)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def join(prefix: str, path: str) -> str:
    """``prefix`` (already quoted) + ``path`` percent-encoded, so the Location is one safe URL."""
    return prefix + quote(path, safe="/")


def redirect(url: str) -> Response:
    """A 302 to ``url`` (already quoted), not cached."""
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": NO_CACHE})


def text_response(request: Request, body: str, mimetype: str) -> Response:
    """A generated page (not cached; no body for HEAD)."""
    return bytes_response(request, body.encode("utf-8"), mimetype)


_generations = itertools.count(1)
_generation_lock = threading.Lock()


def library_generation(library: object) -> int:
    """A number of this library object, given on first use: a reload makes a new library,
    hence a new number (``id()`` could be reused once the old one is freed)."""
    gen = getattr(library, "_etag_generation", None)
    if gen is None:
        with _generation_lock:
            gen = getattr(library, "_etag_generation", None)
            if gen is None:
                gen = next(_generations)
                setattr(library, "_etag_generation", gen)
    return gen


def state_etag(request: Request, coded: bool) -> str | None:
    """The ETag of a generated page, as kiwix-serve gives one: this server instance and
    its library's state (the page is a function of them and of the URL), and how the body
    is coded (``coded``: gzipped). None outside an app made by create_app."""
    server = getattr(getattr(request.app, "state", None), "server", None) if "app" in request.scope else None
    if not isinstance(server, Server):
        return None
    return state_tag(server, coded)


def state_tag(server: Server, coded: bool) -> str:
    """:func:`state_etag` of ``server``'s present library (its hash made once per library)."""
    now = (server.library, server.feed_id)
    base = server.state_tags.get(now)
    if base is None:
        key = f"{server.feed_id}/{library_generation(server.library)}".encode()
        base = '"' + hashlib.blake2b(key, digest_size=9).hexdigest()
        server.state_tags = {now: base}  # only the present library's: a reload replaces it
    return base + ('/z"' if coded else '/"')


def bytes_response(request: Request, body: bytes, mimetype: str, packed: bytes | None = None) -> Response:
    """Generated bytes (revalidated on every use, with an ETag of the server's state: 304
    when the client has it; gzipped when asked and worth it (``packed``: that gzip, made
    already); no body for HEAD, with the Content-Length a GET gets)."""
    headers = {"Cache-Control": NO_CACHE}
    coded = False
    if compressible(mimetype):
        headers["Vary"] = "Accept-Encoding"
        coded = len(body) > GZIP_ABOVE and accepts_gzip(request)
    etag = state_etag(request, coded)
    if etag is not None:
        headers["ETag"] = etag
        inm = request.headers.get("if-none-match")
        if inm is not None:
            other = etag[:-2] + ('/"' if coded else '/z"')  # the same page, coded the other way
            tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
            if inm.strip() == "*" or etag in tags or other in tags:
                return Response(status_code=304, headers=headers)
    if coded:
        body = packed if packed is not None else gzip_bytes(body)
        headers["Content-Encoding"] = "gzip"
    r = Response(body, media_type=mimetype, headers=headers)
    if request.method == "HEAD":
        r.body = b""
    return r
