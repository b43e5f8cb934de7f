"""The library page's stylesheet and script (``/skin/library.css``, ``/skin/library.js``).

The page names each by its content's hash (``?v=HASH``), so a browser keeps them for a
year and asks again only when they change; every page view after the first is one
request (the page, revalidated by its ETag). The script is progressive enhancement
only: the page works without it (links go to ``/content/``, the filter form is a
plain GET form).
"""

from __future__ import annotations

import hashlib

from starlette.requests import Request
from starlette.responses import Response

from .core import accepts_gzip, gzip_bytes

__all__ = ["LIBRARY_CSS", "LIBRARY_JS", "asset_url", "asset_response", "ASSET_NAMES"]

LIBRARY_JS = r"""
(function () {
  'use strict';
  var form = document.getElementById('lp-filters');
  var root = document.body.getAttribute('data-root') || '';
  var viewer = root + '/viewer#';
  // A book opens in the reader (its toolbar: search, main page, random); the links'
  // hrefs stay /content/ for browsers without script.
  var content = root + '/content/';
  Array.prototype.forEach.call(document.querySelectorAll('a.title'), function (a) {
    var u;
    try { u = new URL(a.href, location.href); } catch (e) { return; }
    if (u.origin === location.origin && u.pathname.indexOf(content) === 0) a.href = viewer + u.pathname.slice(content.length);
  });
  // Choosing a language or a category filters at once (the button stays, for keyboards).
  if (form) {
    Array.prototype.forEach.call(form.querySelectorAll('select'), function (s) {
      s.addEventListener('change', function () { form.submit(); });
    });
  }
  // Search inside a book: type-ahead titles, and the results in the reader.
  var sform = document.getElementById('kiwixsearchform'), box = document.getElementById('kiwixsearchbox'),
      sel = document.getElementById('book'), out = document.getElementById('suggestions'), timer = 0, seq = 0;
  if (!sform || !box || !sel || !out) return;
  function enc(s) { return encodeURIComponent(s); }
  sform.addEventListener('submit', function (e) {
    e.preventDefault();
    if (box.value.trim()) location.href = viewer + 'search?' + new URLSearchParams({'books.name': sel.value, pattern: box.value});
  });
  box.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var term = box.value, book = sel.value, mine = ++seq;
      out.textContent = '';
      if (!term.trim()) return;
      fetch(root + '/suggest?content=' + enc(book) + '&term=' + enc(term) + '&count=10')
        .then(function (r) { return r.ok ? r.json() : []; })
        .then(function (items) {
          if (mine !== seq) return;
          out.textContent = '';
          items.forEach(function (it) {
            var a = document.createElement('a');
            a.className = 'suggestion';
            a.textContent = it.value;  // text, never HTML: titles are the archive's
            a.href = it.kind === 'path' && typeof it.path === 'string'
              ? viewer + enc(book) + '/' + it.path.split('/').map(enc).join('/')
              : viewer + 'search?books.name=' + enc(book) + '&pattern=' + enc(term);
            out.appendChild(a);
          });
        }).catch(function () {});
    }, 150);
  });
})();
"""

LIBRARY_CSS = r"""
*,*::before,*::after{box-sizing:border-box}
:root{--fg:#202122;--muted:#54595d;--bg:#fff;--panel:#f8f9fa;--line:#c8ccd1;--link:#3366cc;--chip:#eaecf0}
@media (prefers-color-scheme:dark){
  :root{--fg:#eaecf0;--muted:#c8ccd1;--bg:#101418;--panel:#1b2127;--line:#4a525a;--link:#8cb4ff;--chip:#2a3139}
}
html{color-scheme:light dark}
body{margin:0;font:16px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
:focus-visible{outline:3px solid var(--link);outline-offset:2px}
.lp-hide{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.lp-head,.lp-main,.lp-foot{max-width:80rem;margin:0 auto;padding:0 1rem}
.lp-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:.3rem 1rem;padding-top:.8rem}
.lp-head h1{font-size:1.6rem;margin:0}
.lp-filters{display:flex;flex-wrap:wrap;align-items:flex-end;gap:.6rem;margin:.8rem 0;padding:.7rem;
  background:var(--panel);border:1px solid var(--line);border-radius:8px}
.lp-field{display:flex;flex-direction:column;gap:.2rem;font-size:.9rem;color:var(--muted)}
.lp-field.lp-words{flex:1;min-width:12rem}
.lp-filters input,.lp-filters select,.lp-filters button,.lp-search input,.lp-search select,.lp-search button{
  font:inherit;font-size:1rem;min-height:2.4rem;padding:.3rem .5rem;border:1px solid var(--line);border-radius:6px;
  background:var(--bg);color:var(--fg)}
.lp-filters select{max-width:14rem}
.lp-filters button,.lp-search button{background:var(--link);border-color:var(--link);color:var(--bg);cursor:pointer;
  font-weight:600;padding:.3rem 1rem}
.lp-tagfilter{display:flex;align-items:center;gap:.4rem;font-size:.9rem}
.lp-count{margin:.3rem 0 .8rem;color:var(--muted)}
.books{list-style:none;margin:0;padding:0;display:grid;gap:.9rem;grid-template-columns:repeat(auto-fill,minmax(17rem,1fr))}
.book{display:grid;grid-template-columns:48px 1fr;gap:.2rem .8rem;align-content:start;padding:.8rem;
  border:1px solid var(--line);border-radius:8px;background:var(--bg)}
.book > *{grid-column:2;margin:0}
.book .lp-icon{grid-column:1;grid-row:1 / span 3;width:48px;height:48px;border-radius:6px;object-fit:contain}
.book .lp-noicon{background:var(--chip)}
.book h2{font-size:1.05rem;line-height:1.3;overflow-wrap:anywhere}
.book h2 a{text-decoration:none}.book h2 a:hover{text-decoration:underline}
.lp-desc{font-size:.95rem;overflow-wrap:anywhere}
.lp-meta{font-size:.88rem;color:var(--muted)}
.lp-tags{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3rem}
.lp-tags a{display:inline-block;padding:.05rem .5rem;border-radius:999px;background:var(--chip);color:var(--fg);
  font-size:.82rem;text-decoration:none}
.lp-tags a:hover{text-decoration:underline}
.lp-links{display:flex;flex-wrap:wrap;gap:.3rem 1rem;font-size:.92rem}
.lp-pages ul{list-style:none;display:flex;flex-wrap:wrap;gap:.3rem;padding:0;margin:1.2rem 0}
.lp-pages a,.lp-pages span{display:inline-block;min-width:2.4rem;padding:.4rem .6rem;text-align:center;
  border:1px solid var(--line);border-radius:6px;text-decoration:none}
.lp-pages a[aria-current]{background:var(--link);border-color:var(--link);color:var(--bg);font-weight:600}
.lp-pages span{border-color:transparent;color:var(--muted)}
.lp-search{margin:1.5rem 0;position:relative}
.lp-search h2{font-size:1.15rem}
.lp-search form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}
.lp-search .lp-field{flex:1;min-width:12rem}
#suggestions{max-width:36rem}
#suggestions a{display:block;padding:.35rem .5rem;border-bottom:1px solid var(--chip)}
.lp-foot{padding-bottom:1.5rem;color:var(--muted);font-size:.9rem}
@media (max-width:640px){
  .lp-filters{flex-direction:column;align-items:stretch}
  .lp-filters select{max-width:none}
  .books{grid-template-columns:1fr}
}
"""


def _version(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=6).hexdigest()


_FILES: dict[str, tuple[bytes, str]] = {
    "library.css": (LIBRARY_CSS.encode(), "text/css; charset=utf-8"),
    "library.js": (LIBRARY_JS.encode(), "application/javascript; charset=utf-8"),
}
# name -> (body, gzipped body, MIME type, version, ETag); made once: the files never change while serving
_ASSETS = {name: (data, gzip_bytes(data), mimetype, _version(data), '"' + _version(data) + '"')
           for name, (data, mimetype) in _FILES.items()}
ASSET_NAMES = tuple(_ASSETS)
CACHE_FOREVER = "max-age=31536000, public, immutable"


def asset_url(name: str, root: str = "") -> str:
    """The versioned URL of ``name`` (``library.css``, ``library.js``) under ``root``
    (already quoted): a new content is a new URL, so the old one may be cached for good."""
    return f"{root}/skin/{name}?v={_ASSETS[name][3]}"


def asset_response(request: Request, name: str) -> Response:
    """``/skin/NAME``: the file, cached for a year (immutable), tagged with its hash (304 on
    a matching If-None-Match), gzipped for a client that takes it; no body for HEAD."""
    data, packed, mimetype, _, etag = _ASSETS[name]
    coded = accepts_gzip(request)
    # the gzipped body is other bytes, so another tag; either revalidates (the file is the same)
    tag = etag[:-1] + '-z"' if coded else etag
    headers = {"Cache-Control": CACHE_FOREVER, "ETag": tag, "Vary": "Accept-Encoding",
               "X-Content-Type-Options": "nosniff"}
    inm = request.headers.get("if-none-match", "")
    tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
    if inm.strip() == "*" or etag in tags or etag[:-1] + '-z"' in tags:
        return Response(status_code=304, headers=headers)
    if coded:
        data = packed
        headers["Content-Encoding"] = "gzip"
    r = Response(data, media_type=mimetype, headers=headers)
    if request.method == "HEAD":
        r.body = b""
    return r
