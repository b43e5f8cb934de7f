"""Writes a directory of files into a ZIM with whichever `libzim.writer` is
importable (this project's, or python-libzim's in its own venv), using only
python-libzim's API and Python providers, as a scraper would:

    python writer_worker.py SRC_DIR OUT.zim WORKERS INDEXING(0|1) WELCOME ILLUSTRATION
"""
import mimetypes
import os
import re
import sys

from libzim.writer import Creator, FileProvider, Hint, Item

TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)


class FileItem(Item):
    def __init__(self, root, rel):
        super().__init__()
        self.full = os.path.join(root, rel)
        self.path = rel
        self.mimetype = mimetypes.guess_type(rel)[0] or "application/octet-stream"
        self.title = ""
        if self.mimetype == "text/html":
            with open(self.full, "rb") as f:
                m = TITLE.search(f.read(4096))
            if m:
                self.title = m.group(1).decode("utf-8", "replace").strip()

    def get_path(self):
        return self.path

    def get_title(self):
        return self.title

    def get_mimetype(self):
        return self.mimetype

    def get_contentprovider(self):
        return FileProvider(self.full)

    def get_hints(self):
        return {Hint.FRONT_ARTICLE: self.mimetype == "text/html"}


def main(src, out, workers, indexing, welcome, illustration):
    files = sorted(os.path.relpath(os.path.join(r, f), src)
                   for r, _, fs in os.walk(src) for f in fs)
    with Creator(out).config_nbworkers(int(workers)).config_indexing(
            indexing == "1", "eng").config_compression("zstd") as c:
        for name, value in (("Title", "Writer benchmark"), ("Language", "eng"),
                            ("Creator", "libzim-c"), ("Publisher", "libzim-c"),
                            ("Description", "bench/writer.py"), ("Name", "writer_bench")):
            c.add_metadata(name, value)
        with open(os.path.join(src, illustration), "rb") as f:
            c.add_illustration(48, f.read())
        for rel in files:
            if rel != illustration:
                c.add_item(FileItem(src, rel))
        c.set_mainpath(welcome)
    print(len(files))


if __name__ == "__main__":
    main(*sys.argv[1:])
