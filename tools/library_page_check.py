#!/usr/bin/env python3
"""The weight of zim serve's library page for a 1,000-book library (issue 41).

    .venv/bin/python tools/library_page_check.py [--books 1000] [--browser [--axe] [--shots DIR]]

Writes one small archive with a 48x48 illustration (in a temporary folder) and serves
``--books`` books made of it, each with its own name, id, title (2-5 words) and description
(8-16 words) of random words, one of 20 languages, a category and Kiwix-style tags: what
the page shows is the books' metadata, so copies of one archive weigh what real books do
(random words compress worse than real text: the gzipped figures are pessimistic).

Prints the bytes of ``/`` and ``/nojs`` (first page, a filtered page, the last page), raw
and gzipped as the server sends them, the page's two files, and the requests the page
needs (the HTML, its files, the favicon, the illustrations of its 50 tiles: an upper
bound, as they load lazily). ``--browser`` also loads ``/`` in headless Chromium
(selenium, requirements-browser.txt; Debian's chromium-driver) at 1280x800 and 390x844
and counts the requests it made, before and after scrolling to the end, with the bytes
transferred; ``--shots DIR`` keeps its screenshots there; ``--axe`` runs axe-core on ``/``
and ``/nojs`` at both widths (exit status 1 on a serious or critical violation).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import string
import sys
import tempfile
import threading
import time
import uuid as uuidlib
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LANGS = ["eng", "fra", "deu", "spa", "ita", "por", "rus", "ara", "zho", "jpn",
         "hin", "ben", "swa", "tur", "pol", "nld", "ukr", "vie", "kor", "fas"]
CATEGORIES = ["wikipedia", "wiktionary", "wikivoyage", "gutenberg", "ted", "stack_exchange", "other"]


def write_archive(out: Path) -> Path:
    """One archive: a main page and a 48x48 PNG illustration."""
    from libzim import writer
    from libzim.serve.viewer import _default_icon

    class Item(writer.Item):
        def get_path(self) -> str:
            return "index.html"

        def get_title(self) -> str:
            return "Welcome"

        def get_mimetype(self) -> str:
            return "text/html"

        def get_contentprovider(self) -> writer.ContentProvider:
            return writer.StringProvider("<html><head><title>Welcome</title></head><body><p>Hello</p></body></html>")

        def get_hints(self) -> dict[writer.Hint, int]:
            return {writer.Hint.FRONT_ARTICLE: True}

    with writer.Creator(out) as c:
        c.set_mainpath("index.html")
        c.add_item(Item())
        for k, v in (("Title", "Check"), ("Language", "eng"), ("Name", "check"), ("Description", "A check")):
            c.add_metadata(k, v)
        c.add_illustration(48, _default_icon(48))
    return out


def library(path: Path, n: int) -> object:
    """``n`` books made of the archive at ``path``, their metadata varied as a catalog's."""
    from libzim.serve import Library

    base = next(iter(Library([path]).books.values()))
    # Titles and descriptions of random words (seeded): text that repeats less than a real
    # catalog's, so gzip's figure is pessimistic rather than flattering.
    rnd = random.Random(41)
    vocab = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(3, 10))) for _ in range(3000)]

    def words(low: int, high: int) -> str:
        return " ".join(rnd.choice(vocab) for _ in range(rnd.randint(low, high)))

    books = []
    for i in range(n):
        lang, cat = LANGS[i % len(LANGS)], CATEGORIES[i % len(CATEGORIES)]
        books.append(dataclasses.replace(
            base, name=f"{cat}_{lang}_all_maxi_{i:04d}", uuid=str(uuidlib.UUID(int=rnd.getrandbits(128), version=4)),
            title=words(2, 5).title(), description=words(8, 16).capitalize() + ".",
            language=lang, category=cat, article_count=1000 + 37 * i, size=(i + 1) * 48_000_000,
            tags=f"{cat};_category:{cat};_pictures:yes;_videos:no;_details:yes;_ftindex:yes",
            rendered={}))
    return Library(books=books)


def measure_bytes(app: object) -> list[tuple[str, int, int]]:
    """(URL, raw bytes, gzipped bytes as sent) of the pages and files."""
    warnings.filterwarnings("ignore", message="Using `httpx`")
    from starlette.testclient import TestClient

    rows = []
    with TestClient(app) as c:  # type: ignore[arg-type]
        first = c.get("/").text
        files = re.findall(r'"(/skin/library\.(?:css|js)\?v=[0-9a-f]+)"', first)
        for url in ["/", "/?lang=fra", "/?page=20", "/nojs", "/nojs?category=wikipedia"] + files:
            raw = c.get(url, headers={"Accept-Encoding": "identity"})
            packed = c.get(url, headers={"Accept-Encoding": "gzip"})
            assert raw.status_code == 200 and packed.status_code == 200, url
            sent = int(packed.headers["content-length"])  # httpx decodes: the header says what was sent
            rows.append((url, len(raw.content), sent))
        images = len(re.findall(r"<img ", first))
        rows.append((f"requests of / (HTML, 2 files, favicon, {images} illustrations at most)",
                     1 + len(files) + 1 + images, 0))
    return rows


def serve(app: object) -> tuple[str, object]:
    import socket

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))  # type: ignore[arg-type]
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start in 20 s")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def axe_violations(drv: object) -> list[dict[str, object]]:
    """axe-core's violations on the page now (axe-core-python ships axe.min.js: no network)."""
    from axe_core_python.base import AXE_SCRIPT

    drv.set_script_timeout(60)  # type: ignore[attr-defined]
    drv.execute_script(AXE_SCRIPT)  # type: ignore[attr-defined]
    found = drv.execute_async_script(  # type: ignore[attr-defined]
        "var done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(function (r) { done(r.violations); },"
        " function (e) { done([{id: 'error', impact: 'critical', help: String(e), nodes: [{html: ''}]}]); });")
    return list(found)


def measure_browser(app: object, shots: Path | None, axe: bool = False) -> list[tuple[str, int, int]]:
    """(what, requests, bytes transferred) of ``/`` in headless Chromium, at two widths."""
    from selenium import webdriver

    base, server = serve(app)
    rows = []
    try:
        for width, height in ((1280, 800), (390, 844)):
            opts = webdriver.ChromeOptions()
            for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                      f"--window-size={width},{height}"):
                opts.add_argument(a)
            opts.binary_location = "/usr/bin/chromium"
            drv = webdriver.Chrome(service=webdriver.ChromeService("/usr/bin/chromedriver"), options=opts)
            try:
                # headless Chromium's window is 500 px wide at least: the viewport is set, as a phone's
                drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
                drv.set_page_load_timeout(30)
                drv.get(base + "/")
                time.sleep(1.0)
                count = ("var r=performance.getEntriesByType('resource');"
                         "return [r.length+1, r.reduce(function(s,e){return s+e.transferSize;},"
                         "performance.getEntriesByType('navigation')[0].transferSize)];")
                n, size = drv.execute_script(count)
                rows.append((f"{width} px, first view", n, size))
                if shots:
                    drv.save_screenshot(str(shots / f"library-{width}.png"))
                for _ in range(40):  # bounded: at most 40 screens down
                    drv.execute_script("window.scrollBy(0, window.innerHeight)")
                    time.sleep(0.1)
                time.sleep(0.5)
                n, size = drv.execute_script(count)
                rows.append((f"{width} px, scrolled to the end", n, size))
                if axe:
                    for url in ("/", "/nojs", "/?lang=fra&page=2", "/nojs?tag=none"):
                        drv.get(base + url)
                        for v in axe_violations(drv):
                            print(f"  axe {width} px {url}: {v['id']} ({v['impact']}): {v['help']} "
                                  f"[{len(v['nodes'])} node(s)] {v['nodes'][0]['html'][:120]}")
                            rows.append((f"{width} px {url}: axe {v['impact']} {v['id']}", 0, 0))
            finally:
                drv.quit()
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--books", type=int, default=1000)
    p.add_argument("--browser", action="store_true", help="also count requests in headless Chromium")
    p.add_argument("--shots", type=Path, help="keep the browser's screenshots in this folder")
    p.add_argument("--axe", action="store_true", help="with --browser: axe-core's violations on / and /nojs "
                   "(pip install axe-core-python==0.1.0, as requirements-browser.txt)")
    args = p.parse_args()
    from libzim.serve import create_app

    with tempfile.TemporaryDirectory(prefix="library-page-check-") as d:
        path = write_archive(Path(d) / "check.zim")
        print(f"library page, {args.books:,} books")
        # an app each: the test client's lifespan ends its app's workers
        for url, raw, sent in measure_bytes(create_app(library(path, args.books), threads=2)):  # type: ignore[arg-type]
            print(f"  {url:45} {raw:>8,} bytes raw  {sent:>7,} gzipped" if sent else f"  {url}: {raw}")
        if args.browser:
            if args.shots:
                args.shots.mkdir(parents=True, exist_ok=True)
            app = create_app(library(path, args.books), threads=2)  # type: ignore[arg-type]
            bad = 0
            for what, n, size in measure_browser(app, args.shots, args.axe):
                if "axe" in what:
                    bad += what.split()[4] in ("serious", "critical")
                else:
                    print(f"  chromium {what:32} {n:>3} requests  {size:>8,} bytes transferred")
            if args.axe:
                print(f"  axe: {bad} serious or critical violation(s)")
                return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
