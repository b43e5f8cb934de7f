"""Write every HTML article of a library, with its text, to Parquet on Dask.

    pip install -e '.[dask]'    (in a clone, inside its .venv or a venv of your own)
    python docs/examples/dask_parquet.py OUT_DIR ARCHIVE.zim...

A local cluster here; on a real one, pass Client("scheduler:8786"), give
absolute paths and keep the archives at the same paths on every worker.
"""

import sys

import pandas as pd
from dask.distributed import Client, LocalCluster

from libzim.dask import read_archives

if __name__ == "__main__":
    out, paths = sys.argv[1], sys.argv[2:]
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster):
        frame = read_archives(paths)                 # planned from headers; nothing read yet
        frame.to_parquet(out)                        # one row per HTML article, with its text
    rows = pd.read_parquet(out)
    good = rows[rows.error.isna()]                   # failures are rows: missing, corrupt, ...
    for row in good.sort_values("path").itertuples():
        print(row.path, "|", " / ".join(row.text.splitlines()))
    print("failures:", list(rows[rows.error.notna()].error))
