"""``zim search`` and ``zim suggest``, and the search helpers the benchmark and demo share."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from libzim import ZimError
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

from .archives import open_archive
from .capture import quiet
from .errors import PROG, CLIError, one_line, print_error, short, warn
from .output import BOLD, RESET, print_json, render_snippet, use_bold, wrap
from .workers import hammer

# SuggestionSearcher.suggest's modes, "index" (python-libzim's and kiwix-serve's results) first;
# libzim.serve.core.SUGGEST_MODES repeats them for the server (it imports without the CLI).
SUGGEST_MODES = ("index", "titles", "auto")


def check_order(command: str, first: str, last: str) -> None:
    """Say the arguments' order when they look swapped: the first (an ARCHIVE) is no file and the
    last (the QUERY) is one. Otherwise libzim's "cannot open" is all the user would see."""
    if not os.path.exists(first) and os.path.isfile(last):
        raise CLIError(f"{first}: no such archive; the archive comes first: zim {command} ARCHIVE QUERY "
                       f"({last!r} is a file: were the two swapped?)", 2, file=first)


def searchable(paths: Sequence[str]) -> tuple[list[Any], list[str]]:
    """Open every archive; return those with a full-text index, warn about the rest."""
    archives = [open_archive(p) for p in paths]
    with_index = [a for a in archives if a.has_fulltext_index]
    without = [str(p) for p, a in zip(paths, archives) if not a.has_fulltext_index]
    if not with_index:
        names = ", ".join(without)
        hint = " (title suggestions still work: zim suggest ARCHIVE QUERY)"
        if len(without) == 1:
            raise CLIError(f"{names}: archive has no full-text index, cannot search it{hint}", kind="SearchError")
        raise CLIError(f"none of the archives has a full-text index: {names}{hint}", kind="SearchError")
    if without:
        warn(f"no full-text index, not searched: {', '.join(without)}")
    return with_index, without


def result_dict(r: Any, with_snippet: bool) -> dict[str, Any]:
    """A SearchResult as the dict ``zim search --json`` prints (archive name and path, path, title,
    score, word count, snippet if asked for)."""
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


def run_search(searcher: Any, query: str, limit: int, snippets: bool) -> tuple[int, list[dict[str, Any]]]:
    """Run query on searcher: (estimated matches, the first ``limit`` results as dicts)."""
    s = searcher.search(Query().set_query(query))
    estimated = s.get_estimated_matches()
    results = s.get_results(0, limit, include_snippets=snippets)
    return estimated, [result_dict(r, snippets) for r in results]


def digest(results: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The fields of a result list that must agree between runs (to compare threads with one thread)."""
    return tuple((r["archive_path"], r["path"], r["title"], r["score"], r.get("snippet")) for r in results)


def print_results(query: str, estimated: int, results: list[dict[str, Any]], n_archives: int, limit: int) -> None:
    """Print search results for a terminal: numbered titles, archive and path, score, wrapped snippets."""
    bold = use_bold()
    where = f" in {n_archives} archives" if n_archives > 1 else ""
    if not results:
        print(f"No results for {short(query)}{where} (estimated matches: {estimated}).")
        return
    print(f"{len(results)} of ~{estimated} matches for {short(query)}{where}:")
    num_w = len(str(len(results)))
    for i, r in enumerate(results, 1):
        title = r["title"] or r["path"]
        head = f"{i:>{num_w}}. {BOLD}{title}{RESET}" if bold else f"{i:>{num_w}}. {title}"
        print(head)
        pad = " " * (num_w + 2)
        print(f"{pad}{r['archive']}:{r['path']}  score {r['score']}")
        if r.get("snippet"):
            print(wrap(render_snippet(r["snippet"], bold), pad, bold))


def check_limit(limit: int) -> None:
    """A usage error for a --limit under 1: zero results would print as "no results" for a query
    that has matches."""
    if limit < 1:
        raise CLIError(f"--limit must be >= 1, not {limit}", 2)


def cmd_search(args: argparse.Namespace) -> int:
    """``zim search``: search one or more archives, optionally from several threads comparing every
    answer with the first; returns the exit status."""
    check_limit(args.limit)
    if args.threads < 1:
        raise CLIError("--threads must be >= 1", 2)
    repeat = args.repeat if args.repeat is not None else (1 if args.threads == 1 else 20 * args.threads)
    if repeat < 1:
        raise CLIError("--repeat must be >= 1", 2)
    query = args.query
    check_order("search", args.archives[0], query)
    if not query.strip():
        raise CLIError("empty query", 2)
    with quiet():
        archives, without = searchable(args.archives)
        searcher = Searcher(archives)
        try:
            estimated, results = run_search(searcher, query, args.limit, args.snippets)
        except (ZimError, ValueError) as e:
            raise CLIError(f"search for {short(query)} failed: {one_line(e)}")
    out: dict[str, Any] = {
        "query": query,
        "archives": [str(a.filename) for a in archives],
        "not_searched": without,
        "estimated_matches": estimated,
        "results": results,
    }

    if not args.json:
        print_results(query, estimated, results, len(archives), args.limit)
        sys.stdout.flush()

    stats = None
    if repeat > 1 or args.threads > 1:
        baseline = digest(results)

        def one(_item: int) -> tuple[Any, ...]:
            return digest(run_search(searcher, query, args.limit, args.snippets)[1])

        stats, seen = hammer(one, 1, args.threads, count=repeat)
        values = seen.get(0, set())
        out["throughput"] = stats.as_dict()
        if values and values != {baseline}:
            out["throughput"]["consistent"] = False
        else:
            out["throughput"]["consistent"] = True

    if args.json:
        print_json(out)
    if stats is not None:
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: {stats.line()}\n")
        if not out["throughput"]["consistent"]:
            print_error("repeated searches returned different results (thread-safety bug?)")
            return 1
    return 0


def cmd_suggest(args: argparse.Namespace) -> int:
    """``zim suggest``: print title suggestions for a query from one archive; returns the exit status."""
    check_limit(args.limit)
    check_order("suggest", args.archive, args.query)
    if not args.query.strip():  # as zim search: an empty prefix is a mistake, not "every title"
        raise CLIError("empty query", 2)
    archive = open_archive(args.archive)
    try:
        s = SuggestionSearcher(archive).suggest(args.query, mode=args.mode)
        estimated = s.get_estimated_matches()
        results = [{"path": r.path, "title": r.title, "snippet": r.snippet} for r in s.get_results(0, args.limit)]
    except (ZimError, ValueError) as e:
        raise CLIError(f"suggestions for {short(args.query)} failed: {one_line(e, args.archive)}")
    if args.json:
        print_json({"query": args.query, "archive": str(archive.filename), "estimated_matches": estimated, "results": results})
        return 0
    bold = use_bold()
    if not results:
        print(f"No suggestions for {short(args.query)} (estimated matches: {estimated}).")
        return 0
    print(f"{len(results)} of ~{estimated} suggestions for {short(args.query)}:")
    num_w = len(str(len(results)))
    for i, r in enumerate(results, 1):
        title = r["title"] or r["path"]
        print(f"{i:>{num_w}}. {BOLD}{title}{RESET}" if bold else f"{i:>{num_w}}. {title}")
        print(f"{' ' * (num_w + 2)}{r['path']}")
    return 0


def add_search_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim search`` and its options."""
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


def add_suggest_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim suggest`` and its options."""
    p = sub.add_parser("suggest", help="title suggestions", description="Title suggestions for a partial title.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("query", metavar="QUERY", help="the beginning of a title, or words in it")
    p.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="number of suggestions (default 10)")
    p.add_argument("--mode", choices=SUGGEST_MODES, default="index",
                   help="index (default: libzim's title index, python-libzim's results: titles with words "
                        "starting as the query's), titles (the titles that start with the query, fast at any "
                        "size), auto (titles when 100 or more start with the query, else index)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_suggest)
