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
from libzim._untrusted import check_untrusted

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
