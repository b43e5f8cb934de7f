import os
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

from dask.dataframe import DataFrame
from distributed import Client

from libzim.search import Query

__all__ = ["Library", "LibraryResult", "Hit", "Failure", "assign_shards", "read_archives"]

@dataclass(frozen=True)
class Hit:
    archive: str
    path: str
    title: str
    score: int
    snippet: str
    rank: int

@dataclass(frozen=True)
class Failure:
    archive: str
    kind: str
    message: str

@dataclass
class LibraryResult:
    hits: list[Hit]
    failures: list[Failure]
    estimated_matches: int
    searched: int
    moved: list[str] = ...

def assign_shards(paths: Sequence[str], workers: Sequence[str]) -> dict[str, list[str]]: ...

class Library:
    paths: list[str]
    """The archives' paths, absolute, in the order given."""
    client: Client
    """The Dask client the library queries through."""
    untrusted: bool
    """Whether each archive is checked in a child process before a worker opens it."""
    hang_timeout: float
    """Seconds a worker may take to answer before it is reported hung."""
    quarantine: float
    """Seconds a failed worker is left out of new queries."""
    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        client: Client,
        *,
        untrusted: bool = False,
        hang_timeout: float = 10.0,
        quarantine: float = 60.0,
    ) -> None: ...
    def shards(self) -> dict[str, list[str]]: ...
    def search(
        self,
        query: str | Query,
        count: int = 10,
        *,
        include_snippets: bool = True,
        timeout: float | None = None,
        via: str = "actors",
        _delay: float = 0.0,
    ) -> LibraryResult: ...
    def suggest(
        self, text: str, count: int = 10, *, timeout: float | None = None, via: str = "actors"
    ) -> LibraryResult: ...
    def close(self) -> None: ...

_Column = Literal["archive", "name", "uuid", "path", "title", "mimetype", "size", "text", "html"]

def read_archives(
    paths: Iterable[str | os.PathLike[str]],
    *,
    columns: Sequence[_Column] | None = None,
    text: bool = True,
    html: bool = False,
    entries: Literal["html", "text", "all"] = "html",
    partition_size: int = 1000,
    main_only: bool = True,
    max_chars: int | None = None,
    errors: Literal["report", "raise"] = "report",
    untrusted: bool = False,
) -> DataFrame: ...
