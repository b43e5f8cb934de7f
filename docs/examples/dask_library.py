"""Search a library of archives on a Dask distributed cluster.

    pip install -e '.[dask]'    (in a clone, inside its .venv or a venv of your own)
    python docs/examples/dask_library.py ARCHIVE.zim...

A local cluster here; on a real one, pass Client("scheduler:8786") and keep the
archives at the same paths on every worker.
"""

import sys

from dask.distributed import Client, LocalCluster

from libzim.dask import Library

if __name__ == "__main__":
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        library = Library(sys.argv[1:], client)
        result = library.search("event loop", 10)
        print([(h.archive, h.path, h.score, h.snippet) for h in result.hits])
        print("failures:", result.failures)          # data, not exceptions: missing, corrupt, ...
        library.close()
