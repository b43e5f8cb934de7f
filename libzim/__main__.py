"""The ``zim`` command line: inspect, search and check ZIM archives.

    zim info ARCHIVE [--json]
    zim search ARCHIVE... QUERY [--limit N] [--no-snippets] [--threads N --repeat M] [--json]
    zim suggest ARCHIVE QUERY [--limit N] [--json]
    zim get ARCHIVE PATH [-o FILE]
    zim check ARCHIVE [--json]
    zim bench [ARCHIVE...] [--quick]
    zim demo [--threads N] [--cache DIR]

Also reachable as ``python -m libzim``.  Errors are reported as one line,
``zim: error: <message>``, with exit status 1 (2 for usage errors, 130 on
Ctrl-C).  Standard library only.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import html
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import libzim
from libzim import ZimError
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

PROG = "zim"
BOLD = "\033[1m"
RESET = "\033[0m"

# Queries of the built-in benchmark and of the demo.  Plain English words that
# occur in most technical documentation; a query that matches nothing still
# exercises the engine, and the output says how many results came back.
BENCH_QUERIES = (
    "function",
    "file",
    "error",
    "list",
    "string",
    "thread",
    "return value",
    "class",
    "system",
    "time",
    "data",
    "unicode",
)
DEMO_PACKAGE = "python3.11-doc"
DEMO_QUERIES = (
    "asyncio event loop",
    "list comprehension",
    "unicode strings",
    "thread safety",
    "regular expression groups",
)


# --------------------------------------------------------------------------- errors


class CLIError(Exception):
    """An error already phrased for the user: printed as one line, then exit ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _one_line(exc: BaseException | str, name: str | os.PathLike[str] | None = None) -> str:
    """Collapse an exception message to one line; make sure it names ``name``."""
    if isinstance(exc, BaseException):
        text = str(exc.args[0]) if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
        if not text.strip():
            text = type(exc).__name__
    else:
        text = exc
    text = " ".join(text.split())
    if len(text) > 600:
        text = text[:597] + "..."
    if name is not None:
        name = str(name)
        if name not in text and Path(name).name not in text:
            text = f"{name}: {text}"
    return text


def _short(text: str, limit: int = 60) -> str:
    """repr() of a user string, cut short: error lines stay readable."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def _err(message: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _Fd2Capture:
    """Capture what libzim writes straight to file descriptor 2.

    libzim 8 prints some diagnostics itself (``Checksum doesn't match``,
    assertion dumps with a backtrace for corrupt clusters) before throwing the
    exception the extension turns into a one-line Python error.  The CLI
    collects that text so the user sees one clear line (and ``check`` can show
    the reason for a failed check).  Process-wide: only use it while no other
    thread may write to stderr.
    """

    def __init__(self) -> None:
        self.text = ""
        self._saved: int | None = None
        self._tmp: Any = None

    def __enter__(self) -> "_Fd2Capture":
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        try:
            self._saved = os.dup(2)
            self._tmp = tempfile.TemporaryFile()
            os.dup2(self._tmp.fileno(), 2)
        except OSError:
            if self._saved is not None:
                os.close(self._saved)
            self._saved = None
            if self._tmp is not None:
                self._tmp.close()
                self._tmp = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._saved = None
        try:
            self._tmp.seek(0)
            self.text = self._tmp.read().decode("utf-8", "replace")
        finally:
            self._tmp.close()
            self._tmp = None

    def messages(self) -> list[str]:
        """The captured lines, minus backtrace frames and blank lines."""
        out = []
        for line in self.text.splitlines():
            line = line.strip()
            if not line or line.startswith("/") or line.startswith("["):
                continue
            if line not in out:
                out.append(line)
        return out


class _quiet:
    """Run libzim calls with its direct stderr prints captured (see _Fd2Capture).

    On an exception the captured text is dropped (the exception says it in one
    line; ZIM_DEBUG=1 keeps it); otherwise it is passed on to stderr.
    """

    def __enter__(self) -> "_quiet":
        self._cap = _Fd2Capture().__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._cap.__exit__(None, None, None)
        text = self._cap.text
        if text.strip() and (exc_type is None or os.environ.get("ZIM_DEBUG")):
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


# --------------------------------------------------------------------------- output helpers


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _use_bold() -> bool:
    return _stdout_is_tty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _render_snippet(snippet: str, bold: bool) -> str:
    """libzim snippets are HTML-escaped text with <b>..</b> around matched terms."""
    text = " ".join(snippet.split())
    if bold:
        text = text.replace("<b>", "\x01").replace("</b>", "\x02")
    else:
        text = text.replace("<b>", "").replace("</b>", "")
    return html.unescape(text)


def _ansi(text: str) -> str:
    return text.replace("\x01", BOLD).replace("\x02", RESET)


def _wrap(text: str, indent: str, bold: bool) -> str:
    """Wrap to the terminal when stdout is one; plain output stays one line per field."""
    if not _stdout_is_tty():
        return indent + _ansi(text) if bold else indent + text
    width = max(40, shutil.get_terminal_size((100, 24)).columns - 1)
    wrapped = textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)
    return _ansi(wrapped) if bold else wrapped


def _print_json(obj: Any) -> None:
    # JSON is UTF-8 whatever the locale says; write the bytes ourselves.
    data = (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{n:,} bytes ({size:.1f} {unit})"
        size /= 1024
    return f"{n:,} bytes"  # pragma: no cover


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


# --------------------------------------------------------------------------- libzim helpers


def _open_archive(path: str | os.PathLike[str]) -> Any:
    from libzim.reader import Archive

    err: Exception | None = None
    with _Fd2Capture() as cap:
        try:
            archive = Archive(path)
        except (ZimError, OSError, ValueError, TypeError) as e:
            err = e
    if err is not None:
        raise CLIError(_one_line(err, path))
    if cap.text.strip():  # libzim complained but opened it: pass its words on
        sys.stderr.write(cap.text)
    return archive


def _metadata(archive: Any) -> dict[str, Any]:
    """Metadata as text when it is UTF-8 text, else {"bytes": N}."""
    out: dict[str, Any] = {}
    for key in archive.metadata_keys:
        try:
            raw = bytes(archive.get_metadata(key))
        except ZimError as e:
            out[key] = {"error": _one_line(e)}
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            out[key] = {"bytes": len(raw)}
            continue
        if "\x00" in text:
            out[key] = {"bytes": len(raw)}
        else:
            out[key] = text
    return out


def _resolve(entry: Any, limit: int = 50) -> Any:
    """Follow redirects (bounded, so a redirect loop cannot hang us)."""
    seen = 0
    while entry.is_redirect:
        seen += 1
        if seen > limit:
            raise CLIError(f"{entry.path}: more than {limit} redirects (redirect loop?)")
        entry = entry.get_redirect_entry()
    return entry


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class _Stats:
    def __init__(self, latencies: list[float], wall: float, threads: int) -> None:
        self.count = len(latencies)
        self.wall = wall
        self.threads = threads
        lat = sorted(latencies)
        self.p50 = statistics.median(lat) if lat else float("nan")
        self.p95 = _percentile(lat, 95)
        self.per_second = self.count / wall if wall > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "searches": self.count,
            "seconds": round(self.wall, 6),
            "searches_per_second": round(self.per_second, 3),
            "p50_ms": round(self.p50 * 1000, 3),
            "p95_ms": round(self.p95 * 1000, 3),
        }

    def line(self) -> str:
        return (
            f"{self.count} searches in {self.wall:.3f} s on {self.threads} thread"
            f"{'s' if self.threads != 1 else ''}: {self.per_second:,.1f} searches/s, "
            f"latency p50 {self.p50 * 1000:.2f} ms, p95 {self.p95 * 1000:.2f} ms"
        )


def _hammer(
    fn: Callable[[int], Any],
    n_items: int,
    threads: int,
    *,
    count: int | None = None,
    duration: float | None = None,
) -> tuple[_Stats, dict[int, set[Any]]]:
    """Call fn(i % n_items) from ``threads`` threads, ``count`` times in all or for ``duration`` s.

    Returns the timing and, per item, the set of distinct values fn returned
    (a correct, thread-safe binding returns one value per item).
    """
    assert (count is None) != (duration is None)
    lock = threading.Lock()
    stop = threading.Event()
    next_job = [0]
    latencies: list[float] = []
    seen: dict[int, set[Any]] = {}
    errors: list[BaseException] = []
    start = time.perf_counter()
    deadline = start + duration if duration is not None else None

    def worker() -> None:
        try:
            while not stop.is_set():
                with lock:
                    job = next_job[0]
                    if count is not None and job >= count:
                        return
                    next_job[0] += 1
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                item = job % n_items
                t0 = time.perf_counter()
                value = fn(item)
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    seen.setdefault(item, set()).add(value)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)
            stop.set()

    pool = [threading.Thread(target=worker, name=f"zim-search-{i}", daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    try:
        for t in pool:
            while t.is_alive():
                t.join(0.1)
    except KeyboardInterrupt:
        stop.set()
        raise
    wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    return _Stats(latencies, wall, threads), seen


def _call_in_thread(fn: Callable[[], Any], tick: Callable[[float], None] | None = None) -> Any:
    """Run a long GIL-releasing call in a helper thread so Ctrl-C stays responsive."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
        finally:
            done.set()

    t0 = time.perf_counter()
    threading.Thread(target=run, name="zim-call", daemon=True).start()
    while not done.wait(0.1):
        if tick is not None:
            tick(time.perf_counter() - t0)
    if "error" in box:
        raise box["error"]
    return box["value"]


# --------------------------------------------------------------------------- info


def cmd_info(args: argparse.Namespace) -> int:
    a = _open_archive(args.archive)
    errors: dict[str, str] = {}

    def get(field: str, fn: Callable[[], Any]) -> Any:
        # A corrupt archive may open and still fail on some fields (libzim
        # reads e.g. the media count from a cluster): show the rest.
        try:
            return fn()
        except ZimError as e:
            errors[field] = _one_line(e)
            return None

    info: dict[str, Any] = {
        "filename": str(a.filename),
        "size": get("size", lambda: a.filesize),
        "uuid": get("uuid", lambda: str(a.uuid)),
        "counts": {
            "all": get("counts.all", lambda: a.all_entry_count),
            "entry": get("counts.entry", lambda: a.entry_count),
            "article": get("counts.article", lambda: a.article_count),
            "media": get("counts.media", lambda: a.media_count),
        },
        "main_entry": None,
        "has_fulltext_index": get("has_fulltext_index", lambda: a.has_fulltext_index),
        "has_title_index": get("has_title_index", lambda: a.has_title_index),
        "has_checksum": get("has_checksum", lambda: a.has_checksum),
        "checksum": None,
        "is_multipart": get("is_multipart", lambda: a.is_multipart),
        "has_new_namespace_scheme": get("has_new_namespace_scheme", lambda: a.has_new_namespace_scheme),
        "illustration_sizes": get("illustration_sizes", lambda: sorted(a.get_illustration_sizes())),
        "metadata": get("metadata", lambda: _metadata(a)),
    }
    if info["has_checksum"]:
        info["checksum"] = get("checksum", lambda: a.checksum)
    if get("has_main_entry", lambda: a.has_main_entry):
        main = get("main_entry", lambda: a.main_entry)
        if main is not None:
            info["main_entry"] = {"path": main.path, "title": main.title, "is_redirect": main.is_redirect}
            try:
                target = _resolve(main)
            except (ZimError, CLIError) as e:
                errors["main_entry"] = _one_line(e)
            else:
                info["main_entry"]["target_path"] = target.path
                info["main_entry"]["target_title"] = target.title
    for key, value in (info["metadata"] or {}).items():
        if isinstance(value, dict) and "error" in value:
            errors[f"metadata.{key}"] = value["error"]
    if errors:
        info["errors"] = errors
    code = 0
    if errors:
        first = next(iter(errors))
        more = f" (and {len(errors) - 1} more field(s))" if len(errors) > 1 else ""
        # Printed after the report, by main()'s error path: one line.
        code = 1
        failure = CLIError(f"cannot read {first}{more}: {_one_line(errors[first], args.archive)}")
    if args.json:
        _print_json(info)
        if code:
            raise failure
        return 0

    U = "<unreadable>"

    def num(v: Any) -> str:
        return U if v is None else f"{v:,}"

    def yes(v: Any) -> str:
        return U if v is None else _yes(v)

    counts = info["counts"]
    rows: list[tuple[str, str]] = [
        ("file", info["filename"]),
        ("size", U if info["size"] is None else _human_size(info["size"])),
        ("uuid", info["uuid"] or U),
        (
            "entries",
            f"{num(counts['all'])} in all, "
            + (U + " user entries" if counts["entry"] is None else _plural(counts["entry"], "user entry", "user entries"))
            + ", "
            + (U + " articles" if counts["article"] is None else _plural(counts["article"], "article"))
            + f", {num(counts['media'])} media",
        ),
    ]
    me = info["main_entry"]
    if me is None:
        rows.append(("main entry", U if "main_entry" in errors or "has_main_entry" in errors else "(none)"))
    elif me["is_redirect"] and "target_path" in me:
        rows.append(("main entry", f"{me['path']} -> {me['target_path']} ({me['target_title']!r})"))
    else:
        rows.append(("main entry", f"{me['path']} ({me.get('target_title', me['title'])!r})"))
    if info["has_checksum"] is None:
        checksum = U
    elif info["has_checksum"]:
        checksum = f"{info['checksum'] or U} (present)"
    else:
        checksum = "(absent)"
    if info["has_new_namespace_scheme"] is None:
        scheme = U
    else:
        scheme = "new scheme (no namespaces)" if info["has_new_namespace_scheme"] else "old scheme (A/, I/, M/, ...)"
    sizes = info["illustration_sizes"]
    rows += [
        ("full-text index", yes(info["has_fulltext_index"])),
        ("title index", yes(info["has_title_index"])),
        ("checksum", checksum),
        ("multipart", yes(info["is_multipart"])),
        ("namespaces", scheme),
        ("illustrations", U if sizes is None else (", ".join(f"{s}x{s}" for s in sizes) or "(none)")),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("metadata:")
    metadata = info["metadata"]
    if metadata is None:
        print(f"  {U}")
        metadata = {}
    elif not metadata:
        print("  (none)")
    mwidth = max((len(k) for k in metadata), default=0)
    for key, value in metadata.items():
        if isinstance(value, str):
            lines = value.splitlines() or [""]
            print(f"  {key:<{mwidth}}  {lines[0]}")
            for more in lines[1:]:
                print(f"  {'':<{mwidth}}  {more}")
        elif "bytes" in value:
            print(f"  {key:<{mwidth}}  <binary, {value['bytes']:,} bytes>")
        else:
            reason = value["error"].replace(f"{info['filename']}: ", "")
            print(f"  {key:<{mwidth}}  <unreadable: {reason}>")
    if code:
        sys.stdout.flush()
        raise failure
    return 0


# --------------------------------------------------------------------------- search


def _searchable(paths: Sequence[str]) -> tuple[list[Any], list[str]]:
    """Open every archive; return those with a full-text index, warn about the rest."""
    archives = [_open_archive(p) for p in paths]
    with_index = [a for a in archives if a.has_fulltext_index]
    without = [str(p) for p, a in zip(paths, archives) if not a.has_fulltext_index]
    if not with_index:
        names = ", ".join(without)
        hint = " (title suggestions still work: zim suggest ARCHIVE QUERY)"
        if len(without) == 1:
            raise CLIError(f"{names}: archive has no full-text index, cannot search it{hint}")
        raise CLIError(f"none of the archives has a full-text index: {names}{hint}")
    if without:
        _warn(f"no full-text index, not searched: {', '.join(without)}")
    return with_index, without


def _result_dict(r: Any, with_snippet: bool) -> dict[str, Any]:
    arch = r.archive
    d = {
        "archive": arch.filename.name,
        "archive_path": str(arch.filename),
        "path": r.path,
        "title": r.title,
        "score": r.score,
        "word_count": r.word_count,
    }
    if with_snippet:
        d["snippet"] = r.snippet
    return d


def _run_search(searcher: Any, query: str, limit: int, snippets: bool) -> tuple[int, list[dict[str, Any]]]:
    s = searcher.search(Query().set_query(query))
    estimated = s.get_estimated_matches()
    results = s.get_results(0, limit, include_snippets=snippets)
    return estimated, [_result_dict(r, snippets) for r in results]


def _digest(results: list[dict[str, Any]]) -> tuple[Any, ...]:
    return tuple((r["archive_path"], r["path"], r["title"], r["score"], r.get("snippet")) for r in results)


def _print_results(query: str, estimated: int, results: list[dict[str, Any]], n_archives: int, limit: int) -> None:
    bold = _use_bold()
    where = f" in {n_archives} archives" if n_archives > 1 else ""
    if not results:
        print(f"No results for {_short(query)}{where} (estimated matches: {estimated}).")
        return
    print(f"{len(results)} of ~{estimated} matches for {_short(query)}{where}:")
    num_w = len(str(len(results)))
    for i, r in enumerate(results, 1):
        title = r["title"] or r["path"]
        head = f"{i:>{num_w}}. {BOLD}{title}{RESET}" if bold else f"{i:>{num_w}}. {title}"
        print(head)
        pad = " " * (num_w + 2)
        print(f"{pad}{r['archive']}:{r['path']}  score {r['score']}")
        if r.get("snippet"):
            print(_wrap(_render_snippet(r["snippet"], bold), pad, bold))


def cmd_search(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise CLIError("--limit must be >= 0", 2)
    if args.threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    repeat = args.repeat if args.repeat is not None else (1 if args.threads == 1 else 20 * args.threads)
    if repeat < 1:
        raise CLIError("--repeat must be >= 1", 2)
    query = args.query
    if not query.strip():
        raise CLIError("empty query", 2)
    with _quiet():
        archives, without = _searchable(args.archives)
        searcher = Searcher(archives)
        try:
            estimated, results = _run_search(searcher, query, args.limit, args.snippets)
        except (ZimError, ValueError) as e:
            raise CLIError(f"search for {_short(query)} failed: {_one_line(e)}")
    out: dict[str, Any] = {
        "query": query,
        "archives": [str(a.filename) for a in archives],
        "not_searched": without,
        "estimated_matches": estimated,
        "results": results,
    }

    if not args.json:
        _print_results(query, estimated, results, len(archives), args.limit)
        sys.stdout.flush()

    stats = None
    if repeat > 1 or args.threads > 1:
        baseline = _digest(results)

        def one(_item: int) -> tuple[Any, ...]:
            return _digest(_run_search(searcher, query, args.limit, args.snippets)[1])

        stats, seen = _hammer(one, 1, args.threads, count=repeat)
        values = seen.get(0, set())
        out["throughput"] = stats.as_dict()
        if values and values != {baseline}:
            out["throughput"]["consistent"] = False
        else:
            out["throughput"]["consistent"] = True

    if args.json:
        _print_json(out)
    if stats is not None:
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: {stats.line()}\n")
        if not out["throughput"]["consistent"]:
            _err("repeated searches returned different results (thread-safety bug?)")
            return 1
    return 0


# --------------------------------------------------------------------------- suggest


def cmd_suggest(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise CLIError("--limit must be >= 0", 2)
    archive = _open_archive(args.archive)
    try:
        s = SuggestionSearcher(archive).suggest(args.query)
        estimated = s.get_estimated_matches()
        results = [{"path": r.path, "title": r.title, "snippet": r.snippet} for r in s.get_results(0, args.limit)]
    except (ZimError, ValueError) as e:
        raise CLIError(f"suggestions for {_short(args.query)} failed: {_one_line(e, args.archive)}")
    if args.json:
        _print_json({"query": args.query, "archive": str(archive.filename), "estimated_matches": estimated, "results": results})
        return 0
    bold = _use_bold()
    if not results:
        print(f"No suggestions for {_short(args.query)} (estimated matches: {estimated}).")
        return 0
    print(f"{len(results)} of ~{estimated} suggestions for {_short(args.query)}:")
    num_w = len(str(len(results)))
    for i, r in enumerate(results, 1):
        title = r["title"] or r["path"]
        print(f"{i:>{num_w}}. {BOLD}{title}{RESET}" if bold else f"{i:>{num_w}}. {title}")
        print(f"{' ' * (num_w + 2)}{r['path']}")
    return 0


# --------------------------------------------------------------------------- get


def cmd_get(args: argparse.Namespace) -> int:
    archive = _open_archive(args.archive)
    with _Fd2Capture():
        try:
            try:
                entry = archive.get_entry_by_path(args.path)
            except libzim.EntryNotFoundError:
                # `zim info` shows the main entry's own path (e.g. "mainPage"),
                # which lives outside the content namespace: accept it too.
                if not (archive.has_main_entry and archive.main_entry.path == args.path):
                    raise
                entry = archive.main_entry
            entry = _resolve(entry)
            item = entry.get_item()
            mimetype = item.mimetype
            content = item.content
        except ZimError as e:
            err: BaseException | None = e
        else:
            err = None
    if err is not None:
        raise CLIError(_one_line(err, args.archive))
    if args.output in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        try:
            with open(args.output, "wb") as f:
                f.write(content)
        except OSError as e:
            raise CLIError(f"cannot write {args.output}: {e.strerror or e}")
        sys.stderr.write(f"{PROG}: wrote {len(content):,} bytes ({mimetype}) of {entry.path} to {args.output}\n")
    return 0


# --------------------------------------------------------------------------- check


class _Bar:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.enabled = _stderr_is_tty()
        self.stream: Any = None
        if self.enabled:
            try:  # a private copy: fd 2 itself is redirected while libzim runs
                self.stream = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
            except OSError:
                self.enabled = False

    def draw(self, done: int, label: str, elapsed: float) -> None:
        if not self.enabled:
            return
        width = 24
        filled = int(width * done / self.total) if self.total else width
        line = f"[{'#' * filled}{'-' * (width - filled)}] {done}/{self.total} {label} {elapsed:.1f} s"
        self.stream.write("\r" + line + "\033[K")
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.clear()
            self.stream.close()
            self.enabled = False


def cmd_check(args: argparse.Namespace) -> int:
    from libzim.reader import INTEGRITY_CHECKS

    archive = _open_archive(args.archive)
    names = list(INTEGRITY_CHECKS)
    total = len(names) + 1
    results: list[dict[str, Any]] = []
    bar = _Bar(total)
    if not args.json:
        print(f"Checking {archive.filename} ({len(names)} integrity checks, then the checksum)")
        sys.stdout.flush()

    def report(res: dict[str, Any]) -> None:
        results.append(res)
        if args.json:
            return
        bar.clear()
        status = "ok" if res["ok"] else "FAILED"
        detail = f"  {res['message']}" if res.get("message") else ""
        print(f"  {res['name']:<17} {status:<6} {res['seconds']:7.2f} s{detail}")
        sys.stdout.flush()

    error: str | None
    try:
        for i, name in enumerate(names):
            bar.draw(i, name, 0.0)
            t0 = time.perf_counter()
            with _Fd2Capture() as cap:
                try:
                    failed = _call_in_thread(
                        functools.partial(archive.validate, [name]), functools.partial(bar.draw, i, name)
                    )
                except ZimError as e:
                    failed, error = [name], _one_line(e)
                else:
                    error = None
            ok = name not in failed
            msg = error or ("; ".join(cap.messages()) if not ok else "")
            if not ok and not msg and name == "checksum" and not archive.has_checksum:
                msg = "the archive stores no checksum"
            results_entry: dict[str, Any] = {"name": name, "ok": ok, "seconds": round(time.perf_counter() - t0, 6)}
            if msg:
                results_entry["message"] = msg
            report(results_entry)

        bar.draw(len(names), "check()", 0.0)
        t0 = time.perf_counter()
        with _Fd2Capture() as cap:
            try:
                ok = bool(_call_in_thread(archive.check, lambda el: bar.draw(len(names), "check()", el)))
                error = None
            except ZimError as e:
                ok, error = False, _one_line(e)
        if error:
            msg = error
        elif not archive.has_checksum:
            msg = "the archive stores no checksum"
        elif ok:
            msg = f"checksum {archive.checksum} matches"
        else:
            msg = "; ".join(cap.messages()) or f"checksum {archive.checksum} does not match the content"
        report({"name": "check()", "ok": ok, "seconds": round(time.perf_counter() - t0, 6), "message": msg})
    finally:
        bar.close()

    failed_names = [r["name"] for r in results if not r["ok"]]
    if args.json:
        _print_json({"archive": str(archive.filename), "ok": not failed_names, "checks": results})
    elif failed_names:
        print(f"{len(failed_names)} of {len(results)} checks FAILED: {', '.join(failed_names)}")
    else:
        print(f"All {len(results)} checks passed.")
    return 1 if failed_names else 0


# --------------------------------------------------------------------------- bench


def _checkout() -> Path | None:
    """The source checkout this package runs from (an in-place build), or None when installed."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "tools" / "corpus.py").is_file() and (root / "bench" / "run.py").is_file() else None


def _repo_bench() -> Path | None:
    root = _checkout()
    return None if root is None else root / "bench" / "run.py"


def _parse_thread_list(text: str) -> list[int]:
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise CLIError(f"--threads: expected comma-separated integers, got {text!r}", 2)
    if not values or any(v < 1 for v in values):
        raise CLIError(f"--threads: expected positive integers, got {text!r}", 2)
    return values


def _builtin_bench(paths: Sequence[str], threads: list[int], duration: float, limit: int, as_json: bool) -> int:
    with _quiet():
        archives, without = _searchable(paths)
        searcher = Searcher(archives)
    queries = BENCH_QUERIES

    def run(i: int, snippets: bool) -> tuple[Any, ...]:
        return _digest(_run_search(searcher, queries[i], limit, snippets)[1])

    # Reference results, single-threaded; also warms the caches.
    reference = {snip: [run(i, snip) for i in range(len(queries))] for snip in (False, True)}
    hits = sum(len(d) for d in reference[False])
    if not as_json:
        print(
            f"built-in quick benchmark: {len(queries)} queries, top {limit} results each "
            f"({hits} results in all), {duration:g} s per configuration"
        )
        print("archives: " + ", ".join(str(a.filename) for a in archives))
        print(f"{'threads':>7}  {'snippets':>8}  {'searches':>8}  {'searches/s':>10}  {'p50 ms':>8}  {'p95 ms':>8}")
        sys.stdout.flush()
    rows = []
    inconsistent = False
    for snip in (False, True):
        for n in threads:
            stats, seen = _hammer(functools.partial(run, snippets=snip), len(queries), n, duration=duration)
            ok = all(values == {reference[snip][i]} for i, values in seen.items())
            inconsistent |= not ok
            row = dict(stats.as_dict(), snippets=snip, consistent=ok)
            rows.append(row)
            if not as_json:
                print(
                    f"{n:>7}  {'yes' if snip else 'no':>8}  {stats.count:>8}  {stats.per_second:>10,.1f}  "
                    f"{stats.p50 * 1000:>8.2f}  {stats.p95 * 1000:>8.2f}" + ("" if ok else "  RESULTS DIFFER")
                )
                sys.stdout.flush()
    if as_json:
        _print_json(
            {
                "archives": [str(a.filename) for a in archives],
                "not_searched": without,
                "queries": list(queries),
                "limit": limit,
                "duration": duration,
                "runs": rows,
            }
        )
    if inconsistent:
        _err("some searches returned results different from the single-threaded reference")
        return 1
    return 0


def cmd_bench(args: argparse.Namespace, extra: list[str]) -> int:
    run_py = None if (args.builtin or args.archives) else _repo_bench()
    if run_py is not None:
        if args.json:
            raise CLIError("--json is for the built-in benchmark (give ARCHIVE paths or --builtin)", 2)
        cmd = [sys.executable, str(run_py)]
        if args.quick:
            cmd.append("--quick")
        if args.threads is not None:
            cmd += ["--threads", args.threads]
        if args.duration is not None:
            cmd += ["--duration", str(args.duration)]
        cmd += extra
        sys.stderr.write(f"{PROG}: running {' '.join(cmd)}\n")
        sys.stderr.flush()
        return subprocess.call(cmd)
    if extra:
        raise CLIError(f"unrecognized arguments: {' '.join(extra)}", 2)
    threads = _parse_thread_list(args.threads or "1,2")
    duration = args.duration if args.duration is not None else (0.5 if args.quick else 1.0)
    if duration <= 0:
        raise CLIError("--duration must be > 0", 2)
    paths = list(args.archives)
    if not paths:
        paths = [str(_demo_archive(args.cache, ", or give ARCHIVE paths"))]
    return _builtin_bench(paths, threads, duration, args.limit, args.json)


# --------------------------------------------------------------------------- demo


def _load_corpus(hint: str) -> Any:
    """tools/corpus.py of the checkout, loaded by path: it is not part of the installed package."""
    root = _checkout()
    if root is None:
        raise CLIError(
            f"cannot build the {DEMO_PACKAGE} archive: an installed libzim-c has no archive builder; "
            f"run this from a libzim-c source checkout (bash tools/bootstrap.sh installs zim-tools and "
            f"{DEMO_PACKAGE}){hint}"
        )
    spec = importlib.util.spec_from_file_location("_libzim_c_corpus", root / "tools" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _demo_archive(cache: str | None, hint: str = "") -> Path:
    corpus = _load_corpus(hint)
    where = cache or str(corpus.DEFAULT_CACHE_DIR)
    sys.stderr.write(
        f"{PROG}: preparing the {DEMO_PACKAGE} archive (cached in {where}; "
        "the first run installs the package if needed and builds it with zimwriterfs)\n"
    )
    sys.stderr.flush()
    try:
        return Path(corpus.ensure_debian_doc_zim(DEMO_PACKAGE, cache, install=True))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        raise CLIError(f"cannot build the {DEMO_PACKAGE} archive: {_one_line(e)}")


def cmd_demo(args: argparse.Namespace) -> int:
    threads = args.threads if args.threads is not None else max(2, min(8, os.cpu_count() or 2))
    if threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    if args.duration <= 0:
        raise CLIError("--duration must be > 0", 2)
    path = _demo_archive(args.cache)
    archive = _open_archive(path)
    if not archive.has_fulltext_index:
        raise CLIError(f"{path}: the demo archive has no full-text index")
    searcher = Searcher(archive)
    print(f"Archive: {path}")
    print(f"  {archive.article_count:,} articles, {_human_size(archive.filesize)}, full-text index")
    print()

    reference = []
    for q in DEMO_QUERIES:
        estimated, results = _run_search(searcher, q, args.limit, True)
        reference.append(_digest(results))
        _print_results(q, estimated, results, 1, args.limit)
        print()

    def one(i: int) -> tuple[Any, ...]:
        return _digest(_run_search(searcher, DEMO_QUERIES[i], args.limit, True)[1])

    print(
        f"Throughput: the {len(DEMO_QUERIES)} queries above, top {args.limit} with snippets, "
        f"{args.duration:g} s per run, one Searcher shared by all threads"
    )
    sys.stdout.flush()
    runs = []
    counts = [1] if threads == 1 else [1, threads]
    consistent = True
    for n in counts:
        stats, seen = _hammer(one, len(DEMO_QUERIES), n, duration=args.duration)
        ok = all(values == {reference[i]} for i, values in seen.items())
        consistent &= ok
        runs.append(stats)
        print(f"  {stats.line()}" + ("" if ok else "  RESULTS DIFFER"))
        sys.stdout.flush()
    if len(runs) == 2 and runs[0].per_second > 0:
        print(f"  speedup with {threads} threads: {runs[1].per_second / runs[0].per_second:.2f}x (on {os.cpu_count()} CPUs)")
    if not consistent:
        _err("threaded searches returned results different from the single-threaded ones")
        return 1
    return 0


# --------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line: ``zim: error: ...`` (exit 2)."""

    def error(self, message: str) -> Any:
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"see '{PROG} {sub} --help'" if sub else f"see '{PROG} --help'"
        self.exit(2, f"{PROG}: error: {message} ({hint})\n")


def _version_text() -> str:
    try:
        from libzim.version import get_libzim_version

        lz = get_libzim_version()
    except Exception:  # noqa: BLE001
        lz = "?"
    return f"{PROG} (libzim-c) {libzim.__version__}, libzim {lz}"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Inspect, search and check ZIM archives (libzim-c).",
        epilog="Run 'zim COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=_version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("info", help="show an archive's header, counts and metadata",
                       description="Show an archive's size, uuid, entry counts, main entry, indexes, checksum and metadata.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "search",
        help="full-text search across one or more archives",
        description=(
            "Full-text search over every given archive that has a full-text index, with one "
            "Searcher. With --threads/--repeat the search is run many times from several "
            "threads sharing that Searcher, and throughput and latency are printed on stderr."
        ),
    )
    p.add_argument("archives", metavar="ARCHIVE", nargs="+", help="ZIM files to search")
    p.add_argument("query", metavar="QUERY", help="the query (quote it if it has spaces)")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="number of results (default 10)")
    p.add_argument("--snippets", action=argparse.BooleanOptionalAction, default=True,
                   help="include snippets (default: yes)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="run the search from N threads sharing one Searcher (default 1)")
    p.add_argument("--repeat", type=int, default=None, metavar="M",
                   help="run the search M times in all (default: 1, or 20 per thread with --threads)")
    p.add_argument("--json", action="store_true", help="print JSON (snippets keep libzim's <b> tags)")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("suggest", help="title suggestions", description="Title suggestions for a partial title.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("query", metavar="QUERY", help="the beginning of a title, or words in it")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="number of suggestions (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_suggest)

    p = sub.add_parser("get", help="write an entry's content to stdout or a file",
                       description="Write the content of the entry at PATH (following redirects), byte for byte.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("path", metavar="PATH", help="entry path, e.g. main.html")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_get)

    p = sub.add_parser(
        "check", help="verify an archive's integrity",
        description="Run libzim's integrity checks one by one, then the checksum. Exit 1 if any fails.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "bench",
        help="benchmark search throughput",
        description=(
            "In a source checkout without ARCHIVE arguments, run the project's benchmark "
            "(bench/run.py; extra options are passed on to it). Given ARCHIVE paths, or "
            "with --builtin, run a small built-in benchmark: a fixed set of queries, 1 and 2 "
            "threads, without and with snippets, printing searches/s."
        ),
    )
    p.add_argument("archives", metavar="ARCHIVE", nargs="*", help="ZIM files with a full-text index")
    p.add_argument("--quick", action="store_true", help="shorter runs")
    p.add_argument("--builtin", action="store_true", help="use the built-in benchmark even in a checkout")
    p.add_argument("--threads", default=None, metavar="LIST", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="seconds per configuration (built-in default 1, 0.5 with --quick)")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="results per search (built-in; default 10)")
    p.add_argument("--cache", metavar="DIR", help="where the demo archive is cached (built-in without ARCHIVE)")
    p.add_argument("--json", action="store_true", help="print JSON (built-in benchmark)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "demo",
        help="search the Python documentation from many threads",
        description=(
            f"Build (once, cached) a ZIM of Debian's {DEMO_PACKAGE}, search it for a few queries "
            "with snippets, then measure searches/s from 1 and N threads sharing one Searcher."
        ),
    )
    p.add_argument("--threads", type=int, default=None, metavar="N", help="threads for the throughput run (default: CPUs, 2..8)")
    p.add_argument("--cache", metavar="DIR", help="cache directory for the built archive")
    p.add_argument("--limit", "-n", type=int, default=3, metavar="N", help="results shown per query (default 3)")
    p.add_argument("--duration", type=float, default=2.0, metavar="S", help="seconds per throughput run (default 2)")
    p.set_defaults(func=cmd_demo)
    return parser


# --------------------------------------------------------------------------- main


def _silence_stdout() -> None:
    # After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``zim`` and ``python -m libzim``; returns the exit status."""
    try:
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and getattr(args, "command", None) != "bench":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if getattr(args, "command", None) is None:
        parser.print_help(sys.stderr)
        return 2

    try:
        if args.command == "bench":
            code = args.func(args, extra)
        elif args.command in ("info", "get", "suggest"):
            # Single-threaded: libzim's own stderr prints (assertion dumps on
            # corrupt archives) are held back, so an error stays one line.
            with _quiet():
                code = args.func(args)
        else:
            code = args.func(args)
        sys.stdout.flush()
        return int(code or 0)
    except CLIError as e:
        _err(e.message)
        return e.code
    except ZimError as e:
        _err(_one_line(e))
        return 1
    except KeyboardInterrupt:
        try:
            sys.stderr.write("\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if threading.active_count() > 1:
            # Worker threads may be deep inside libzim; don't wait for them.
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os._exit(130)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except OSError as e:
        _err(_one_line(e, getattr(e, "filename", None)) if getattr(e, "filename", None) else _one_line(e))
        return 1
    except Exception as e:  # noqa: BLE001 - a bug; keep the promise of one line unless asked
        if os.environ.get("ZIM_DEBUG"):
            raise
        _err(f"internal error: {type(e).__name__}: {_one_line(e)} (set ZIM_DEBUG=1 for a traceback)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
