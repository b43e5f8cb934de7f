"""Mount the ZIM server in a FastAPI app.

    pip install -e '.[serve]' fastapi   # in a clone's venv (tools/bootstrap.sh makes .venv)
    python examples/serve_fastapi.py ARCHIVE.zim... [--port 8000]

Your API stays yours (/api/books here, with FastAPI's docs at /docs); the archives
are served under /zim/ with kiwix-serve's URLs (/zim/content/BOOK/PATH,
/zim/search?..., /zim/suggest?..., /zim/catalog/v2/entries). Every URL the
mounted app writes (redirects, result links, the library page) starts with /zim.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import FastAPI, HTTPException

from libzim.serve import create_app


def build(archives: list[str], threads: int = 4) -> FastAPI:
    zim = create_app(archives, threads=threads)
    library = zim.state.server.library

    # A mounted app's lifespan (it shuts its worker pool down) is not run by the
    # parent app: run it from ours.
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with zim.router.lifespan_context(zim):
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/api/books")
    def books() -> list[dict[str, object]]:
        return [{"name": b.name, "title": b.title, "language": b.language, "articles": b.article_count}
                for b in library.books.values()]

    @app.get("/api/books/{name}")
    def book(name: str) -> dict[str, object]:
        b = library.books.get(name)
        if b is None:
            raise HTTPException(status_code=404, detail=f"no book {name}")
        return {"name": b.name, "title": b.title, "main": f"/zim/content/{b.name}/"}

    app.mount("/zim", zim)
    return app


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
