"""Read ZIM archives: Archive, Entry, Item (python-libzim's libzim.reader)."""
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
