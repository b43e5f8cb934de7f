from uuid import UUID as UUID

from libzim import reader as reader, search as search, suggestion as suggestion, version as version, writer as writer
from libzim.reader import (
    Archive as Archive,
    Entry as Entry,
    Item as Item,
    get_cluster_cache_current_size as get_cluster_cache_current_size,
    get_cluster_cache_max_size as get_cluster_cache_max_size,
    set_cluster_cache_max_size as set_cluster_cache_max_size,
)
from libzim.search import Query as Query, Search as Search, SearchResultSet as SearchResultSet, Searcher as Searcher
from libzim.suggestion import (
    SuggestionResultSet as SuggestionResultSet,
    SuggestionSearch as SuggestionSearch,
    SuggestionSearcher as SuggestionSearcher,
)
from libzim.version import get_libzim_version as get_libzim_version, get_versions as get_versions, print_versions as print_versions
from libzim.writer import (
    Blob as WritingBlob,
    Compression as Compression,
    ContentProvider as ContentProvider,
    Creator as Creator,
    FileProvider as FileProvider,
    Hint as Hint,
    IndexData as IndexData,
    Item as BaseWritingItem,
    StringProvider as StringProvider,
)

__version__: str

__all__ = [
    "ArchiveError",
    "ClosedError",
    "EntryNotFoundError",
    "InvalidIndexError",
    "NotSupportedError",
    "SearchError",
    "WriterError",
    "ZimError",
    "reader",
    "search",
    "suggestion",
    "version",
    "writer",
]

class ZimError(RuntimeError): ...
class ArchiveError(ZimError, RuntimeError): ...
class EntryNotFoundError(ZimError, KeyError): ...
class InvalidIndexError(ZimError, IndexError, OverflowError): ...
class ClosedError(ZimError, ValueError): ...
class SearchError(ZimError, RuntimeError): ...
class NotSupportedError(ZimError, NotImplementedError): ...
class WriterError(ZimError, RuntimeError): ...
