"""Whole archives to a Dask DataFrame: ``libzim.dask.read_archives``, one row
per HTML article with its text, for ``to_parquet`` (planning on the client,
partitions and their rows on the workers)."""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Union

import libzim
from libzim import _pickle
from libzim.dask._common import _classify
from libzim.reader import check_untrusted

__all__ = ["read_archives"]

# ---- archives to a Dask DataFrame (read_archives) -----------------------------------
# Needs dask.dataframe and pandas (imported on first use, so Library users need
# neither).  Planning runs on the client and opens each archive for its header
# (entry count, UUID) only; every partition is one range of one archive's
# entries in cluster order, read on a worker.

_FRAME_COLUMNS = ("archive", "name", "uuid", "path", "title", "mimetype", "size")
_TEXT_TYPES = ("text/html", "text/plain", "text/markdown", "text/x-markdown")
_ENTRY_KINDS = ("html", "text", "all")
_ERRORS = ("report", "raise")


@dataclass(frozen=True)
class _Part:
    """What one partition reads: positions [start, stop) of the archive's
    cluster order, or, when `failure` is set, nothing but that failure."""
    path: str
    uuid: str
    start: int
    stop: int
    failure: Optional[tuple[str, str, str]] = None


@dataclass(frozen=True)
class _Options:
    columns: tuple[str, ...]  # the frame's columns, "error" last
    entries: str
    main_only: bool
    max_chars: Optional[int]
    errors: str


def _frame_dtypes(columns: Sequence[str]) -> dict[str, Any]:
    import pandas as pd  # type: ignore[import-untyped,unused-ignore]  # without pandas-stubs
    # Nullable pyarrow strings (what Dask converts object columns to anyway)
    # and a nullable size: a failure row has neither path nor size.
    return {c: (pd.Int64Dtype() if c == "size" else pd.StringDtype("pyarrow")) for c in columns}


def _frame(rows: list[tuple[Any, ...]], columns: Sequence[str]) -> Any:
    import pandas as pd
    dtypes = _frame_dtypes(columns)
    # Column by column into typed arrays: a third of the time of
    # DataFrame.from_records + astype.
    data = list(zip(*rows)) if rows else [()] * len(columns)
    return pd.DataFrame({c: pd.array(list(v), dtype=dtypes[c]) for c, v in zip(columns, data)})


# Per worker process: the last archives read, with their M/Name and cluster
# order, so the partitions of one archive that land on a worker open it and
# walk its dirents once.  Bounded: a library of thousands of archives must
# not keep them all open.
_ARCHIVE_SLOTS = int(os.environ.get("LIBZIM_DASK_OPEN_ARCHIVES", 8))
_opened: "dict[str, tuple[Any, Any, Optional[str], Any]]" = {}  # path -> (stamp, archive, name, order)
_opened_lock = threading.Lock()


def _opened_archive(path: str) -> tuple[Any, Optional[str], Any]:
    """(archive, M/Name or None, entry ids in cluster order) for this file,
    reopened when its size or mtime changed."""
    import array
    stamp = _pickle._stamp(path)  # raises ArchiveError for a missing file
    with _opened_lock:
        slot = _opened.pop(path, None)
        if slot is not None and slot[0] == stamp and not slot[1].closed:
            _opened[path] = slot  # most recently used last
            return slot[1], slot[2], slot[3]
    archive = libzim.reader.Archive(path)
    try:
        name: Optional[str] = archive.get_metadata("Name").decode("utf-8", "replace")
    except libzim.ZimError:  # EntryNotFoundError: no M/Name
        name = None
    # iter_efficient is libzim's order: redirects, then by cluster.  Kept as
    # entry ids (4 bytes each), so any range of it is read without walking it.
    order = array.array("I", (e._index for e in archive.iter_efficient()))
    with _opened_lock:
        _opened[path] = (stamp, archive, name, order)
        while len(_opened) > _ARCHIVE_SLOTS:
            del _opened[next(iter(_opened))]
    return archive, name, order


class _Replaced(libzim.ArchiveError):
    """The file at a planned path holds another archive now."""


def _error_text(kind: str, message: str) -> str:
    return f"{kind}: {message}"


def _failure_row(part: _Part, columns: Sequence[str], failure: tuple[str, str, str]) -> tuple[Any, ...]:
    values = {"archive": part.path, "uuid": part.uuid or None,
              "error": _error_text(failure[1], failure[2])}
    return tuple(values.get(c) for c in columns)


def _wanted_type(mimetype: str, entries: str) -> bool:
    base = mimetype.split(";", 1)[0].strip().lower()
    if entries == "html":
        return base == "text/html"
    if entries == "text":
        return base in _TEXT_TYPES
    return True


# Cached: an archive has a handful of MIME types.  (Wrapped here, not with
# @lru_cache: stubtest reads this module as its own stub, and compares a
# decorated function's signature with the cache wrapper's (*args, **kwargs).)
_wanted = functools.lru_cache(maxsize=256)(_wanted_type)


def _read_part(part: _Part, opts: _Options) -> Any:
    """One partition: a pandas DataFrame with a row per wanted entry of the
    part's range.  Runs on a worker."""
    columns = opts.columns
    if part.failure is not None:
        return _frame([_failure_row(part, columns, part.failure)], columns)
    try:
        archive, name, order = _opened_archive(part.path)
        if part.uuid and str(archive.uuid) != part.uuid:
            raise _Replaced(f"{part.path}: another archive (UUID {archive.uuid}) than "
                            f"at planning ({part.uuid})")
        rows = [row for i in order[part.start:part.stop]
                if (row := _read_entry(archive, i, part, name, opts)) is not None]
    except libzim.ZimError as exc:
        if opts.errors == "raise":
            raise
        failure = _classify(part.path, exc)
        if isinstance(exc, _Replaced):
            failure = (part.path, "replaced", failure[2])
        rows = [_failure_row(part, columns, failure)]
    return _frame(rows, columns)


def _read_entry(archive: Any, index: int, part: _Part, name: Optional[str],
                opts: _Options) -> Optional[tuple[Any, ...]]:
    """The row of entry `index`, or None when it is a redirect or not wanted.
    A failure to read this entry's content is this row's `error` (with
    errors='report'), not the partition's."""
    values: dict[str, Any] = {"archive": part.path, "name": name, "uuid": part.uuid}
    try:
        entry = archive._get_entry_by_id(index)
        if entry.is_redirect:
            return None
        values["path"], values["title"] = entry.path, entry.title
        item = entry.get_item()
        mimetype = item.mimetype
        if not _wanted(mimetype, opts.entries):
            return None
        values["mimetype"] = mimetype
        values["size"] = item.size
        if "text" in opts.columns and _wanted(mimetype, "text"):
            values["text"] = item.get_text(main_only=opts.main_only, max_chars=opts.max_chars)
        if "html" in opts.columns and _wanted(mimetype, "html"):
            values["html"] = bytes(item.content).decode("utf-8", "replace")
    except libzim.ZimError as exc:
        if opts.errors == "raise":
            raise
        values["error"] = _error_text(*_classify(part.path, exc)[1:])
    return tuple(values.get(c) for c in opts.columns)


def _plan(paths: Sequence[str], partition_size: int, errors: str,
          untrusted: bool) -> list[_Part]:
    """Partitions from the archives' headers: entry count and UUID (no
    content is read here).  With errors='report' an archive that does not
    open becomes one partition holding its failure row."""
    parts: list[_Part] = []
    for path in paths:
        try:
            if untrusted:
                check_untrusted(path)
            with libzim.reader.Archive(path) as archive:
                count, uuid = archive.entry_count, str(archive.uuid)
        except libzim.ZimError as exc:
            if errors == "raise":
                raise
            parts.append(_Part(path, "", 0, 0, _classify(path, exc)))
            continue
        parts += [_Part(path, uuid, start, min(start + partition_size, count))
                  for start in range(0, count, partition_size)]
    return parts


def read_archives(paths: Iterable[Union[str, "os.PathLike[str]"]], *,
                  columns: Optional[Sequence[str]] = None, text: bool = True,
                  html: bool = False, entries: str = "html", partition_size: int = 1000,
                  main_only: bool = True, max_chars: Optional[int] = None,
                  errors: str = "report", untrusted: bool = False) -> Any:
    """A Dask DataFrame with one row per HTML article of the archives (see
    README, "Archives to Parquet on Dask")::

        ddf = read_archives(glob.glob("/srv/zim/*.zim"))
        ddf.to_parquet("corpus/")          # on the current Dask client

    Columns: archive (the path as given), name (M/Name), uuid, path, title,
    mimetype, size (content bytes), text (``text=True``; ``Item.get_text``
    with ``main_only`` and ``max_chars``), html (``html=True``), and error
    (null unless this row reports a failure).  ``columns`` picks among the
    first seven.  ``entries``: "html" (text/html items; the default), "text"
    (also text/plain and markdown) or "all" (every item; text null for other
    types).  Redirects are never rows.

    Each partition is ``partition_size`` consecutive entries of one archive
    in cluster order (``Archive.iter_efficient``), so it decompresses its
    clusters once; it has at most that many rows.  Planning opens each
    archive on the client for its entry count and UUID only.

    ``errors="report"`` (the default): an archive that is missing or does
    not open, at planning or on the worker, is one row with ``archive``,
    ``uuid`` (when known) and ``error`` ("missing: ...", "corrupt: ...",
    "error: ..."), the other columns null; an entry whose content cannot be
    read is its row with ``error`` set and no text.  ``errors="raise"``
    raises instead (at planning, or in the partition, failing the job).
    ``untrusted=True`` opens each archive in a child process first
    (``check_untrusted``), so one that crashes libzim is reported, not fatal.
    """
    try:
        import dask.dataframe as dd
    except ImportError as exc:
        from libzim._extras import install_hint

        raise ImportError("libzim.dask.read_archives needs dask.dataframe, pandas and pyarrow, the dask extra: "
                          f"{install_hint('dask')}") from exc
    if entries not in _ENTRY_KINDS:
        raise ValueError(f"entries must be one of {_ENTRY_KINDS}, not {entries!r}")
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS}, not {errors!r}")
    if partition_size < 1:
        raise ValueError(f"partition_size must be at least 1, not {partition_size}")
    picked = list(_FRAME_COLUMNS if columns is None else columns)
    unknown = [c for c in picked if c not in (*_FRAME_COLUMNS, "text", "html")]
    if unknown or isinstance(columns, str):
        raise ValueError(f"unknown columns {unknown or [columns]}; known: {list(_FRAME_COLUMNS)}"
                         " (text and html: the text= and html= flags)")
    text = text or "text" in picked
    html = html or "html" in picked
    cols = tuple(c for c in _FRAME_COLUMNS if c in picked) + \
        (("text",) if text else ()) + (("html",) if html else ()) + ("error",)
    opts = _Options(cols, entries, main_only, max_chars, errors)
    parts = _plan([os.fspath(p) for p in paths], partition_size, errors, untrusted)
    meta = _frame([], cols)
    if not parts:
        return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
    return dd.from_map(_read_part, parts, opts=opts, meta=meta,  # type: ignore[no-untyped-call]
                       label="read-zim", enforce_metadata=False)
