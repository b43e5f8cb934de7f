"""Serve the ZIM server from a WSGI application, through a2wsgi (ASGI to WSGI).

    pip install -e '.[serve]' a2wsgi   # in a clone's venv (tools/bootstrap.sh makes .venv)
    python examples/serve_wsgi.py ARCHIVE.zim... [--port 8000]   # wsgiref, for a try
    gunicorn --threads 8 'serve_wsgi:from_env()'                  # ZIM_ARCHIVES=a.zim:b.zim

Requests under /zim/ go to the ZIM app (SCRIPT_NAME becomes /zim, so every URL
it writes starts with /zim); the others to your WSGI app (a plain function
here; a Flask or Django app the same way). a2wsgi runs the ASGI app on an event
loop of its own in a background thread; the ZIM app's workers still do
libzim's work off the GIL. What is lost against serving it with uvicorn: each
request holds a WSGI thread until its response is sent, so slow clients pin
WSGI threads (put a buffering proxy in front), and the app's lifespan is not
run (its worker threads end with the process).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Iterable

from a2wsgi import ASGIMiddleware

from libzim.serve import create_app

StartResponse = Callable[..., object]
WSGIApp = Callable[[dict[str, object], StartResponse], Iterable[bytes]]
MOUNT = "/zim"


def site(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    """Your own WSGI application."""
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
    return [f'<h1>My site</h1><p><a href="{MOUNT}/">The library</a></p>'.encode()]


def build(archives: list[str], threads: int = 4) -> WSGIApp:
    zim = ASGIMiddleware(create_app(archives, threads=threads))  # type: ignore[arg-type]

    def app(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path == MOUNT or path.startswith(MOUNT + "/"):
            environ = {**environ, "SCRIPT_NAME": str(environ.get("SCRIPT_NAME", "")) + MOUNT,
                       "PATH_INFO": path[len(MOUNT):]}
            return zim(environ, start_response)  # type: ignore[arg-type]
        return site(environ, start_response)

    return app


def from_env() -> WSGIApp:
    return build(os.environ["ZIM_ARCHIVES"].split(os.pathsep))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="+")
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args(argv)
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIServer, make_server

    class Threading(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    with make_server("127.0.0.1", args.port, build(args.archives), server_class=Threading) as httpd:
        httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
