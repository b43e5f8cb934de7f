"""Writes one archive with whichever `libzim.writer` is importable.

Run by tests/test_writer_oracle.py under this project's interpreter and under
python-libzim 3.13.1's (the reference), so it uses only python-libzim's API:
    python writer_differential.py OUT.zim
"""
import datetime
import os
import sys

from libzim.writer import Creator, Hint

# The writer tests' items, providers and index data (writer_support.py uses only
# python-libzim's API too).  The oracle runs this with -I, which leaves this
# folder out of sys.path; appended, it cannot shadow the libzim under test.
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from writer_support import PiecesProvider, TextItem, WordsIndex  # noqa: E402

WORDS = ("river mountain forest desert ocean island valley canyon glacier meadow "
         "volcano prairie tundra lagoon delta plateau marsh savanna reef fjord").split()


class PiecesPage(TextItem):
    def get_contentprovider(self):
        return PiecesProvider([self.content[i:i + 7] for i in range(0, len(self.content), 7)])


class CustomPage(TextItem):
    def get_indexdata(self):
        return WordsIndex(self.title, "zephyr " + self.title, "keyword" + self.title.split()[-1])


class Unindexed(TextItem):
    def get_indexdata(self):
        return None


def body(i):
    words = " ".join(WORDS[(i * k + 3) % len(WORDS)] for k in range(1, 30))
    return f"<html><head><title>Page {i}</title></head><body><p>{words} item{i}</p></body></html>"


def main(out):
    with Creator(out).config_indexing(True, "eng").config_nbworkers(2) as c:
        for name, value in (("Name", "differential"), ("Title", "Differential test"),
                            ("Creator", "libzim-c"), ("Publisher", "libzim-c"),
                            ("Description", "Same input, two writers"), ("Language", "eng")):
            c.add_metadata(name, value)
        c.add_metadata("Date", datetime.date(2023, 9, 1))
        c.add_metadata("Tags", b"a;b;c")
        c.add_metadata("X-Custom", "x", mimetype="text/x-custom")
        c.add_illustration(48, b"\x89PNG not really a png")
        for i in range(120):
            cls = (TextItem, PiecesPage, CustomPage, Unindexed)[i % 4]
            c.add_item(cls(f"pages/p{i:03}.html", f"Page title {i}", body(i)))
        c.add_item(TextItem("blob.bin", "", bytes(range(256)) * 9, "application/octet-stream", {}))
        c.add_item(TextItem("plain.txt", "Plain", "caf\u00e9 \u00e9t\u00e9", "text/plain",
                            {Hint.COMPRESS: False}))
        c.add_redirection("r/first", "First redirect", "pages/p000.html",
                          {Hint.FRONT_ARTICLE: True})
        c.add_redirection("r/second", "Second redirect", "blob.bin", {})
        c.set_mainpath("pages/p001.html")


if __name__ == "__main__":
    main(sys.argv[1])
