#!/usr/bin/env python3
"""Deterministic Wikipedia-like ZIM archives at any size (issue 28), written with libzim.writer.

    python3 tools/synthetic.py 10000                  # 10,000 articles + ~6,700 redirects
    python3 tools/synthetic.py --title-only 3000000   # 5,000,000 entries, no full-text index
    python3 tools/synthetic.py 400 --out /tmp/s.zim   # anywhere, not cached
    python3 tools/synthetic.py --zstd-level 3 1000000 # clusters at zstd 3, not libzim's 19

N counts articles; about 40% of all entries are redirects on top (2N/3 of
them), so a title-only archive of 3,000,000 articles has 5,000,000 entries,
English Wikipedia's order of entries.  Archives are cached in
``~/.cache/libzim-c/scale/`` (never in the repository) by size, seed, mode and
the generator's format, and only appear once complete.

Everything comes from the seed: a ``random.Random(seed)`` drives every choice,
over a vocabulary of real English words read from text a Debian package ships
(python3.11-doc's reStructuredText sources; the Python standard library's own
sources when that package is absent: which one is recorded in the archive's
``Source`` metadata).  What a page is made of, and why:

- words drawn from a Zipf law (exponent 1.0, rank = the word's rank by
  frequency in the source text), so common words have long posting lists and
  rare ones short; a fixed set of recurring phrases (2-4 words, themselves
  Zipf-drawn) is spliced into a quarter of the sentences, so phrase queries
  match;
- article lengths log-normal, median 400 words, sigma 1.1 (about 0.2% of
  articles past 10,000 words, capped at 60,000);
- a title of 1-3 capitalised content words (disambiguated like Wikipedia's
  "Word (other)"), path = the title with underscores;
- redirects: 2 per 3 articles, to articles picked by popularity (Zipf over
  the article order), titled as variants and other names;
- internal links (one per ~40 words, to articles picked by popularity),
  ``<h2>`` headings every ~150 words, an infobox-like ``<table
  class="infobox">``, and a ``<div class="navbox" role="navigation">`` of
  links (what ``main_only`` drops);
- an illustration (a small PNG) in the infobox of one article in 20;
- full-text and title indexes (the full-text one off in title-only mode,
  where articles are also stubs of a sentence, median 8 words, and one
  link: libzim compresses every cluster at zstd level 19, most of a build's
  CPU, and the title-only archive is for titles, not content).

``--zstd-level N`` compresses the clusters at level N instead of libzim's 19
(which no libzim API changes): the process re-runs itself with
``tools/zstd_level.c`` preloaded, compiled into the cache on first use.  At
level 3 a full-text build costs about half the CPU, so the 1,000,000-article
archive fits in a session; its clusters hold the same blobs, the file is
larger, and zstd decodes them about as fast.  The cached name ends in
``-z3`` and the archive's Description says the level.

Not part of the installed package; needs the built extension (``libzim.writer``).
"""

from __future__ import annotations

import bisect
import hashlib
import math
import os
import random
import re
import shutil
import struct
import sys
import sysconfig
import zlib
from html import escape
from pathlib import Path
from urllib.parse import quote

__all__ = ["Vocabulary", "Generator", "ensure_synthetic_zim", "build_synthetic_zim",
           "synthetic_zim_path", "SCALE_CACHE_DIR"]

SCALE_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "libzim-c" / "scale"

# Bump when the generated content changes, so cached archives are not reused.
FORMAT = 2  # 2: title-only stubs of one sentence (median 8 words) and one link

DOC_SOURCES = Path("/usr/share/doc/python3.11-doc/html/_sources")
DICTIONARY = Path("/usr/share/dict/words")
VOCABULARY_SIZE = 30_000
STOP_WORDS = 150  # the most frequent words: not used in titles
PHRASES = 3_000
REDIRECTS_PER_ARTICLE = 2 / 3  # 40% of all entries
ILLUSTRATION_EVERY = 20
MEDIAN_WORDS, SIGMA, MAX_WORDS = 400, 1.1, 60_000
STUB_MEDIAN_WORDS = 8
ZSTD_LEVEL_ENV = "LIBZIM_C_ZSTD_LEVEL"  # read by tools/zstd_level.c

_WORD = re.compile(r"[a-z]{2,}")


class Vocabulary:
    """Real English words ranked by their frequency in a source text, with Zipf weights."""

    def __init__(self, counts: dict[str, int], source: str, size: int = VOCABULARY_SIZE) -> None:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]
        self.words = [w for w, _ in ranked]
        self.source = source
        total = 0.0
        self.cum = []
        for rank in range(1, len(self.words) + 1):
            total += 1.0 / rank
            self.cum.append(total)
        content = self.words[STOP_WORDS:]
        self.content_words = content
        total = 0.0
        self.content_cum = []
        for rank in range(1, len(content) + 1):
            total += 1.0 / rank ** 0.7  # titles use rarer words more evenly than prose
            self.content_cum.append(total)

    @classmethod
    def load(cls) -> "Vocabulary":
        """From python3.11-doc's text if installed, else from the standard library's sources;
        only the words of /usr/share/dict/words when it exists (Debian ``wamerican``)."""
        if DOC_SOURCES.is_dir():
            files = sorted(DOC_SOURCES.rglob("*.txt"))
            source = f"words of {DOC_SOURCES} (Debian python3.11-doc)"
        else:
            stdlib = Path(sysconfig.get_paths()["stdlib"])
            files = sorted(stdlib.glob("*.py"))
            source = f"words of {stdlib}/*.py (Python {sys.version.split()[0]} standard library)"
        english = None
        if DICTIONARY.is_file():  # drop the identifiers code samples leave in the text
            english = set(DICTIONARY.read_text(encoding="utf-8", errors="replace").split())
            source += f", those in {DICTIONARY} (Debian wamerican)"
        counts: dict[str, int] = {}
        for f in files:
            for w in _WORD.findall(f.read_text(encoding="utf-8", errors="replace").lower()):
                counts[w] = counts.get(w, 0) + 1
        if english is not None:
            counts = {w: c for w, c in counts.items() if w in english}
        if len(counts) < 1000:
            raise RuntimeError(f"too few words ({len(counts)}) in {source}")
        return cls(counts, source)


def png(size: int, seed: int) -> bytes:
    """A size x size RGB PNG whose colours depend on ``seed`` (deterministic bytes)."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    r, g, b = (seed * 37) & 0xFF, (seed * 91) & 0xFF, (seed * 53) & 0xFF
    rows = b"".join(
        b"\0" + b"".join(bytes(((x * 5 + r) & 0xFF, (y * 5 + g) & 0xFF, b)) for x in range(size))
        for y in range(size))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 6))
            + chunk(b"IEND", b""))


def path_of(title: str) -> str:
    return title.replace(" ", "_")


class Generator:
    """The archive's content as plain data: titles, redirects, pages. ``seed`` decides all."""

    def __init__(self, articles: int, seed: int = 1, *, title_only: bool = False,
                 vocabulary: Vocabulary | None = None) -> None:
        self.n = articles
        self.seed = seed
        self.title_only = title_only
        self.vocab = vocabulary or Vocabulary.load()
        rng = random.Random(f"libzim-c synthetic {seed} titles")
        self.titles = self._titles(rng, articles)
        # Popularity: links and redirects favour early articles (Zipf over the order).
        self.pop_cum = list(_accumulate(1.0 / (i + 1) for i in range(articles)))
        self.phrases = [self._words(rng, rng.randint(2, 4)) for _ in range(PHRASES)]
        self.phrase_cum = list(_accumulate(1.0 / (i + 1) for i in range(PHRASES)))
        self.redirects = self._redirects(rng, round(articles * REDIRECTS_PER_ARTICLE))

    # -- names

    def _words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocab.words, cum_weights=self.vocab.cum, k=k)

    def _title_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocab.content_words, cum_weights=self.vocab.content_cum, k=k)

    def _new_title(self, rng: random.Random, taken: set[str]) -> str:
        k = rng.choices((1, 2, 3), weights=(3, 5, 2))[0]
        words = [w.capitalize() for w in self._title_words(rng, k)]
        if k > 1 and rng.random() < 0.15:
            words.insert(1, "of")
        title = " ".join(words)
        if title in taken:
            title = f"{title} ({self._title_words(rng, 1)[0]})"
        n = 2
        base = title
        while title in taken:
            title = f"{base} {n}"
            n += 1
        taken.add(title)
        return title

    def _titles(self, rng: random.Random, n: int) -> list[str]:
        self._taken: set[str] = set()
        return [self._new_title(rng, self._taken) for _ in range(n)]

    def _redirects(self, rng: random.Random, n: int) -> list[tuple[str, int]]:
        """(redirect title, index of the target article); titles unique among all entries."""
        out = []
        for _ in range(n):
            target = self.popular(rng)
            t = self.titles[target]
            kind = rng.random()
            if kind < 0.3 and t.lower() not in self._taken:
                alt = t.lower()  # a case variant
                self._taken.add(alt)
            elif kind < 0.5 and " " in t and " ".join(reversed(t.split())) not in self._taken:
                alt = " ".join(reversed(t.split()))  # a word-order variant
                self._taken.add(alt)
            else:
                alt = self._new_title(rng, self._taken)  # another name
            out.append((alt, target))
        del self._taken
        return out

    def popular(self, rng: random.Random) -> int:
        return bisect.bisect(self.pop_cum, rng.random() * self.pop_cum[-1])

    # -- pages

    def page_rng(self, i: int) -> random.Random:
        return random.Random(f"libzim-c synthetic {self.seed} page {i}")

    def word_count(self, rng: random.Random) -> int:
        median = STUB_MEDIAN_WORDS if self.title_only else MEDIAN_WORDS
        return max(5, min(MAX_WORDS, int(rng.lognormvariate(math.log(median), SIGMA))))

    def illustrated(self, i: int) -> bool:
        return i % ILLUSTRATION_EVERY == 0

    def _link(self, rng: random.Random) -> str:
        t = self.titles[self.popular(rng)]
        return f'<a href="{escape(quote(path_of(t)))}">{escape(t)}</a>'

    def _prose(self, rng: random.Random, n_words: int) -> list[str]:
        """Sentences of about n_words words, with recurring phrases and links."""
        words = self._words(rng, n_words)
        out = []
        i = 0
        while i < n_words:
            k = rng.randint(6, 24)
            s = words[i:i + k]
            i += k
            if rng.random() < 0.25:
                phrase = self.phrases[bisect.bisect(self.phrase_cum, rng.random() * self.phrase_cum[-1])]
                at = rng.randrange(len(s) + 1)
                s[at:at] = phrase
            s[0] = s[0].capitalize()  # before a link can come first: capitalize() lowers the rest
            if rng.random() < k / 40:  # about one link per 40 words
                s.insert(rng.randrange(len(s) + 1), self._link(rng))
            out.append(" ".join(s) + ".")
        return out

    def page(self, i: int) -> str:
        """Article i's HTML."""
        rng = self.page_rng(i)
        title = escape(self.titles[i])
        n_words = self.word_count(rng)
        if self.title_only:  # a stub: millions of them must write fast
            nav = self._link(rng)
            return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
                    f"</title></head>\n<body><h1>{title}</h1>\n<p>{' '.join(self._prose(rng, n_words))}"
                    f'</p>\n<div class="navbox" role="navigation">{nav}</div></body></html>\n')
        parts = [f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
                 f'</title></head>\n<body><h1>{title}</h1>\n<table class="infobox"><tr><th colspan="2">'
                 f"{title}</th></tr>"]
        if self.illustrated(i):
            parts.append(f'<tr><td colspan="2"><img src="{escape(quote(self.image_path(i)))}" '
                         f'alt="{title}" width="48" height="48"></td></tr>')
        for _ in range(rng.randint(4, 8)):
            key = " ".join(self._words(rng, rng.randint(1, 2))).capitalize()
            parts.append(f"<tr><th>{key}</th><td>{' '.join(self._words(rng, rng.randint(1, 4)))}</td></tr>")
        parts.append("</table>\n")
        sentences = self._prose(rng, n_words)
        written = 0
        para: list[str] = []
        for s in sentences:
            para.append(s)
            written += s.count(" ") + 1
            if len(para) >= rng.randint(3, 7):
                parts.append("<p>" + " ".join(para) + "</p>\n")
                para = []
                if written >= 150 and rng.random() < 0.5:
                    heading = " ".join(self._title_words(rng, rng.randint(1, 3))).capitalize()
                    parts.append(f"<h2>{heading}</h2>\n")
                    written = 0
        if para:
            parts.append("<p>" + " ".join(para) + "</p>\n")
        nav = " · ".join(self._link(rng) for _ in range(rng.randint(8, 20)))
        parts.append(f'<div class="navbox" role="navigation"><b>See also</b> {nav}</div>\n'
                     "</body></html>\n")
        return "".join(parts)

    def image_path(self, i: int) -> str:
        return f"img/{path_of(self.titles[i])}.png"

    def image(self, i: int) -> bytes:
        return png(16 + i % 17, i)

    def digest(self, limit: int | None = None) -> str:
        """sha256 over titles, redirects and the first ``limit`` pages: determinism checks."""
        h = hashlib.sha256()
        for t in self.titles:
            h.update(t.encode() + b"\n")
        for alt, target in self.redirects:
            h.update(f"{alt}\t{target}\n".encode())
        for i in range(self.n if limit is None else min(limit, self.n)):
            h.update(self.page(i).encode())
        return h.hexdigest()


def _accumulate(xs):
    total = 0.0
    for x in xs:
        total += x
        yield total


def synthetic_zim_path(articles: int, seed: int = 1, *, title_only: bool = False,
                       cache_dir: str | os.PathLike[str] | None = None,
                       zstd_level: int | None = None) -> Path:
    """Where ensure_synthetic_zim caches this archive (built or not)."""
    cache = Path(cache_dir) if cache_dir is not None else SCALE_CACHE_DIR
    mode = "titles" if title_only else "full"
    level = "" if zstd_level is None else f"-z{zstd_level}"
    return cache / f"synthetic-{articles}-s{seed}-{mode}-f{FORMAT}{level}.zim"


def zstd_level_in_effect() -> int | None:
    """The level tools/zstd_level.c gives libzim's clusters in this process, if preloaded."""
    level = os.environ.get(ZSTD_LEVEL_ENV)
    preloaded = "zstd_level" in os.environ.get("LD_PRELOAD", "")
    return int(level) if level and preloaded else None


def reexec_with_zstd_level(level: int) -> None:
    """Run this command again with tools/zstd_level.c preloaded (compiled once)."""
    import subprocess

    src = Path(__file__).resolve().parent / "zstd_level.c"
    lib = SCALE_CACHE_DIR / f"zstd_level-{hashlib.sha256(src.read_bytes()).hexdigest()[:12]}.so"
    if not lib.is_file():
        lib.parent.mkdir(parents=True, exist_ok=True)
        tmp = lib.with_suffix(".tmp")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(tmp), str(src), "-lzstd"], check=True)
        os.replace(tmp, lib)
    env = dict(os.environ, **{ZSTD_LEVEL_ENV: str(level)})
    # After what is preloaded already (ASan's runtime must come first); libzstd,
    # loaded later, still comes after it.
    env["LD_PRELOAD"] = " ".join(x for x in (os.environ.get("LD_PRELOAD", ""), str(lib)) if x)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def ensure_synthetic_zim(articles: int, seed: int = 1, *, title_only: bool = False,
                         cache_dir: str | os.PathLike[str] | None = None, workers: int = 2,
                         progress=None) -> Path:
    """The cached synthetic archive, built first if missing."""
    out = synthetic_zim_path(articles, seed, title_only=title_only, cache_dir=cache_dir,
                             zstd_level=zstd_level_in_effect())
    if out.is_file() and out.stat().st_size > 0:
        return out
    return build_synthetic_zim(out, articles, seed, title_only=title_only, workers=workers,
                               progress=progress)


def build_synthetic_zim(out: str | os.PathLike[str], articles: int, seed: int = 1, *,
                        title_only: bool = False, workers: int = 2, progress=None) -> Path:
    """Write the archive to ``out`` (under a temporary name, renamed when complete)."""
    from libzim.writer import Creator, Hint, Item, StringProvider

    class Page(Item):
        def __init__(self, path: str, title: str, mimetype: str, data: bytes, front: bool) -> None:
            super().__init__()
            self.p, self.t, self.m, self.d, self.front = path, title, mimetype, data, front

        def get_path(self) -> str:
            return self.p

        def get_title(self) -> str:
            return self.t

        def get_mimetype(self) -> str:
            return self.m

        def get_contentprovider(self) -> StringProvider:
            return StringProvider(self.d)

        def get_hints(self) -> dict:
            return {Hint.FRONT_ARTICLE: self.front, Hint.COMPRESS: self.front}

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    gen = Generator(articles, seed, title_only=title_only)
    tmp = out.with_name(out.name + ".tmp")
    for left in (tmp, *out.parent.glob(out.name + ".tmp_*.idx.tmp")):  # an interrupted build's
        shutil.rmtree(left) if left.is_dir() else left.unlink(missing_ok=True)
    front = {Hint.FRONT_ARTICLE: True}
    level = zstd_level_in_effect()
    with Creator(tmp).config_indexing(not title_only, "eng").config_nbworkers(workers) as c:
        c.set_mainpath(path_of(gen.titles[0]))
        c.add_illustration(48, png(48, seed))
        for name, value in (("Title", f"Synthetic Wikipedia {articles}"), ("Language", "eng"),
                            ("Creator", "libzim-c"), ("Publisher", "libzim-c"),
                            ("Name", f"libzim-c_synthetic_{articles}"), ("Date", "2026-01-01"),
                            ("Description", f"Synthetic Wikipedia-like archive, seed {seed}"
                             + ("" if level is None else f", clusters at zstd level {level}")),
                            ("Source", gen.vocab.source)):
            c.add_metadata(name, value)
        for i, title in enumerate(gen.titles):
            c.add_item(Page(path_of(title), title, "text/html", gen.page(i).encode(), True))
            if gen.illustrated(i):
                c.add_item(Page(gen.image_path(i), "", "image/png", gen.image(i), False))
            if progress and i % 10_000 == 0:
                progress(f"{i:,} / {articles:,} articles")
        for alt, target in gen.redirects:
            c.add_redirection(path_of(alt), alt, path_of(gen.titles[target]), front)
        if progress:
            progress("finishing (clusters, indexes)")
    os.replace(tmp, out)
    return out


def main() -> None:
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's libzim
    import time

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("articles", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--title-only", action="store_true", help="no full-text index, stub articles")
    ap.add_argument("--out", help="write here instead of the cache (always rebuilt)")
    ap.add_argument("--cache-dir")
    ap.add_argument("--workers", type=int, default=2, help="libzim writer workers")
    ap.add_argument("--zstd-level", type=int, help="compress clusters at this level, not libzim's 19")
    args = ap.parse_args()
    if args.zstd_level is not None and zstd_level_in_effect() != args.zstd_level:
        reexec_with_zstd_level(args.zstd_level)
    t0 = time.monotonic()

    def progress(msg: str) -> None:
        print(f"[{time.monotonic() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    if args.out:
        path = build_synthetic_zim(args.out, args.articles, args.seed, title_only=args.title_only,
                                   workers=args.workers, progress=progress)
    else:
        path = ensure_synthetic_zim(args.articles, args.seed, title_only=args.title_only,
                                    cache_dir=args.cache_dir, workers=args.workers, progress=progress)
    progress(f"done: {path}")
    print(path)


if __name__ == "__main__":
    main()
