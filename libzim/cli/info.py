"""``zim info``: an archive's size, uuid, counts, main entry, indexes, checksum and metadata."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, Callable

from libzim import ZimError

from .archives import open_archive, read_metadata, resolve
from .errors import CLIError, one_line, plural
from .output import human_size, print_json, yes_no

UNREADABLE = "<unreadable>"


class Fields:
    """Reads an archive's fields one by one: a corrupt archive may open and still
    fail on some (libzim reads e.g. the media count from a cluster), so a failed
    field is recorded in ``errors`` and reads as None, and the rest is shown."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}

    def get(self, field: str, fn: Callable[[], Any]) -> Any:
        """Return fn(), or None after noting its ZimError under field in ``errors``."""
        try:
            return fn()
        except ZimError as e:
            self.errors[field] = one_line(e)
            return None



def illustration_sizes(a: Any) -> list[int]:
    """The archive's illustration sizes, sorted, without the deprecation warning."""
    # Deprecated by python-libzim for get_illustration_infos() (libzim 9.3),
    # which the libzims here lack: the only way to list them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return sorted(a.get_illustration_sizes())

def read_info(a: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The report (the JSON output) and the fields that could not be read."""
    f = Fields()
    get = f.get
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
        "illustration_sizes": get("illustration_sizes", lambda: illustration_sizes(a)),
        "metadata": get("metadata", lambda: read_metadata(a)),
    }
    if info["has_checksum"]:
        info["checksum"] = get("checksum", lambda: a.checksum)
    if get("has_main_entry", lambda: a.has_main_entry):
        info["main_entry"] = read_main_entry(a, f)
    for key, value in (info["metadata"] or {}).items():
        if isinstance(value, dict) and "error" in value:
            f.errors[f"metadata.{key}"] = value["error"]
    if f.errors:
        info["errors"] = f.errors
    return info, f.errors


def read_main_entry(a: Any, f: Fields) -> dict[str, Any] | None:
    """The main entry's path, title and redirect flag, and its target's when it redirects; None if
    unreadable (noted in f)."""
    main = f.get("main_entry", lambda: a.main_entry)
    if main is None:
        return None
    out = {"path": main.path, "title": main.title, "is_redirect": main.is_redirect}
    try:
        target = resolve(main)
    except (ZimError, CLIError) as e:
        f.errors["main_entry"] = one_line(e)
    else:
        out["target_path"] = target.path
        out["target_title"] = target.title
    return out


def failure(errors: dict[str, str], archive: str) -> CLIError:
    """The one error line for unreadable fields, printed after the report."""
    first = next(iter(errors))
    more = f" (and {len(errors) - 1} more field(s))" if len(errors) > 1 else ""
    return CLIError(f"cannot read {first}{more}: {one_line(errors[first], archive)}")


def num(v: Any) -> str:
    """A count with thousands separators, or <unreadable> for None."""
    return UNREADABLE if v is None else f"{v:,}"


def yes(v: Any) -> str:
    """yes or no for a flag, or <unreadable> for None."""
    return UNREADABLE if v is None else yes_no(v)


def entries_row(counts: dict[str, Any]) -> str:
    """The 'entries' row of ``zim info``: all, user entries, articles and media."""
    user = counts["entry"]
    articles = counts["article"]
    return (
        f"{num(counts['all'])} in all, "
        + (UNREADABLE + " user entries" if user is None else plural(user, "user entry", "user entries"))
        + ", "
        + (UNREADABLE + " articles" if articles is None else plural(articles, "article"))
        + f", {num(counts['media'])} media"
    )


def main_entry_row(me: dict[str, Any] | None, errors: dict[str, str]) -> str:
    """The 'main entry' row of ``zim info``: path, its target when a redirect, and title."""
    if me is None:
        return UNREADABLE if "main_entry" in errors or "has_main_entry" in errors else "(none)"
    if me["is_redirect"] and "target_path" in me:
        return f"{me['path']} -> {me['target_path']} ({me['target_title']!r})"
    return f"{me['path']} ({me.get('target_title', me['title'])!r})"


def checksum_row(info: dict[str, Any]) -> str:
    """The 'checksum' row of ``zim info``: the checksum when present, else (absent)."""
    if info["has_checksum"] is None:
        return UNREADABLE
    if info["has_checksum"]:
        return f"{info['checksum'] or UNREADABLE} (present)"
    return "(absent)"


def scheme_row(new_scheme: bool | None) -> str:
    """The 'namespaces' row of ``zim info``: new (namespace-less) or old scheme."""
    if new_scheme is None:
        return UNREADABLE
    return "new scheme (no namespaces)" if new_scheme else "old scheme (A/, I/, M/, ...)"


def text_rows(info: dict[str, Any], errors: dict[str, str]) -> list[tuple[str, str]]:
    """The (label, value) rows ``zim info`` prints before the metadata."""
    sizes = info["illustration_sizes"]
    return [
        ("file", info["filename"]),
        ("size", UNREADABLE if info["size"] is None else human_size(info["size"])),
        ("uuid", info["uuid"] or UNREADABLE),
        ("entries", entries_row(info["counts"])),
        ("main entry", main_entry_row(info["main_entry"], errors)),
        ("full-text index", yes(info["has_fulltext_index"])),
        ("title index", yes(info["has_title_index"])),
        ("checksum", checksum_row(info)),
        ("multipart", yes(info["is_multipart"])),
        ("namespaces", scheme_row(info["has_new_namespace_scheme"])),
        ("illustrations", UNREADABLE if sizes is None else (", ".join(f"{s}x{s}" for s in sizes) or "(none)")),
    ]


def print_metadata(metadata: dict[str, Any] | None, filename: str) -> None:
    """Print the metadata block of ``zim info``: text values (multi-line indented), binary sizes, and
    errors per key."""
    print("metadata:")
    if metadata is None:
        print(f"  {UNREADABLE}")
        return
    if not metadata:
        print("  (none)")
    width = max((len(k) for k in metadata), default=0)
    for key, value in metadata.items():
        if isinstance(value, str):
            lines = value.splitlines() or [""]
            print(f"  {key:<{width}}  {lines[0]}")
            for more in lines[1:]:
                print(f"  {'':<{width}}  {more}")
        elif "bytes" in value:
            print(f"  {key:<{width}}  <binary, {value['bytes']:,} bytes>")
        else:
            reason = value["error"].replace(f"{filename}: ", "")
            print(f"  {key:<{width}}  <unreadable: {reason}>")


def cmd_info(args: argparse.Namespace) -> int:
    """``zim info``: print what the archive says about itself, as text or --json; returns 0, or raises
    CLIError listing the fields that could not be read."""
    info, errors = read_info(open_archive(args.archive))
    if args.json:
        print_json(info)
    else:
        rows = text_rows(info, errors)
        width = max(len(k) for k, _ in rows)
        for key, value in rows:
            print(f"{key:<{width}}  {value}")
        print_metadata(info["metadata"], info["filename"])
    if errors:
        sys.stdout.flush()
        raise failure(errors, args.archive)
    return 0


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """``zim info`` and its options."""
    p = sub.add_parser("info", help="show an archive's header, counts and metadata",
                       description="Show an archive's size, uuid, entry counts, main entry, indexes, checksum and metadata.")
    p.add_argument("archive", metavar="ARCHIVE", help="path of the ZIM file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)
