#!/usr/bin/env python3
"""The serving guide's screenshots (docs/img/serve-*.png), made again from scratch.

    .venv/bin/python tools/screenshots.py [--out docs/img] [--only library ...]

Writes three small archives of its own (made-up text: a field guide to garden birds, a
French atlas of rivers and a book of kitchen herbs, each with an illustration and a
full-text index) into a temporary folder, starts ``python -m libzim serve`` on them on
127.0.0.1, and has Debian's headless Chromium (chromium, chromium-driver; PyPI's selenium
and Pillow: requirements-browser.txt) photograph the library page, a search page, the
viewer with an article and ``/nojs``, each at desktop (1280x800) and phone (390x844)
size, the page's viewport set exactly by the DevTools protocol. Each PNG is reduced to
256 colours (Pillow's quantize; text stays sharp) and must weigh at most 150 KiB.
Re-runnable: the same archives and pages give the same pictures, so a change of the
pages shows as a change of the PNGs.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 150 * 1024
SIZES = {"desktop": (1280, 800, False), "phone": (390, 844, True)}
WAIT = 20.0  # seconds any one page may take to show (a bound, not a measurement)

BIRDS = [  # (path, name, where it lives, what it eats, a fact)
    ("robin", "Robin", "gardens, hedges and woodland edges", "worms, beetles and berries",
     "It sings through the winter, and both sexes hold a territory of their own."),
    ("blackbird", "Blackbird", "gardens, parks and woods", "earthworms, insects and fruit",
     "The male is black with a yellow bill; the female is brown."),
    ("blue-tit", "Blue tit", "woodland and gardens with old trees", "caterpillars, spiders and seeds",
     "A pair may raise more than ten chicks in one nest box."),
    ("great-tit", "Great tit", "woods, gardens and parks", "insects, seeds and nuts",
     "Its song, a loud 'teacher, teacher', is one of the first of spring."),
    ("wren", "Wren", "hedges, gardens and rocky coasts", "small insects and spiders",
     "One of the smallest birds of the garden, with one of the loudest songs."),
    ("house-sparrow", "House sparrow", "towns, villages and farms", "seeds, scraps and insects",
     "It nests under roof tiles and in holes in walls, often in small colonies."),
    ("starling", "Starling", "towns, fields and coasts", "leatherjackets, insects and fruit",
     "In autumn, flocks of thousands turn together over their roosts at dusk."),
    ("goldfinch", "Goldfinch", "gardens, orchards and rough ground", "seeds of thistles and teasels",
     "Its red face and gold wing bars make it easy to know."),
    ("chaffinch", "Chaffinch", "woods, hedges and gardens", "seeds and, for its chicks, insects",
     "Its song ends with a flourish that varies from one valley to the next."),
    ("dunnock", "Dunnock", "hedges and shrubby gardens", "small insects and seeds",
     "A quiet brown bird that creeps under the bird table for fallen seed."),
    ("magpie", "Magpie", "farmland, parks and gardens", "almost anything: insects, seeds, eggs",
     "A long-tailed crow, black and white, with a green and blue sheen."),
    ("wood-pigeon", "Wood pigeon", "fields, woods and gardens", "grain, leaves, buds and berries",
     "The largest pigeon of the garden, with a white patch on its neck."),
]
RIVERS = [
    ("loire", "Loire", "Le plus long fleuve de France coule sur un peu plus de mille kilomètres."),
    ("seine", "Seine", "Elle traverse Paris avant de rejoindre la Manche au Havre."),
    ("rhone", "Rhône", "Né dans un glacier suisse, il se jette dans la Méditerranée en Camargue."),
    ("garonne", "Garonne", "Elle rejoint la Dordogne pour former l'estuaire de la Gironde."),
]
HERBS = [
    ("basil", "Basil", "A tender annual: sow it after the last frost and pick the tops often."),
    ("mint", "Mint", "It spreads fast; grow it in a pot of its own."),
    ("thyme", "Thyme", "A small woody shrub that likes sun and poor, dry soil."),
]

STYLE = ("body{font:17px/1.55 Georgia,serif;max-width:40em;margin:1.5em auto;padding:0 1em;color:#222}"
         "h1{font:600 2em/1.2 sans-serif;margin:.2em 0 .6em}h2{font:600 1.2em sans-serif}"
         ".infobox{float:right;margin:0 0 1em 1em;padding:.6em;border:1px solid #ccc;background:#f8f9fa;"
         "font:.9em sans-serif;max-width:14em}a{color:#3366cc}")


def _illustration(colour: tuple[int, int, int], shape: str) -> bytes:
    """A 48x48 PNG: a simple picture on a coloured round tile (drawn here, no file needed)."""
    from PIL import Image, ImageDraw

    scale = 4  # drawn large, then reduced: smooth edges
    im = Image.new("RGBA", (48 * scale, 48 * scale), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    d.rounded_rectangle((0, 0, 48 * scale - 1, 48 * scale - 1), radius=10 * scale, fill=colour + (255,))
    white = (255, 255, 255, 255)
    s = scale
    if shape == "bird":
        d.ellipse((12 * s, 16 * s, 34 * s, 36 * s), fill=white)
        d.ellipse((26 * s, 10 * s, 38 * s, 22 * s), fill=white)
        d.polygon([(37 * s, 15 * s), (44 * s, 17 * s), (37 * s, 19 * s)], fill=(255, 200, 60, 255))
        d.polygon([(12 * s, 24 * s), (4 * s, 30 * s), (14 * s, 32 * s)], fill=white)
    elif shape == "river":
        for y in (14, 24, 34):
            d.arc((4 * s, (y - 6) * s, 26 * s, (y + 6) * s), 200, 340, fill=white, width=3 * s)
            d.arc((22 * s, (y - 6) * s, 44 * s, (y + 6) * s), 20, 160, fill=white, width=3 * s)
    else:  # a leaf
        d.ellipse((10 * s, 8 * s, 38 * s, 40 * s), fill=white)
        d.line((14 * s, 38 * s, 34 * s, 10 * s), fill=colour + (255,), width=2 * s)
    out = io.BytesIO()
    im.resize((48, 48), Image.Resampling.LANCZOS).save(out, "PNG", optimize=True)
    return out.getvalue()


def _page(title: str, body: str, lang: str = "en") -> str:
    return (f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>'
            f'<link rel="stylesheet" href="style.css"></head><body><h1>{title}</h1>{body}</body></html>')


def write_archives(folder: Path) -> list[Path]:
    """The three archives (a few dozen KiB each) in ``folder``."""
    from libzim import writer

    class Item(writer.Item):
        def __init__(self, path: str, title: str, content: str, mimetype: str = "text/html") -> None:
            super().__init__()
            self.path, self.title, self.content, self.mimetype = path, title, content, mimetype

        def get_path(self) -> str:
            return self.path

        def get_title(self) -> str:
            return self.title

        def get_mimetype(self) -> str:
            return self.mimetype

        def get_contentprovider(self) -> writer.ContentProvider:
            return writer.StringProvider(self.content)

        def get_hints(self) -> dict[writer.Hint, int]:
            return {writer.Hint.FRONT_ARTICLE: self.mimetype == "text/html"}

    def book(name: str, lang: str, meta: dict[str, str], colour: tuple[int, int, int], shape: str,
             pages: list[tuple[str, str, str]], home: str) -> Path:
        out = folder / f"{name}.zim"
        with writer.Creator(out).config_indexing(True, lang) as c:
            c.set_mainpath("index.html")
            c.add_item(Item("style.css", "", STYLE, "text/css"))
            c.add_item(Item("index.html", meta["Title"], _page(meta["Title"], home, lang[:2])))
            for path, title, body in pages:
                c.add_item(Item(f"{path}.html", title, _page(title, body, lang[:2])))
            for k, v in {**meta, "Language": lang, "Creator": "libzim-c", "Publisher": "libzim-c",
                         "Date": "2026-01-15"}.items():
                c.add_metadata(k, v)
            c.add_illustration(48, _illustration(colour, shape))
        return out

    birds = []
    for path, name, where, food, fact in BIRDS:
        body = (f'<div class="infobox"><b>{name}</b><br>Lives in: {where}<br>Eats: {food}</div>'
                f"<p>The {name.lower()} is a familiar bird of the garden. It lives in {where}, and eats "
                f"{food}. {fact}</p><h2>In the garden</h2><p>A garden with a hedge, a little water and a "
                f"feeder in winter will bring the {name.lower()} close to the house. Leave some seed heads "
                "standing in autumn, and keep cats indoors at dawn in the nesting season.</p>"
                '<p><a href="index.html">All the birds</a></p>')
        birds.append((path, name, body))
    bird_home = "<p>Twelve birds of the garden, how to know them and how to help them.</p><ul>" + "".join(
        f'<li><a href="{p}.html">{n}</a></li>' for p, n, _ in birds) + "</ul>"
    rivers = [(p, n, f"<p>{t}</p><p>Voir aussi <a href=\"index.html\">l'atlas</a>.</p>") for p, n, t in RIVERS]
    river_home = "<p>Quatre fleuves de France.</p><ul>" + "".join(
        f'<li><a href="{p}.html">{n}</a></li>' for p, n, _ in rivers) + "</ul>"
    herbs = [(p, n, f"<p>{t} Pick it in the morning, and grow it near the kitchen door in the garden.</p>")
             for p, n, t in HERBS]
    herb_home = "<ul>" + "".join(f'<li><a href="{p}.html">{n}</a></li>' for p, n, _ in herbs) + "</ul>"
    return [
        book("garden_birds_2026-01", "eng", {"Title": "Garden Birds", "Name": "garden_birds",
             "Description": "Twelve birds of the garden: how to know them and help them", "Tags": "birds;nature"},
             (46, 125, 50), "bird", birds, bird_home),
        book("petit_atlas_2026-01", "fra", {"Title": "Petit atlas des fleuves", "Name": "petit_atlas",
             "Description": "Les grands fleuves de France, de la source à la mer", "Tags": "geography"},
             (21, 101, 192), "river", rivers, river_home),
        book("kitchen_herbs_2026-01", "eng", {"Title": "Kitchen Herbs", "Name": "kitchen_herbs",
             "Description": "Growing and using the herbs of the kitchen garden", "Tags": "garden;cooking"},
             (123, 31, 162), "leaf", herbs, herb_home),
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(archives: list[Path]) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m libzim serve`` on 127.0.0.1 (this checkout's libzim first), once it answers."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "serve", *map(str, archives), "--address",
                             "127.0.0.1", "--port", str(port), "--threads", "2", "--no-access-log"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=5):
                return proc, base
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("zim serve stopped: " + (proc.stderr.read().decode() if proc.stderr else ""))
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("zim serve did not answer within 60 s")
            time.sleep(0.2)


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--hide-scrollbars", "--force-color-profile=srgb", "--lang=en-GB"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver), options=opts)
    drv.set_page_load_timeout(WAIT)
    return drv


def _wait(drv: Any, ready: Callable[[Any], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not ready(drv):
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not ready within {WAIT:.0f} s")
        time.sleep(0.1)


def _viewer_ready(drv: Any) -> bool:
    return bool(drv.execute_script(
        "var f=document.getElementById('zv-frame'), b=document.getElementById('zv-book');"
        "try{return f && f.contentDocument && f.contentDocument.readyState==='complete' &&"
        " f.contentWindow.location.pathname.indexOf('/content/')>=0 && b && b.textContent.length>0 &&"
        " f.contentDocument.fonts.status==='loaded' && document.fonts.status==='loaded';}"
        "catch(e){return false;}"))


def optimised(png: bytes) -> bytes:
    """The screenshot in 256 colours (Pillow's quantize), compressed as far as PNG goes."""
    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True)
    return out.getvalue()


PAGES = {  # name -> (URL under the server, wait for the viewer)
    "library": ("/", False),
    "search": ("/search?books.name=garden_birds_2026-01&pattern=garden&pageLength=4&start=4", False),
    "viewer": ("/viewer#garden_birds_2026-01/robin.html", True),
    "nojs": ("/nojs", False),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="where the PNGs go (docs/img)")
    ap.add_argument("--only", action="append", choices=sorted(PAGES), help="only this page (repeatable)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="libzim-c-shots.") as tmp:
        archives = write_archives(Path(tmp))
        proc, base = start_server(archives)
        drv = None
        try:
            drv = browser()
            for name in args.only or PAGES:
                url, viewer = PAGES[name]
                for size, (width, height, mobile) in SIZES.items():
                    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
                    drv.get("about:blank")
                    drv.get(base + url)
                    _wait(drv, lambda d: d.execute_script("return document.readyState") == "complete", url)
                    if viewer:
                        _wait(drv, _viewer_ready, url)
                    drv.execute_script("document.activeElement && document.activeElement.blur()")
                    time.sleep(0.3)  # fonts and images settle (a bound, not a measurement)
                    png = optimised(drv.get_screenshot_as_png())
                    path = args.out / f"serve-{name}-{size}.png"
                    path.write_bytes(png)
                    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                          f"{len(png) / 1024:.0f} KiB")
                    if len(png) > MAX_BYTES:
                        raise SystemExit(f"{path} is {len(png)} bytes, more than {MAX_BYTES}")
        finally:
            if drv is not None:
                drv.quit()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
