"""Mount the ZIM server in your own Starlette app (FastAPI works the same: app.mount(...)).

    pip install -e '.[serve]'   # in a clone (tools/bootstrap.sh does it in .venv)
    python examples/serve_mount.py ARCHIVE.zim... [--port 8000]

Your routes stay yours (/ and /health here); the archives are served under /zim/
with kiwix-serve's URLs (/zim/content/BOOK/PATH, /zim/search?..., /zim/suggest?...).
"""

from __future__ import annotations

import argparse
import sys

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Mount, Route

from libzim.serve import create_app


def build(archives: list[str], threads: int = 4) -> Starlette:
    zim = create_app(archives, threads=threads)
    names = list(zim.state.server.library.books)

    async def home(request: Request) -> HTMLResponse:
        return HTMLResponse("<h1>My site</h1><p><a href=\"/zim/\">The library</a></p>")

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "books": names})

    # The mounted app's lifespan (it shuts its worker pool down) is not run by a
    # parent Starlette app: run it from ours.
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        async with zim.router.lifespan_context(zim):
            yield

    return Starlette(routes=[Route("/", home), Route("/health", health), Mount("/zim", app=zim)],
                     lifespan=lifespan)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="+")
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args(argv)
    import uvicorn

    uvicorn.run(build(args.archives), host="127.0.0.1", port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
