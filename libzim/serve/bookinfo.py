"""What the catalog and the pages need of a book, read once from its archive, and the
small cache file that keeps it across restarts.

A library of 10,000 books must start without opening 10,000 archives: a book is
known by its record (title, language, counts, main page, illustration sizes,
whether it has a full-text index, ...). For an archive given on the command line
or found in a folder, :func:`read_info` opens it, reads the record and closes it;
:class:`InfoCache` keeps the records in one JSON file (``$XDG_CACHE_HOME/libzim-c/``
or ``~/.cache/libzim-c/``), keyed by the file's real path, size and modification
time, so a restart reads nothing of an unchanged archive. A book of a library file
takes what the file says and, for what it does not say, the cached record or, if
there is none, what the first open of its archive finds (then cached).

The cache file is advisory: unreadable, malformed or unwritable, it is ignored
(a record that does not match the file's size and time is never used).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from libzim.reader import Archive, Entry

__all__ = ["InfoCache", "read_info", "file_key", "default_cache_path", "looks_like_zim"]

log = logging.getLogger("libzim.serve")

VERSION = 1
MAX_RECORDS = 200_000  # the file stays below ~100 MiB whatever was ever served
ZIM_MAGIC = (72173914).to_bytes(4, "little")  # the first four bytes of every ZIM file


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/libzim-c/bookinfo.json`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "libzim-c" / "bookinfo.json"


def file_key(path: str | os.PathLike[str]) -> tuple[str, int, int] | None:
    """(real path, size, mtime in ns) of the file, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def looks_like_zim(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with the ZIM magic number (4 bytes read): a library file's
    path to any other file is refused at load without opening it as an archive."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == ZIM_MAGIC
    except OSError:
        return False


def _meta(archive: Archive, key: str) -> str:
    try:
        return bytes(archive.get_metadata(key)).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - missing or unreadable metadata is just absent
        return ""


def main_path_of(archive: Archive, limit: int = 50) -> str | None:
    """The main page's path, redirects followed (bounded: a loop gives the last one)."""
    if not archive.has_main_entry:
        return None
    entry: Entry = archive.main_entry
    for _ in range(limit):
        if not entry.is_redirect:
            break
        entry = entry.get_redirect_entry()
    return str(entry.path)


def illustration_sizes_of(archive: Archive) -> list[int]:
    try:
        # Deprecated by python-libzim for get_illustration_infos() (libzim 9.3),
        # which the libzims here lack: the only way to list them.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return sorted(archive.get_illustration_sizes())
    except Exception:  # noqa: BLE001 - no illustration listed is what the pages show then
        return []


def info_of(archive: Archive) -> dict[str, Any]:
    """The record of an open archive (JSON-able)."""
    return {
        "title": _meta(archive, "Title"), "description": _meta(archive, "Description"),
        "language": _meta(archive, "Language"), "creator": _meta(archive, "Creator"),
        "publisher": _meta(archive, "Publisher"), "date": _meta(archive, "Date"),
        "tags": _meta(archive, "Tags"), "flavour": _meta(archive, "Flavour"), "name": _meta(archive, "Name"),
        "uuid": str(archive.uuid), "article_count": int(archive.article_count),
        "media_count": int(archive.media_count), "main_path": main_path_of(archive),
        "illustration_sizes": illustration_sizes_of(archive),
        "fulltext": bool(archive.has_fulltext_index),
    }


def read_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Open the archive at ``path``, read its record, close it; raises what Archive() raises."""
    with Archive(path) as a:
        return info_of(a)


class InfoCache:
    """Records by file key, loaded from and saved to one JSON file (``path``; None: kept
    in memory only). Thread-safe; :meth:`save` writes only when something was added."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._records: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self._lock = threading.Lock()
        self.reads = 0  # archives opened to make a record (for tests and benchmarks)
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read(256 << 20))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            log.warning("%s: the book cache is ignored (%s)", self.path, " ".join(str(e).split())[:200])
            return
        if isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("books"), dict):
            self._records = {k: v for k, v in data["books"].items() if isinstance(v, dict)}

    @staticmethod
    def _id(key: tuple[str, int, int]) -> str:
        return f"{key[1]}:{key[2]}:{key[0]}"

    def get(self, key: tuple[str, int, int] | None) -> dict[str, Any] | None:
        """The record of the file as keyed, or None."""
        if key is None:
            return None
        with self._lock:
            rec = self._records.get(self._id(key))
        return dict(rec) if rec is not None else None

    def put(self, key: tuple[str, int, int] | None, record: dict[str, Any]) -> None:
        """Keep ``record`` for the file as keyed."""
        if key is None:
            return
        with self._lock:
            ident = self._id(key)
            if self._records.get(ident) != record:
                self._records.pop(ident, None)
                self._records[ident] = dict(record)  # the newest last: trimming keeps it
                self._dirty = True

    def read(self, path: str | os.PathLike[str], key: tuple[str, int, int] | None = None) -> dict[str, Any]:
        """The cached record of ``path`` or, if there is none, :func:`read_info`'s (cached)."""
        key = key or file_key(path)
        rec = self.get(key)
        if rec is None:
            rec = read_info(path)
            self.reads += 1
            self.put(key, rec)
        return rec

    def save(self) -> None:
        """Write the file if a record was added (atomically; failures are logged once)."""
        if self.path is None:
            return
        with self._lock:
            if not self._dirty:
                return
            records = self._records
            if len(records) > MAX_RECORDS:
                records = dict(list(records.items())[-MAX_RECORDS:])
            text = json.dumps({"version": VERSION, "books": records}, separators=(",", ":"))
            self._dirty = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".bookinfo-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            log.warning("%s: the book cache was not written (%s)", self.path, e.strerror or e)
