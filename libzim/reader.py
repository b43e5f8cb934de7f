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

__all__ = [
    "INTEGRITY_CHECKS",
    "Archive",
    "Entry",
    "EntryIterator",
    "Item",
    "get_cluster_cache_current_size",
    "get_cluster_cache_max_size",
    "set_cluster_cache_max_size",
]
