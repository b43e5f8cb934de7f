from libzim import reader as reader, search as search, suggestion as suggestion, version as version, writer as writer

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
