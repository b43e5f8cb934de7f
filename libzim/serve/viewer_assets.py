"""The viewer's script and stylesheet, served at ``/skin/viewer.js`` and
``/skin/viewer.css`` (strings, as pages.py's are, so the package needs no data
files). Written for this project; kiwix's viewer was read for its behaviour only.

How the viewer works (``/viewer#BOOK/PATH``): the article is in an iframe,
same origin, loaded from ``/content/BOOK/PATH`` byte-exact. The toolbar's
home and random links and the search form *target* the frame by name, so they
work as plain links (keyboard, middle click) and each step is a frame
navigation in the browser's history: back and forward move the frame, and on
every frame load the script writes the frame's place into the address bar with
``history.replaceState`` (no new entry, no hashchange). A hash typed or linked
(hashchange) moves the frame with ``location.replace`` (the hash change made the
history entry already). Links the reader follows in the frame are looked at on
click: library content stays in the frame; the library's other pages replace
the whole window (never a viewer in a viewer); other sites replace the window
too (the viewer's CSP lets the frame show only this server), through
``/catch/external`` when external links are blocked.
"""

from __future__ import annotations

import hashlib

__all__ = ["VIEWER_JS", "VIEWER_CSS", "ASSET_VERSION"]

VIEWER_JS = r"""
(function () {
  'use strict';
  var body = document.body;
  var ROOT = body.getAttribute('data-root') || '';
  var BLOCK = body.getAttribute('data-block-external') === '1';
  var CONTENT = ROOT + '/content/';
  var frame = document.getElementById('zv-frame');
  var home = document.getElementById('zv-home');
  var random = document.getElementById('zv-random');
  var bookLabel = document.getElementById('zv-book');
  var form = document.getElementById('zv-search');  // absent with --nosearchbar
  var box = document.getElementById('zv-q');
  var bookField = document.getElementById('zv-search-book');
  var list = document.getElementById('zv-suggestions');
  var enc = encodeURIComponent;
  var currentBook, titles = {}, focusFrameNext = false;

  // -- where the frame is: "user URLs" (the hash) and frame URLs ------------

  function frameUrlFor(user) {
    // The frame's URL for a hash ("BOOK/PATH[#anchor]" or "search?QUERY"); null
    // when it would leave the library's content (dot segments, other origins).
    var url;
    try {
      url = user.indexOf('search?') === 0
        ? new URL(ROOT + '/search?' + user.slice(7), location.href)
        : new URL(CONTENT + user, location.href);
    } catch (e) { return null; }
    if (url.origin !== location.origin) return null;
    if (url.pathname === ROOT + '/search') return url;
    return url.pathname.indexOf(CONTENT) === 0 && url.pathname.length > CONTENT.length ? url : null;
  }

  function userUrlFor(loc) {
    // The hash for a frame location; null for pages that are not content or search.
    if (loc.origin !== location.origin) return null;
    if (loc.pathname.indexOf(CONTENT) === 0) return loc.pathname.slice(CONTENT.length) + loc.hash;
    if (loc.pathname === ROOT + '/search') return 'search' + loc.search;
    return null;
  }

  function bookOf(user) {
    if (user.indexOf('search?') === 0) {
      var q = new URLSearchParams(user.slice(7));
      return q.get('books.name') || q.get('content') || null;
    }
    var first = user.split('/')[0];
    try { return decodeURIComponent(first); } catch (e) { return first; }
  }

  function patternOf(user) {
    return user.indexOf('search?') === 0 ? new URLSearchParams(user.slice(7)).get('pattern') || '' : '';
  }

  // -- the toolbar ----------------------------------------------------------

  function setBook(name) {
    if (name === currentBook) return;
    currentBook = name;
    if (!name) { showBook(null); return; }
    if (titles[name] !== undefined) { showBook(name); return; }
    showBook(null);
    fetch(ROOT + '/raw/' + enc(name) + '/meta/Title')
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (t) { titles[name] = t === null ? null : t.trim() || name; if (currentBook === name) showBook(name); })
      .catch(function () {});
  }

  function showBook(name) {
    // The book's buttons for a book the library has; none (and a search of every book) otherwise.
    var title = name ? titles[name] : null;
    if (home) home.hidden = !title;
    if (random) random.hidden = !title;
    if (bookField) bookField.disabled = !title;
    if (title) {
      if (home) home.href = CONTENT + enc(name) + '/';
      if (random) random.href = ROOT + '/random?content=' + enc(name);
      if (bookField) bookField.value = name;
    }
    showTitle(title);
  }

  function showTitle(title) {
    // Text only (textContent, attributes): a book's title is the archive's, not ours.
    if (bookLabel) bookLabel.textContent = title || '';
    if (home && title) home.title = 'Main page of ' + title + ' (Alt+Shift+H)';
    if (box) {
      var what = title ? 'Search ' + title : 'Search every book';
      box.placeholder = what;
      box.setAttribute('aria-label', what + ' (press / to come here)');
    }
  }

  // -- following the frame ----------------------------------------------------

  function sync() {
    var win = frame.contentWindow, loc;
    try { loc = win.location; if (loc.href === 'about:blank') return; } catch (e) { return; }
    var user = userUrlFor(loc);
    if (user === null) {
      if (loc.pathname === ROOT + '/random') return;  // random's error page: stay, the hash keeps the book
      location.href = loc.href;  // the library or another of its pages: the whole window
      return;
    }
    if ('#' + user !== location.hash) history.replaceState(history.state, '', '#' + user);
    setBook(bookOf(user));
    try { document.title = win.document.title || titles[currentBook] || currentBook || 'Library'; } catch (e) {}
    if (box && document.activeElement !== box) box.value = patternOf(user);
  }

  function show() {
    // The hash changed (typed, linked, or history between two top-level entries).
    var user = location.hash.slice(1);
    var url = user ? frameUrlFor(user) : null;
    if (!url) { location.replace(ROOT + '/'); return; }  // nothing to read here: the library
    var current = '';
    try { current = frame.contentWindow.location.href; } catch (e) {}
    if (current === url.href) return;
    setBook(bookOf(user));
    frame.contentWindow.location.replace(url.href);
  }

  function onFrameLoad() {
    sync();
    var win = frame.contentWindow, doc;
    try { doc = win.document; } catch (e) { return; }
    doc.addEventListener('click', onLinkClick);
    doc.addEventListener('auxclick', onLinkClick);
    doc.addEventListener('contextmenu', onLinkMenu);
    doc.addEventListener('keydown', onKey);
    win.addEventListener('hashchange', sync);
    win.addEventListener('popstate', sync);
    if (focusFrameNext) { focusFrameNext = false; win.focus(); }
  }

  // -- links in the frame -------------------------------------------------------

  function linkOf(e) {
    var el = e.target;
    while (el && el.nodeType !== 1) el = el.parentNode;
    var a = el && el.closest ? el.closest('a[href], area[href]') : null;
    if (!a || a.hasAttribute('download')) return null;
    try { return { a: a, url: new URL(a.getAttribute('href'), a.ownerDocument.baseURI) }; } catch (err) { return null; }
  }

  function newWindow(a, e) {
    var t = (a.getAttribute('target') || '').toLowerCase();
    return e.type === 'auxclick' || e.ctrlKey || e.shiftKey || e.metaKey ||
      (t !== '' && t !== '_self' && t !== '_top' && t !== '_parent');
  }

  function viewerHref(user) { return location.pathname + '#' + user; }
  function catchHref(url) { return ROOT + '/catch/external?source=' + enc(url); }

  function destination(url) {
    // Where a link from the article goes: {frame: true}, {top: URL} or null (the browser's default).
    var web = url.protocol === 'http:' || url.protocol === 'https:';
    if (web && url.origin === location.origin) {
      var user = userUrlFor(url);
      if (user !== null || url.pathname === ROOT + '/random') return { frame: true, user: user };
      if (url.pathname === location.pathname) return { hash: url.hash };  // this viewer
      return { top: url.href };  // the library, /nojs, ...: not inside the frame
    }
    if (url.protocol === 'javascript:' || url.protocol === 'blob:' || url.protocol === 'data:') return null;
    if (BLOCK) return { top: catchHref(url.href) };
    return web ? { top: url.href } : null;  // mailto: and the like: the browser's apps
  }

  function onLinkClick(e) {
    if (e.defaultPrevented || (e.type === 'auxclick' && e.button !== 1)) return;
    var l = linkOf(e);
    var d = l && destination(l.url);
    if (!d) return;
    var a = l.a, wantsNew = newWindow(a, e);
    if (wantsNew) {  // a new tab: give it the viewer's or the catch page's URL, the browser does the rest
      if (d.user) a.setAttribute('href', viewerHref(d.user));
      else if (d.top) a.setAttribute('href', d.top);
      return;
    }
    if (d.frame) {
      var t = (a.getAttribute('target') || '').toLowerCase();
      if ((t === '_top' || t === '_parent') && d.user) { e.preventDefault(); frame.contentWindow.location.assign(l.url.href); }
      return;
    }
    e.preventDefault();
    if (d.hash !== undefined) location.hash = d.hash; else location.href = d.top;
  }

  function onLinkMenu(e) {
    // "Open in a new tab" and "Copy link" from the menu: the viewer's URL, the catch page's.
    var l = linkOf(e);
    var d = l && destination(l.url);
    if (d && d.user) l.a.setAttribute('href', viewerHref(d.user));
    else if (d && d.top && BLOCK) l.a.setAttribute('href', d.top);
  }

  // -- keyboard -----------------------------------------------------------------

  function editable(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  function onKey(e) {
    if (e.key === '/' && box && !e.ctrlKey && !e.metaKey && !e.altKey && !editable(e.target)) {
      e.preventDefault();
      window.focus();
      box.focus();
      box.select();
    }
  }

  function focusFrame() { frame.focus(); try { frame.contentWindow.focus(); } catch (e) {} }

  // -- type-ahead -------------------------------------------------------------------

  var timer = 0, seq = 0, active = -1, items = [], fulltext = true;

  function closeSuggestions() {
    seq++;
    items = []; active = -1;
    if (!list) return;
    list.textContent = '';
    list.hidden = true;
    box.setAttribute('aria-expanded', 'false');
    box.removeAttribute('aria-activedescendant');
  }

  function suggest() {
    var term = box.value, book = currentBook, mine = ++seq;
    if (!term.trim() || !book || !titles[book]) { closeSuggestions(); return; }
    fetch(ROOT + '/suggest?content=' + enc(book) + '&term=' + enc(term) + '&count=10')
      .then(function (r) { return r.ok ? r.json() : []; })
      .then(function (rows) { if (mine === seq && document.activeElement === box) render(rows, book, term); })
      .catch(function () {});
  }

  function render(rows, book, term) {
    closeSuggestions();
    // /suggest ends with the full-text row only for a book with a full-text index.
    fulltext = rows.some(function (r) { return r.kind !== 'path'; });
    rows.forEach(function (r, i) {
      var li = document.createElement('li'), a = document.createElement('a');
      li.id = 'zv-opt-' + i;
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', 'false');
      a.tabIndex = -1;
      a.target = 'zv-frame';
      if (r.kind === 'path' && typeof r.path === 'string') {
        a.href = CONTENT + enc(r.book || book) + '/' + r.path.split('/').map(enc).join('/');
        a.textContent = String(r.value);
      } else {
        a.href = ROOT + '/search?books.name=' + enc(book) + '&pattern=' + enc(term);
        a.textContent = 'Search all articles for \u201c' + term + '\u201d';
        a.className = 'zv-fulltext';
      }
      a.addEventListener('click', function () { closeSuggestions(); box.blur(); focusFrameNext = true; });
      li.appendChild(a);
      list.appendChild(li);
      items.push(li);
    });
    list.hidden = items.length === 0;
    box.setAttribute('aria-expanded', items.length ? 'true' : 'false');
  }

  function move(step) {
    if (active >= 0) items[active].setAttribute('aria-selected', 'false');
    active = (active + 1 + step + items.length + 1) % (items.length + 1) - 1;  // -1: back in the box
    if (active < 0) { box.removeAttribute('aria-activedescendant'); return; }
    items[active].setAttribute('aria-selected', 'true');
    box.setAttribute('aria-activedescendant', items[active].id);
    items[active].scrollIntoView({ block: 'nearest' });
  }

  function setupSearch() {
    box.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(suggest, 120); });
    box.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        if (items.length) move(e.key === 'ArrowDown' ? 1 : -1); else suggest();
      } else if (e.key === 'Escape') {
        e.preventDefault();
        if (items.length) closeSuggestions(); else { box.blur(); focusFrame(); }
      } else if (e.key === 'Enter' && active >= 0) {
        e.preventDefault();
        items[active].firstChild.click();
      }
    });
    box.addEventListener('blur', closeSuggestions);
    list.addEventListener('mousedown', function (e) { e.preventDefault(); });  // keep the box focused: the click lands
    form.addEventListener('submit', function (e) {
      // The form targets the frame: the browser submits it there (GET /search).
      if (!box.value.trim()) { e.preventDefault(); return; }
      if (!fulltext && items.length) {  // no full-text index: Enter opens the best title, not an error page
        e.preventDefault();
        items[0].firstChild.click();
        return;
      }
      closeSuggestions();
      box.blur();
      focusFrameNext = true;
    });
  }

  [home, random].forEach(function (a) {
    if (a) a.addEventListener('click', function () { focusFrameNext = true; });
  });
  if (form && box && list) setupSearch();
  document.addEventListener('keydown', onKey);
  frame.addEventListener('load', onFrameLoad);
  window.addEventListener('hashchange', show);
  show();
})();
"""

VIEWER_CSS = r"""
*,*::before,*::after{box-sizing:border-box}
html,body{margin:0}
body{font:16px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#202122;background:#fff}
[hidden]{display:none!important}
:focus-visible{outline:3px solid #3366cc;outline-offset:1px}
.zv-hide{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
svg.zv-icon{width:1.15em;height:1.15em;flex:none;fill:none;stroke:currentColor;stroke-width:2;
  stroke-linecap:round;stroke-linejoin:round}
svg.zv-icon .dot{fill:currentColor;stroke:none}

/* the viewer: a toolbar over a frame that takes the rest of the window */
html.zv-viewer,html.zv-viewer body{height:100%}
body.zv-viewer{display:flex;flex-direction:column;overflow:hidden}
#zv-bar{flex:none;display:flex;align-items:center;gap:.4em;padding:.35em .6em;background:#f8f9fa;
  border-bottom:1px solid #c8ccd1;position:relative;z-index:2}
.zv-btn{display:inline-flex;align-items:center;gap:.35em;min-height:2.3em;padding:.3em .65em;
  border:1px solid #c8ccd1;border-radius:6px;background:#fff;color:#202122;text-decoration:none;white-space:nowrap}
.zv-btn:hover{background:#eaecf0;border-color:#a2a9b1}
#zv-home{max-width:22em;min-width:0}
#zv-book{overflow:hidden;text-overflow:ellipsis;font-weight:600}
#zv-search,.zv-gap{flex:1;min-width:5em;position:relative;display:flex;margin:0}
#zv-q{flex:1;width:100%;min-height:2.3em;font:inherit;padding:.3em .7em;border:1px solid #a2a9b1;border-radius:6px;
  background:#fff;color:inherit}
#zv-suggestions{position:absolute;top:100%;left:0;right:0;margin:3px 0 0;padding:.2em 0;list-style:none;background:#fff;
  border:1px solid #a2a9b1;border-radius:6px;box-shadow:0 4px 12px rgba(0,0,0,.18);max-height:70vh;overflow:auto}
#zv-suggestions a{display:block;padding:.5em .75em;color:#202122;text-decoration:none;overflow:hidden;text-overflow:ellipsis}
#zv-suggestions li[aria-selected=true] a,#zv-suggestions a:hover{background:#eaf3ff}
#zv-suggestions a.zv-fulltext{border-top:1px solid #eaecf0;color:#3366cc}
.zv-main{flex:1;display:flex;flex-direction:column;min-height:0}
#zv-frame{flex:1;display:block;width:100%;min-height:0;border:0}
.zv-noscript{margin:0;padding:.6em;background:#fef6e7}
@media (max-width:640px){
  #zv-bar{gap:.3em;padding:.3em .35em}
  .zv-btn{padding:.3em .5em}
  .zv-btn .zv-label{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
}

/* the plain pages: /nojs, /catch/external */
.zv-page{max-width:48em;margin:0 auto;padding:1em}
.zv-page h1{font-size:1.5em;margin:.3em 0 .6em}
.zv-page form{display:flex;flex-wrap:wrap;gap:.4em;margin:.8em 0}
.zv-page input,.zv-page select,.zv-page button{font:inherit;padding:.3em .5em}
.zv-page input[type=search],.zv-page input[type=text]{flex:1;min-width:10em}
.zv-books{list-style:none;padding:0}
.zv-books li{padding:.6em 0;border-bottom:1px solid #eaecf0;overflow:hidden}
.zv-books img{float:left;margin:0 .7em .3em 0}
.zv-books .zv-title{font-size:1.1em;font-weight:600}
.zv-books .zv-meta,.zv-books .zv-desc{color:#54595d;font-size:.92em}
.zv-url{display:block;padding:.6em;background:#f8f9fa;border:1px solid #c8ccd1;border-radius:4px;word-break:break-all}
"""

ASSET_VERSION = hashlib.blake2b((VIEWER_JS + VIEWER_CSS).encode(), digest_size=6).hexdigest()
