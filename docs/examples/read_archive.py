"""Open an archive and read entries, content and metadata.

    python docs/examples/read_archive.py ARCHIVE.zim
"""

import sys

from libzim.reader import Archive

with Archive(sys.argv[1]) as archive:        # or Archive(path, offset=8, size=n)
    print(archive.entry_count, "entries, main page:", archive.main_entry.get_item().path)
    print("title:", bytes(archive.get_metadata("Title")).decode())

    entry = archive.get_entry_by_path("loop")   # EntryNotFoundError (a KeyError) if absent
    item = entry.get_item()
    data = item.content                         # a zero-copy memoryview
    print(entry.title, item.mimetype, len(data), "bytes")
    print(item.text)                            # the visible text, navigation dropped

    for e in archive.iter_by_title():           # every user entry, in title order
        print(" ", e.path, e.title)
