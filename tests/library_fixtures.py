"""A library of small indexed archives for the library-search tests and bench.

Archive k has ``pages`` pages.  Page j of archive k contains the made-up word
``LIB_WORD`` ``(j + k) % 5 + 1`` times among the same amount of filler, so
relevance scores differ between pages and between archives; ``RARE_WORD`` is
only on the pages with ``(j * 7 + k) % 4 == 0``.  Every title starts with
``Ledger``, so title suggestions find every page.  The expected hit sets are
computed from these rules (``pages_with_word``), not from a search.
"""

from __future__ import annotations

import html
from pathlib import Path

from corpus import build_zim_from_dir

LIB_WORD = "quorvex"
RARE_WORD = "zintrak"
FILLER = (
    "Harbour lights flicker while the ferry waits for the morning tide. "
    "Orchard keepers store apples in barrels of straw through the winter. "
    "The mountain railway climbs in tight loops above the pine forest. "
)


def page_path(k: int, j: int) -> str:
    return f"lib{k}/page{j:03d}.html"


def page_title(k: int, j: int) -> str:
    return f"Ledger {k} folio {j:03d}"


def lib_word_count(k: int, j: int) -> int:
    return (j + k) % 5 + 1


def has_rare(k: int, j: int) -> bool:
    return (j * 7 + k) % 4 == 0


def pages_with_word(k: int, pages: int, word: str) -> set[str]:
    if word == LIB_WORD:
        return {page_path(k, j) for j in range(pages)}
    if word == RARE_WORD:
        return {page_path(k, j) for j in range(pages) if has_rare(k, j)}
    raise ValueError(word)


def _page(k: int, j: int) -> str:
    n = lib_word_count(k, j)
    words = " ".join([LIB_WORD] * n)
    rare = f" The {RARE_WORD} entry." if has_rare(k, j) else ""
    body = f"<p>{words}. {html.escape(FILLER * (6 - n))}{rare}</p><p>Folio {j} of ledger {k}.</p>"
    title = html.escape(page_title(k, j))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>"
            f"<body><h1>{title}</h1>{body}</body></html>\n")


def build_archive(root: Path, k: int, pages: int) -> Path:
    src = root / f"src{k}"
    for j in range(pages):
        p = src / page_path(k, j)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_page(k, j), encoding="utf-8")
    links = "".join(f'<li><a href="{page_path(k, j)}">folio</a></li>' for j in range(pages))
    (src / "index.html").write_text(
        f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index {k}</title></head>"
        f"<body><ul>{links}</ul></body></html>\n", encoding="utf-8")
    return build_zim_from_dir(src, root / f"lib{k}.zim", title=f"Library archive {k}",
                              name=f"libzim_c_lib{k}", threads=1)


def build_library(root: Path, archives: int, pages: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    return [build_archive(root, k, pages) for k in range(archives)]
