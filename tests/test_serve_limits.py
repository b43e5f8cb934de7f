"""Slow clients against zim serve: a head deadline, room made by closing idle
connections, kiwix-serve's -L per-address limit (bounded, on 127.0.0.1).

Every loop is bounded in count and in time; nothing here asserts a duration
(bench/ measures latencies): the tests assert that other clients are answered.
"""

from __future__ import annotations

import re
import resource
import socket
import time

import pytest

from test_serve_dropin import Live, _get, make_zim


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    return make_zim(tmp_path_factory.mktemp("limits") / "delta.zim", "Delta Book", "walrus")


def _reply(s: socket.socket, timeout: float = 30) -> bytes:
    s.settimeout(timeout)
    chunks = []
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    except (ConnectionResetError, socket.timeout):
        pass
    return b"".join(chunks)


def _one_response(s: socket.socket) -> bytes:
    """One response with a Content-Length, read whole (head and body may come apart)."""
    data = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            m = re.search(rb"(?i)content-length: *([0-9]+)", head)
            if m and len(body) >= int(m.group(1)):
                return data
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    return data


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_head_deadline_cuts_a_trickling_client(book, tmp_path, http):
    if http == "httptools":
        pytest.importorskip("httptools", reason="httptools is not installed (the serve extra installs it)")
    live = Live([str(book), "-p", "PORT", "--head-timeout", "2", "--http", http, "--keep-alive", "30"], tmp_path)
    try:
        live.wait_up()
        with socket.create_connection(("127.0.0.1", live.port), timeout=30) as s:
            s.sendall(b"GET /content/delta/p0.html HTTP/1.1\r\n")
            deadline = time.monotonic() + 30
            got = b""
            while time.monotonic() < deadline:  # one header line a second: never a whole head
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    break
                s.settimeout(1.0)
                try:
                    got = s.recv(4096)
                except socket.timeout:
                    continue
                break
            assert got.startswith(b"HTTP/1.1 408"), got[:200]
        # A client that keeps a connection and sends whole requests is not cut between them.
        with socket.create_connection(("127.0.0.1", live.port), timeout=30) as s:
            for _ in range(3):
                s.sendall(b"GET /content/delta/p1.html HTTP/1.1\r\nHost: x\r\n\r\n")
                reply = _one_response(s)
                assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"</html>"), reply[:200]
                time.sleep(0.5)
    finally:
        live.stop()


def test_per_address_limit(book, tmp_path):
    live = Live([str(book), "-p", "PORT", "-L", "3"], tmp_path)
    try:
        live.wait_up()
        held = [socket.create_connection(("127.0.0.1", live.port), timeout=30) for _ in range(3)]
        try:
            time.sleep(0.3)  # the server has accepted all three
            with socket.create_connection(("127.0.0.1", live.port), timeout=30) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                assert _reply(s).startswith(b"HTTP/1.1 503"), "a fourth connection from one address"
            held.pop().close()
            deadline = time.monotonic() + 30
            while True:  # the server sees the close soon; bounded
                with socket.create_connection(("127.0.0.1", live.port), timeout=30) as s:
                    s.sendall(b"GET /content/delta/p2.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    reply = _reply(s)
                if reply.startswith(b"HTTP/1.1 200") or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert reply.startswith(b"HTTP/1.1 200") and b"walrus 2" in reply, reply[:200]
        finally:
            for s in held:
                s.close()
    finally:
        live.stop()


@pytest.fixture
def open_files_for():
    """Raise this process's soft open-file limit (children inherit it) to hold N more sockets,
    as far as the hard limit allows; returns the count that fits. A login shell or a service
    has a soft limit of 1024 (Debian's default: what runuser, sudo and ssh give), the same
    order as what the test opens; restored afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def fit(count: int, spare: int = 512) -> int:
        want = count + spare
        if soft != resource.RLIM_INFINITY and soft < want:
            new = want if hard == resource.RLIM_INFINITY else min(want, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return count if now == resource.RLIM_INFINITY else min(count, now - spare)

    yield fit
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_two_thousand_half_sent_heads_leave_others_served(book, tmp_path, open_files_for):
    # The measure: 1,500 connections that never finish their head denied service
    # to everyone (kiwix-serve 3.3.0 too). Here 2,000 of them, with 1,000 connections
    # allowed: the longest-waiting are closed to make room, and a new client is answered.
    # (Fewer, in the same ratio, only where the hard open-file limit is below 2,512.)
    count = open_files_for(2000)
    assert count >= 500, f"the hard open-file limit leaves room for {count} sockets"
    live = Live([str(book), "-p", "PORT", "--max-connections", str(count // 2), "--no-access-log"], tmp_path)
    slow: list[socket.socket] = []
    try:
        live.wait_up()
        for _ in range(count):
            try:
                s = socket.create_connection(("127.0.0.1", live.port), timeout=30)
                s.sendall(b"GET /content/delta/p0.html HTTP/1.1\r\nHost: x\r\n")  # never finished
            except OSError:  # closed by the server to make room: fine
                continue
            slow.append(s)
        for _ in range(5):
            status, body = _get(live.base + "/content/delta/p1.html", timeout=30)
            assert status == 200 and b"walrus 1" in body
        status, body = _get(live.base + "/search?pattern=walrus&books.name=delta", timeout=30)
        assert status == 200 and b"p2.html" in body
        assert live.proc.poll() is None
    finally:
        for s in slow:
            s.close()
        live.stop()
