"""Items, providers and checks shared by the writer tests."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path

from libzim import writer


def png(size: int = 48) -> bytes:
    """A valid grey square PNG (zimcheck wants a real illustration)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80" * size for _ in range(size))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class TextItem(writer.Item):
    """An item whose content is a str or bytes, served by StringProvider."""

    def __init__(self, path, title, content, mimetype="text/html", hints=None):
        super().__init__()
        self.path, self.title, self.content, self.mimetype = path, title, content, mimetype
        self.hints = {writer.Hint.FRONT_ARTICLE: True} if hints is None else hints

    def get_path(self):
        return self.path

    def get_title(self):
        return self.title

    def get_mimetype(self):
        return self.mimetype

    def get_contentprovider(self):
        return writer.StringProvider(self.content)

    def get_hints(self):
        return self.hints


class PiecesProvider(writer.ContentProvider):
    """Feeds its parts through gen_blob, one Blob each."""

    def __init__(self, parts):
        super().__init__()
        self.parts = parts

    def get_size(self):
        return sum(len(p) for p in self.parts)

    def gen_blob(self):
        for p in self.parts:
            yield writer.Blob(p)


class WordsIndex(writer.IndexData):
    """Index data given outright instead of taken from the content."""

    def __init__(self, title, words, keywords, geoposition=None):
        self.title, self.words, self.keywords, self.geoposition = title, words, keywords, geoposition

    def has_indexdata(self):
        return True

    def get_title(self):
        return self.title

    def get_content(self):
        return self.words

    def get_keywords(self):
        return self.keywords

    def get_wordcount(self):
        return len(self.words.split())

    def get_geoposition(self):
        return self.geoposition


def html(body: str, title: str = "") -> str:
    return f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"


METADATA = {
    "Name": "libzim-c_test",
    "Title": "libzim-c writer test",
    "Creator": "libzim-c",
    "Publisher": "libzim-c",
    "Description": "Round trip of libzim.writer",
    "Language": "eng",
}


def add_required_metadata(creator) -> None:
    """The metadata zimcheck -A requires, and the 48x48 illustration."""
    import datetime

    for name, value in METADATA.items():
        creator.add_metadata(name, value)
    creator.add_metadata("Date", datetime.date(2024, 5, 17))
    creator.add_illustration(48, png(48))


def leftovers(directory: Path, keep=()) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n not in keep)


def zimcheck(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("zimcheck") or "zimcheck", "-A", str(path)],
        capture_output=True,
        text=True,
    )


def zimdump_list(path: Path) -> list[str]:
    out = subprocess.run(
        ["zimdump", "list", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return [line for line in out.splitlines() if line]


def native_threads() -> int:
    """OS threads of this process, once the count has settled: a thread that
    another test just joined can still be listed in /proc for a moment (seen
    when a probe thread ended right before a writer test)."""
    seen = [len(os.listdir("/proc/self/task"))]
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and (len(seen) < 3 or len(set(seen[-3:])) > 1):
        time.sleep(0.01)
        seen.append(len(os.listdir("/proc/self/task")))
    return seen[-1]
