"""Benchmark worker for the upstream python-libzim binding (the peer).

Runs under Debian's /usr/bin/python3 (python3-libzim 2.1.0 on the system libzim
8.1.1) or under bench/.cache/venv-pypi (PyPI libzim 3.x, bundling libzim 9.x).
See _harness.py for the protocol. The peer has no search-result titles, scores
or (in 2.1.0/3.x) snippets: titles come from a lookup by path, and the score
and snippet workloads are reported as unsupported.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness  # noqa: E402
from libzim.reader import Archive  # noqa: E402
from libzim.search import Query, Searcher  # noqa: E402

try:
    from libzim.version import get_libzim_version  # 3.x

    LIBZIM_VERSION = get_libzim_version()
except ImportError:  # 2.1.0 has no version module: it uses the system libzim
    LIBZIM_VERSION = "system"


class PeerImpl:
    def supports(self, workload, config):
        if workload == "snippets":
            return "python-libzim has no snippet API"
        return True

    def open(self, specs, workload):
        archives = [Archive(path) for _key, path in specs]
        searchers = [Searcher(a) for a in archives] if workload in _harness.SEARCH_WORKLOADS else None
        return archives, searchers

    def run(self, ctx, workload, op, hits, out):
        archives, searchers = ctx
        idx, key, a, b = op
        archive = archives[idx]
        if workload in ("paths", "results"):
            search = searchers[idx].search(Query().set_query(a))
            paths = list(search.getResults(0, hits))
            if workload == "results" or out is not None:
                # No result objects: titles need one lookup per hit.
                titles = [archive.get_entry_by_path(p).title for p in paths]
                if out is not None:
                    out[0].extend(_harness.search_lines(key, a, r, p, t) for r, (p, t) in enumerate(zip(paths, titles)))
        else:
            return _harness.reader_op(archive, workload, key, a, b, out)


if __name__ == "__main__":
    import libzim

    version = getattr(libzim, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("libzim")
        except Exception:  # Debian's package has no dist-info for importlib
            version = "2.1.0 (Debian)"
    _harness.main(PeerImpl(), "peer", {"binding_version": version, "libzim_version": LIBZIM_VERSION,
                                       "python": sys.executable, "module_file": libzim.__file__})
