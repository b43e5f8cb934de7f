"""uvicorn's HTTP protocol for ``zim serve``: httptools (C, llhttp) when installed, else h11.

httptools parses a request in C; h11 in Python. With h11 the parsing and
writing of each request took about a third of the event loop's time for a
/suggest request, and one client's suggestions ran at 0.6x kiwix-serve's
rate (bench/results/serve.md). But uvicorn's httptools protocol, unlike its
h11 one (``h11_max_incomplete_event_size``), has no bound on a request's
head: a client could send an endless URL or header and the server would keep
it all in memory. :class:`BoundedHttpToolsProtocol` adds that bound. A head
that arrived whole is bounded by the app (``Limits.max_header_bytes``).
"""

from __future__ import annotations

from typing import Any

HEAD_LIMIT = 16 * 1024  # bytes of one request's line and headers; h11's bound is set to the same


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


def protocol_class(http: str = "auto") -> Any:
    """The uvicorn ``http`` setting for ``http`` ("auto", "httptools" or "h11"):
    "auto" is httptools when installed, else h11. Raises ImportError when
    "httptools" is asked for and is not installed."""
    if http == "h11" or (http == "auto" and not httptools_available()):
        return "h11"
    if not httptools_available():
        raise ImportError("httptools is not installed")
    return BoundedHttpToolsProtocol


# uvicorn's httptools protocol imports httptools: without it (the serve extra
# not installed, or no wheel for this interpreter) the class below is an inert
# placeholder that protocol_class() never hands out.
_HttpToolsBase: Any
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _HttpToolsBase
except ImportError:
    _HttpToolsBase = object


class BoundedHttpToolsProtocol(_HttpToolsBase):  # type: ignore[misc]  # (uvicorn's, or object)
    """uvicorn's httptools protocol, answering 431 and closing the connection
    when a request's head (its line and headers) is still incomplete after
    HEAD_LIMIT bytes: what is kept of it is bounded by HEAD_LIMIT and one read.
    A complete head is left to the app's own header bound (431 there), so that
    a read holding several small pipelined requests is not refused."""

    _head_bytes = 0
    _in_head = True  # between requests, the next bytes are a head

    def data_received(self, data: bytes) -> None:
        """Counts the bytes of a head still arriving, then parses them."""
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > HEAD_LIMIT:
            self._refuse()

    def on_headers_complete(self) -> None:
        """The head ended: what follows is the body or the next request."""
        self._in_head = False
        super().on_headers_complete()

    def on_message_begin(self) -> None:
        """A request starts: its head follows."""
        self._in_head = True
        super().on_message_begin()

    def on_message_complete(self) -> None:
        """A request ended: the next bytes start another head."""
        self._in_head, self._head_bytes = True, 0
        super().on_message_complete()

    def _refuse(self) -> None:
        if self.transport.is_closing():
            return
        msg = b"Request header fields too large."
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                             b"content-type: text/plain; charset=utf-8\r\n"
                             b"content-length: " + str(len(msg)).encode() + b"\r\n"
                             b"connection: close\r\n\r\n" + msg)
        self.transport.close()
