"""What the tools take out of an article's HTML besides its text: headings, the
sections they open, and links; and the snippet's highlighting as Markdown.

The text itself is the binding's (``Item.get_text``, one C++ pass without the
GIL); these helpers are regular expressions over the HTML, run only when a call
needs them (a section, the headings of a cut article, the links).
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

__all__ = ["Heading", "headings", "locate_headings", "section_span", "links", "snippet_markdown"]

_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_ANCHOR = re.compile(r"""<a\b([^>]*)>(.*?)</a\s*>""", re.I | re.S)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_FAKE_ROOT = "http://entry.invalid/"
_PERMALINK = "¶"


def _inline_text(fragment: str) -> str:
    """An HTML fragment's text on one line: tags dropped, entities decoded, spaces collapsed."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", fragment))).strip()


@dataclass(frozen=True)
class Heading:
    """A heading: its level (1-6), its text as the article text has it
    (``line``) and as shown (``title``: without Sphinx's trailing pilcrow)."""

    level: int
    line: str
    title: str


def headings(page: str) -> list[Heading]:
    """The ``h1``-``h6`` headings of an HTML page, in order (empty ones left out)."""
    out = []
    for m in _HEADING.finditer(page):
        line = _inline_text(m.group(2))
        title = line.rstrip(_PERMALINK + " ")
        if title:
            out.append(Heading(int(m.group(1)), line, title))
    return out


def locate_headings(text: str, found: list[Heading]) -> list[tuple[Heading, int]]:
    """Each heading found as a line of ``text`` (in order, each after the last),
    with the character offset where that line starts; headings the text lacks
    (dropped as navigation) are left out. One pass over the lines, then a
    binary search per heading: a long page with hundreds of headings stays cheap."""
    at: dict[str, list[int]] = {}
    starts: list[int] = []
    pos = 0
    for j, line in enumerate(text.split("\n")):
        starts.append(pos)
        pos += len(line) + 1
        at.setdefault(line.strip(), []).append(j)
    out: list[tuple[Heading, int]] = []
    i = 0
    for h in found:
        best = None
        for key in {h.line, h.title}:
            rows = at.get(key)
            if rows:
                k = bisect.bisect_left(rows, i)
                if k < len(rows) and (best is None or rows[k] < best):
                    best = rows[k]
        if best is not None:
            out.append((h, starts[best]))
            i = best + 1
    return out


def section_span(located: list[tuple[Heading, int]], wanted: str, length: int) -> tuple[int, int, str] | None:
    """The span ``(start, end, title)`` of the section whose heading is ``wanted``
    (exact, case-insensitive, else the first heading that contains it): up to
    the next heading of the same or a higher level; None when no heading matches."""
    key = wanted.strip().casefold()
    pick = next((k for k, (h, _) in enumerate(located) if h.title.casefold() == key), None)
    if pick is None:
        pick = next((k for k, (h, _) in enumerate(located) if key in h.title.casefold()), None)
    if pick is None:
        return None
    h, start = located[pick]
    end = length
    for other, at in located[pick + 1:]:
        if other.level <= h.level:
            end = at
            break
    return start, end, h.title


def links(page: str, from_path: str, limit: int) -> tuple[list[tuple[str, str, str]], int, bool]:
    """The page's links: ``(path, fragment, text)`` for those inside the archive
    (relative URLs resolved against ``from_path``, each path once, at most
    ``limit``), the number of links leaving it, and whether some were cut."""
    inside: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    external = 0
    cut = False
    base = _FAKE_ROOT + from_path
    for m in _ANCHOR.finditer(page):
        href_m = _HREF.search(m.group(1))
        if href_m is None:
            continue
        href = html.unescape(next(g for g in href_m.groups() if g is not None)).strip()
        if not href or href.startswith("#"):
            continue
        try:
            parts = urlsplit(urljoin(base, href))
        except ValueError:  # a malformed URL in the page: not a link we can follow
            continue
        if parts.scheme != "http" or parts.netloc != "entry.invalid":
            external += 1
            continue
        path = unquote(parts.path[1:])
        if not path or path == from_path or path in seen:
            continue
        if len(inside) >= limit:
            cut = True
            continue
        seen.add(path)
        inside.append((path, parts.fragment, _inline_text(m.group(2))[:120]))
    return inside, external, cut


_BOLD = re.compile(r"</?b>")


def snippet_markdown(snippet: str) -> str:
    """A snippet as plain text with its highlighted words in ``**bold**`` (fewer
    tokens than ``<b>``), entities decoded."""
    return html.unescape(_BOLD.sub("**", snippet))
