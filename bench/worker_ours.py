"""Benchmark worker for our binding (libzim-c). See _harness.py for the protocol.

--config shared uses one Searcher (and one Archive per ZIM) from every thread,
which our binding supports; the peer's objects are not meant for that.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Benchmarks run from a checkout: import its in-place build, not an installed libzim.
sys.path.insert(0, os.path.dirname(HERE))

import _harness  # noqa: E402
import libzim  # noqa: E402
from libzim.reader import Archive  # noqa: E402

from libzim.search import Query, Searcher  # noqa: E402

# bench/snippets.py sets it to "libzim" to time libzim's getSnippet() through the binding.
SNIPPET_ENGINE = os.environ.get("BENCH_SNIPPET_ENGINE", "libzim-c")


# The library's cluster cache is python-libzim's: 16 MiB for the process. The
# figures in the docs were measured with a cache of 32 clusters per file (up
# to 64 MiB with 2 MiB clusters), which the benchmark keeps: 64 MiB per archive
# opened (BENCH_CLUSTER_CACHE_MIB per archive to change it).
CLUSTER_CACHE_MIB = int(os.environ.get("BENCH_CLUSTER_CACHE_MIB", "64"))


class OursImpl:
    def open(self, specs, workload):
        libzim.reader.set_cluster_cache_max_size(len(specs) * CLUSTER_CACHE_MIB << 20)
        archives = [Archive(path) for _key, path in specs]
        searchers = [Searcher(a) for a in archives] if workload in _harness.SEARCH_WORKLOADS else None
        return archives, searchers

    def run(self, ctx, workload, op, hits, out):
        archives, searchers = ctx
        idx, key, a, b = op
        archive = archives[idx]
        if workload == "paths":
            paths = list(searchers[idx].search(Query(a)).getResults(0, hits))
            if out is not None:
                out[0].extend(
                    _harness.search_lines(key, a, r, p, archive.get_entry_by_path(p).title) for r, p in enumerate(paths)
                )
        elif workload in ("results", "snippets"):
            snip = workload == "snippets"
            results = searchers[idx].search(Query(a)).get_results(0, hits, include_snippets=snip,
                                                                  snippet_engine=SNIPPET_ENGINE)
            rows = [(r.path, r.title, r.score, r.snippet if snip else None) for r in results]
            if out is not None:
                for rank, (p, t, score, s) in enumerate(rows):
                    out[0].append(_harness.search_lines(key, a, rank, p, t))
                    out[1].append(f"{key}|{a}|{rank}|{score}" + (f"|{s}" if snip else "") + "\n")
        else:
            return _harness.reader_op(archive, workload, key, a, b, out)


if __name__ == "__main__":
    from libzim.version import get_libzim_version

    _harness.main(
        OursImpl(),
        "ours",
        {"binding_version": getattr(libzim, "__version__", "?"), "libzim_version": get_libzim_version(),
         "python": sys.executable, "module_file": libzim.__file__},
    )
