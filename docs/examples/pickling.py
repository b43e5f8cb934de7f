"""Search results travel to other processes without their content.

    python docs/examples/pickling.py ARCHIVE.zim
"""

import pickle
import sys
from concurrent.futures import ProcessPoolExecutor

from libzim.reader import Archive
from libzim.search import Searcher


def first_bytes(result):
    # In the worker: the archive is reopened once per process, by path, and checked by UUID.
    return bytes(result.get_entry().get_item().content[:80])


if __name__ == "__main__":
    archive = Archive(sys.argv[1])
    results = Searcher(archive).search("event loop").get_results(0, 10)
    data = pickle.dumps(results)                    # about 1 KB: fields and the archive's path
    print(len(data), "bytes pickled")
    print([r.path for r in pickle.loads(data)])
    with ProcessPoolExecutor(max_workers=2) as pool:
        for chunk in pool.map(first_bytes, results):
            print(chunk)
