"""uvicorn's HTTP protocol for ``zim serve``: httptools (C, llhttp) when installed, else h11.

httptools parses a request in C; h11 in Python. With h11 the parsing and
writing of each request took about a third of the event loop's time for a
/suggest request, and one client's suggestions ran at 0.6x kiwix-serve's
rate (bench/results/serve.md). But uvicorn's httptools protocol, unlike its
h11 one (``h11_max_incomplete_event_size``), has no bound on a request's
head: a client could send an endless URL or header and the server would keep
it all in memory. :class:`BoundedHttpToolsProtocol` adds that bound. A head
that arrived whole is bounded by the app (``Limits.max_header_bytes``).

Both parsers close a connection the way uvicorn does not: gently (:class:`_Linger`).
A socket closed while its client's bytes are still unread makes the kernel send a
reset, which can throw away the error answer written just before it; the client
then sees "connection reset" instead of the 4xx it was owed.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import re
import sys
import termios
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

HEAD_LIMIT = 16 * 1024  # bytes of one request's line and headers; h11's bound is set to the same
LINGER_SECONDS = 2.0  # how long a gently closed connection still reads (and drops) what its client sends
LINGER_BYTES = 1 << 20  # and how much of it, at most


def httptools_available() -> bool:
    """Whether uvicorn's httptools protocol can be used here."""
    return _HttpToolsBase is not object


def loop_name() -> str:
    """uvicorn's ``loop`` setting: "uvloop" (libuv; in the serve extra) when installed, else "asyncio"."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


class _GentleClose:
    """A protocol's transport whose ``close`` is the protocol's gentle close. The rest is the
    transport's own methods, bound once here, so a write costs no extra call."""

    def __init__(self, transport: Any, protocol: _Linger) -> None:
        self.raw = transport
        self.protocol = protocol
        self.write = transport.write
        self.writelines = transport.writelines
        self.is_closing = transport.is_closing
        self.get_extra_info = transport.get_extra_info
        self.pause_reading = transport.pause_reading
        self.resume_reading = transport.resume_reading

    def close(self) -> None:
        self.protocol._close_gently(self.raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _unread_bytes(transport: Any) -> int:
    """Bytes the kernel holds for this socket that nobody has read (1 when it cannot tell)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0  # not a socket (a test's transport): nothing for a kernel to reset
    buf = bytearray(4)
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
    except (OSError, ValueError):
        return 1
    return int.from_bytes(buf, sys.byteorder)


class _Linger:
    """A gentle close for one of uvicorn's protocols (as Go's net/http and nginx's lingering close).

    uvicorn closes a connection right after an error answer (a parser's 400, our 431, 408 and
    503) and after an answer whose request was not read to its end (a body the app refused
    with 405 or 413). If the client is still sending, the kernel answers its next bytes with a
    reset, and a reset can reach the client before it has read the answer, which is then
    lost: measured here, a POST of 2 MB with ``Connection: close`` got a reset instead of its
    405 every time, and under load a 100 KB header got one instead of its 431 (CI).

    So when there is anything unread (a refusal, a request not ended, bytes in the socket),
    the write side is shut (the answer, then FIN) and what the client still sends is read and
    dropped until it closes, for at most LINGER_SECONDS and LINGER_BYTES; then the socket is
    closed. A connection with nothing unread is closed at once, as before.
    """

    _linger_left: int | None = None  # bytes still to drop while lingering; None: not lingering
    _linger_timer: Any = None
    _refusing = False  # an error answer is being written; its connection closes after it

    def connection_made(self, transport: Any) -> None:
        """The protocol is given the transport wrapped, so that its closes are gentle."""
        super().connection_made(_GentleClose(transport, self))  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        """The socket is closed: a lingering deadline is dropped."""
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().connection_lost(exc)  # type: ignore[misc]

    def eof_received(self) -> bool | None:
        """The client closed its side: a lingering connection closes now."""
        if self._linger_left is not None:
            return None  # the client has closed too: the transport closes
        return super().eof_received()  # type: ignore[misc, no-any-return]

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request its parser refused, closed gently."""
        self._refusing = True
        super().send_400_response(msg)  # type: ignore[misc]

    def _answer_and_close(self, status: bytes, msg: bytes) -> None:
        """A refusal: ``status`` with ``msg`` as plain text, then the gentle close."""
        transport = self.transport  # type: ignore[attr-defined]
        if transport.is_closing() or self._linger_left is not None:
            return
        self._refusing = True
        transport.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
                        b"content-length: " + str(len(msg)).encode() + b"\r\nconnection: close\r\n\r\n" + msg)
        transport.close()

    def _request_unfinished(self) -> bool:
        """The request being answered has bytes still to come (each parser says it its way)."""
        return False

    def _close_gently(self, transport: Any) -> None:
        if transport.is_closing() or self._linger_left is not None:
            return
        if not (self._refusing or self._request_unfinished() or _unread_bytes(transport)):
            transport.close()
            return
        try:
            if not transport.can_write_eof():
                transport.close()
                return
            transport.write_eof()
        except (NotImplementedError, OSError, RuntimeError):
            transport.close()
            return
        self._linger_left = LINGER_BYTES
        transport.resume_reading()  # uvicorn's flow control may have paused it
        self._linger_timer = self.loop.call_later(LINGER_SECONDS, transport.close)  # type: ignore[attr-defined]

    def _dropped(self, data: bytes) -> bool:
        """While lingering, ``data`` is dropped (True); the socket closes past LINGER_BYTES."""
        if self._linger_left is None:
            return False
        self._linger_left -= len(data)
        if self._linger_left <= 0:
            self.transport.raw.close()  # type: ignore[attr-defined]
        return True


@dataclass
class ConnectionRules:
    """What one client may hold open (kept by the protocol, for every connection).

    ``head_timeout``: seconds for a request's line and headers to arrive, from
    the connection's start or the previous response's end (a client trickling a
    head a byte at a time is cut: 408); ``per_address``: open connections from
    one address (kiwix-serve ``-L``; 0: no limit), beyond which a new one gets
    503 and is closed; ``max_connections``: open connections in all, beyond
    which the one waiting longest for its head is closed to make room (busy
    connections are never cut; when all are busy, the new one gets 503).
    """

    per_address: int = 0
    max_connections: int = 1000
    head_timeout: float = 20.0
    per_ip: dict[str, int] = field(default_factory=dict, repr=False)
    waiting: OrderedDict[Any, float] = field(default_factory=OrderedDict, repr=False)  # oldest first
    open: int = 0
    refused: int = 0  # connections refused or cut (for tests and logs)


class _Rules(_Linger):
    """The mixin that applies :class:`ConnectionRules` to one of uvicorn's protocols."""

    rules: ConnectionRules
    _counted: str | None = None
    _head_timer: Any = None
    _served: Any = None  # the request cycle answered last

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        r = self.rules
        ip = str(self.client[0]) if getattr(self, "client", None) else ""  # type: ignore[attr-defined]
        if r.per_address and r.per_ip.get(ip, 0) >= r.per_address:
            self._refuse_with(b"503 Service Unavailable", b"Too many connections from this address.")
            return
        if r.max_connections and r.open >= r.max_connections and not self._make_room():
            self._refuse_with(b"503 Service Unavailable", b"The server has too many connections.")
            return
        self._counted = ip
        r.per_ip[ip] = r.per_ip.get(ip, 0) + 1
        r.open += 1
        self._wait_for_head()

    def connection_lost(self, exc: Exception | None) -> None:
        r = self.rules
        if self._counted is not None:
            n = r.per_ip.get(self._counted, 1) - 1
            if n:
                r.per_ip[self._counted] = n
            else:
                r.per_ip.pop(self._counted, None)
            r.open -= 1
            self._counted = None
        self._stop_waiting()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._dropped(data):
            return
        super().data_received(data)  # type: ignore[misc]
        if self._head_timer is not None and self._busy():
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._served = getattr(self, "cycle", None)
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self._wait_for_head()

    def _busy(self) -> bool:
        """A request's head has arrived and its response is not finished."""
        cycle = getattr(self, "cycle", None)
        return cycle is not None and cycle is not self._served and not cycle.response_complete

    def _wait_for_head(self) -> None:
        self._stop_waiting()
        loop = self.loop  # type: ignore[attr-defined]
        self._head_timer = loop.call_later(self.rules.head_timeout, self._head_expired)
        self.rules.waiting[self] = time.monotonic()

    def _stop_waiting(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.rules.waiting.pop(self, None)

    def _head_expired(self) -> None:
        self._head_timer = None
        self.rules.waiting.pop(self, None)
        if not self._busy():
            self._refuse_with(b"408 Request Timeout", b"The request did not arrive in time.")

    def _make_room(self) -> bool:
        """Close the connection waiting longest for a head; False when none waits."""
        while self.rules.waiting:
            other, _ = self.rules.waiting.popitem(last=False)
            if other is not self and not other._busy():
                other._stop_waiting()
                other._refuse_with(b"503 Service Unavailable", b"Closed to make room for another client.")
                return True
        return False

    def _refuse_with(self, status: bytes, msg: bytes) -> None:
        self.rules.refused += 1
        self._stop_waiting()
        self._answer_and_close(status, msg)


def protocol_class(http: str = "auto", rules: ConnectionRules | None = None) -> Any:
    """The uvicorn ``http`` setting for ``http`` ("auto", "httptools" or "h11"):
    "auto" is httptools when installed, else h11. Raises ImportError when
    "httptools" is asked for and is not installed. With ``rules``, a protocol
    class applying them (to that parser)."""
    if http == "h11" or (http == "auto" and not httptools_available()):
        if rules is None:
            return "h11"
        from uvicorn.protocols.http.h11_impl import H11Protocol
        return type("RuledH11Protocol", (_Rules, H11Protocol), {"rules": rules, "_request_unfinished": _h11_unfinished})
    if not httptools_available():
        raise ImportError("httptools is not installed")
    if rules is None:
        return BoundedHttpToolsProtocol
    return type("RuledHttpToolsProtocol", (_Rules, BoundedHttpToolsProtocol), {"rules": rules})


class AccessLog:
    """uvicorn's access lines, written without the logging machinery on each request.

    uvicorn logs each request through ``logging`` (a LogRecord, the caller's frame looked
    up, a formatter copying the record, a lock, a flush): 14% of a cached content
    request's instructions (bench/results/request-path.md). This writer asks the logger's
    own formatter once per status code for the line with placeholders, then fills them
    in and writes to the handler's stream, flushed once per turn of the event loop (after
    every response written in that turn), not once per line. Lines are the same, in the
    same order. It takes over only when the logger is uvicorn's default set-up: one
    StreamHandler, no filters, a formatter without a time stamp; otherwise (``--log-config``,
    a filter, ``%(asctime)s``) each line goes through ``logging`` as before.
    """

    _MARKS = ("\x01", "\x02", "\x03", "\x04")

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.templates: dict[int, list[str] | None] = {}
        self.pending = False
        handlers = logger.handlers
        h = handlers[0] if len(handlers) == 1 else None
        fmt = getattr(h, "formatter", None)
        usable = (isinstance(h, logging.StreamHandler) and fmt is not None and not h.filters
                  and not logger.filters and not fmt.usesTime() and not logger.propagate)
        self.handler: logging.StreamHandler[Any] | None = h if usable else None  # type: ignore[assignment]

    def template(self, status: int) -> list[str] | None:
        """The formatter's line for ``status``, cut at the places of the other fields."""
        if status not in self.templates:
            h = self.handler
            parts = None
            if h is not None and h.formatter is not None:
                record = self.logger.makeRecord(self.logger.name, logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d',
                                                (*self._MARKS, status), None)
                line = h.formatter.format(record)
                if all(line.count(m) == 1 for m in self._MARKS):
                    parts = re.split("[\x01-\x04]", line)
                    if len(parts) != 5 or any(m in "".join(parts) for m in self._MARKS):
                        parts = None
            self.templates[status] = parts
        return self.templates[status]

    def info(self, msg: str, *args: Any) -> None:
        """What uvicorn calls per response: ``msg % args`` as the logger's handler writes it."""
        parts = self.template(args[4]) if len(args) == 5 and isinstance(args[4], int) else None
        h = self.handler
        if (parts is None or h is None or not self.logger.isEnabledFor(logging.INFO)
                or h.level > logging.INFO or logging.root.manager.disable >= logging.INFO):
            self.logger.info(msg, *args)
            return
        a = args
        line = (parts[0] + str(a[0]) + parts[1] + str(a[1]) + parts[2] + str(a[2]) + parts[3] + str(a[3])
                + parts[4] + h.terminator)
        try:
            h.stream.write(line)
        except Exception:  # noqa: BLE001 - as logging: a broken stream is reported, not raised
            self.logger.info(msg, *args)
            return
        if not self.pending:
            self.pending = True
            try:
                asyncio.get_running_loop().call_soon(self._flush)
            except RuntimeError:  # no loop: write through
                self._flush()

    def _flush(self) -> None:
        self.pending = False
        h = self.handler
        if h is not None:
            try:
                h.flush()
            except Exception:  # noqa: BLE001
                pass


_access_logs: dict[int, AccessLog] = {}


def access_log_for(logger: logging.Logger) -> AccessLog:
    """The one :class:`AccessLog` of ``logger`` (made on first use)."""
    found = _access_logs.get(id(logger))
    if found is None or found.logger is not logger:
        found = _access_logs[id(logger)] = AccessLog(logger)
    return found


class _HeadWithBody:
    """A request cycle's transport that writes the response's head with its first body bytes:
    one socket write (one send, one TCP segment for a small answer) instead of two. uvicorn
    writes the head when the app starts the response and the body when it sends it; every
    response but HEAD's (not wrapped) sends a body message, empty or not, and ``close`` (an app
    that failed half-way) writes a head still held first."""

    __slots__ = ("transport", "head", "started")

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.head: bytes | None = None
        self.started = False

    def write(self, data: bytes) -> None:
        """The first write (the head, unless it is a 100 Continue) is held for the next one."""
        head = self.head
        if head is not None:
            self.head = None
            if len(data) <= ONE_WRITE_MAX:
                self.transport.write(head + data)
            else:  # a large body is not copied to join it: two writes, as before
                self.transport.write(head)
                self.transport.write(data)
        elif not self.started and not data.startswith(b"HTTP/1.1 100 "):
            self.started = True
            self.head = data
        else:
            self.transport.write(data)

    def close(self) -> None:
        """Write a held head, then close."""
        if self.head is not None:
            head, self.head = self.head, None
            self.transport.write(head)
        self.transport.close()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, ...: the transport's
        return getattr(self.transport, name)


ONE_WRITE_MAX = 64 << 10  # bodies up to this are joined to their head (a copy, cheaper than a send)


# uvicorn's httptools protocol imports httptools: without it (the serve extra
# not installed, or no wheel for this interpreter) the class below is an inert
# placeholder that protocol_class() never hands out.
_HttpToolsBase: Any
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _HttpToolsBase
except ImportError:
    _HttpToolsBase = object


def _h11_unfinished(self: Any) -> bool:
    """h11's side of :meth:`_Linger._request_unfinished`: the client is mid-body."""
    import h11
    return bool(self.conn.their_state is h11.SEND_BODY)


class BoundedHttpToolsProtocol(_Linger, _HttpToolsBase):  # type: ignore[misc]  # (uvicorn's, or object)
    """uvicorn's httptools protocol, answering 431 and closing the connection
    when a request's head (its line and headers) is still incomplete after
    HEAD_LIMIT bytes: what is kept of it is bounded by HEAD_LIMIT and one read.
    A complete head is left to the app's own header bound (431 there), so that
    a read holding several small pipelined requests is not refused."""

    _head_bytes = 0
    _in_head = True  # between requests, the next bytes are a head
    _in_message = False  # a request has begun and not ended

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        logger = getattr(self, "access_logger", None)
        if getattr(self, "access_log", False) and isinstance(logger, logging.Logger):  # same lines, cheaper
            log = access_log_for(logger)
            if log.handler is not None:
                self.access_logger = log

    def data_received(self, data: bytes) -> None:
        """Counts the bytes of a head still arriving, then parses them."""
        if self._dropped(data):
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > HEAD_LIMIT:
            self._refuse()

    def on_headers_complete(self) -> None:
        """The head ended: what follows is the body or the next request."""
        self._in_head = False
        before = getattr(self, "cycle", None)
        super().on_headers_complete()
        cycle = getattr(self, "cycle", None)
        if cycle is not None and cycle is not before and self.scope.get("method") != "HEAD":
            cycle.transport = _HeadWithBody(cycle.transport)

    def on_message_begin(self) -> None:
        """A request starts: its head follows."""
        self._in_head = self._in_message = True
        super().on_message_begin()

    def on_message_complete(self) -> None:
        """A request ended: the next bytes start another head."""
        self._in_head, self._head_bytes, self._in_message = True, 0, False
        super().on_message_complete()

    def _request_unfinished(self) -> bool:
        return self._in_message

    def _refuse(self) -> None:
        self._answer_and_close(b"431 Request Header Fields Too Large", b"Request header fields too large.")
