"""Read ZIM archives: Archive, Entry, Item (python-libzim's libzim.reader).

    with Archive("wikipedia.zim") as archive:
        item = archive.get_entry_by_path("A/Python").get_item()
        html = bytes(item.content)          # item.content: a zero-copy memoryview
        text = item.text                    # the article's visible main text

Every object here may be shared by any number of threads: opening, checks and
iteration release the GIL, lookups and content reads release it while they are
slow (see Archive).  Also check_untrusted(), to open files from untrusted
sources safely, and the process-wide cache of decoded clusters
(get/set_cluster_cache_max_size, get_cluster_cache_current_size).
INTEGRITY_CHECKS names the checks Archive.check_integrity() accepts.
"""
from libzim._libzim import (
    INTEGRITY_CHECKS,
    Archive,
    Entry,
    EntryIterator,
    Item,
    get_cluster_cache_current_size,
    get_cluster_cache_max_size,
    set_cluster_cache_max_size,
)


def __getattr__(name: str) -> object:
    # check_untrusted's module imports subprocess, signal and pathlib: more than
    # the rest of `import libzim` together, for a function few callers use.
    if name == "check_untrusted":
        from libzim._untrusted import check_untrusted

        globals()[name] = check_untrusted
        return check_untrusted
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "INTEGRITY_CHECKS",
    "Archive",
    "Entry",
    "EntryIterator",
    "Item",
    "check_untrusted",
    "get_cluster_cache_current_size",
    "get_cluster_cache_max_size",
    "set_cluster_cache_max_size",
]
