"""Library-wide search and suggestions on Dask distributed; and whole
archives to a Dask DataFrame (``read_archives``: one row per HTML article
with its text, for ``to_parquet``).

    from dask.distributed import Client
    from libzim.dask import Library
    hits = Library(paths, Client("scheduler:8786")).search("event loop", 10).hits

The archives are sharded across the workers (rendezvous hashing with a cap of
ceil(archives / workers) per worker, so a worker that leaves moves only its own
archives).  Each worker process opens its archives once, on first use, and
keeps them and their Searchers open across queries.  By default a query does
not go through the scheduler: each worker holds one actor per Library
(_ShardServer), which the client calls directly on its own connection to the
worker; the actor searches its archives from a thread pool (the searches
release the GIL) and returns only its best ``count`` hits, without snippets.
The client merges those, and when snippets are asked for, asks the workers for
the snippets of the hits that survived the merge only.  ``via="tasks"`` runs
the same search as one Dask task per worker instead (for batch jobs).

Scores are libzim's per-archive relevance percentages, which are not
comparable across archives (see README, "Library search on Dask"): the merge
orders by score, then by the archive's position in the library, then by rank
inside the archive.

With ``untrusted=True`` each worker first opens each file in a child process
(``libzim.reader.check_untrusted``), so an archive that crashes libzim or Xapian
is reported as corrupt instead of killing workers.

A failing archive (missing, corrupt, without a full-text index) is reported in
``LibraryResult.failures``.  A worker that is lost, or gives no answer within
``hang_timeout`` seconds (then skipped for ``quarantine`` seconds), has its
shard re-placed on the other workers and asked again in the same query; what
still has no answer goes the task path (Dask reschedules a lost worker's task
on another worker, and the client retries a failed shard once more, one task
per archive), and is reported ``worker-lost`` when that fails too.

Workers need libzim-c and Dask installed and the archives at the same paths,
and the client must reach the workers directly (as for direct_to_workers).
"""

# The package's modules: library.py (Library, the client side of a query:
# sharding, fan-out, merging, faults), library_worker.py (its worker side: the
# open archives and searchers, the thread pool, the resident searcher actor and
# the task functions), frame.py (read_archives: planning, partitions, rows) and
# _common.py (what the two share: how a failing archive is reported).  This
# file only hands their names on.

from __future__ import annotations

from typing import Any

# library first: without Dask distributed its import raises the ImportError
# that says what to install.
from libzim.dask.library import Failure, Hit, Library, LibraryResult, assign_shards
from libzim.dask.frame import read_archives

# Private names the tests reach as libzim.dask._NAME, where they lived before
# the package was split.  (Dask resolves pickled tasks and the actor class by
# their own modules' paths: libzim.dask.library_worker._shard_task, ...)
from libzim.dask.frame import _opened, _plan
from libzim.dask.library_worker import _shard_task, _snippet_task

__all__ = ["Library", "LibraryResult", "Hit", "Failure", "assign_shards", "read_archives"]


def __getattr__(name: str) -> Any:
    # _delaying is an int that the actor rebinds: handed on as it is now, not
    # as it was when this package was imported.
    if name == "_delaying":
        from libzim.dask import library_worker

        return library_worker._delaying
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
