"""Writes one archive with whichever `libzim.writer` is importable.

Run by tests/test_writer_oracle.py under this project's interpreter and under
python-libzim 3.13.1's (the reference), so it uses only python-libzim's API:
    python writer_differential.py OUT.zim
"""
import datetime
import sys

from libzim.writer import Blob, ContentProvider, Creator, Hint, IndexData, Item, StringProvider

WORDS = ("river mountain forest desert ocean island valley canyon glacier meadow "
         "volcano prairie tundra lagoon delta plateau marsh savanna reef fjord").split()


class Page(Item):
    def __init__(self, path, title, content, mimetype="text/html", hints=None):
        super().__init__()
        self.path, self.title, self.content, self.mimetype = path, title, content, mimetype
        self.hints = {Hint.FRONT_ARTICLE: True} if hints is None else hints

    def get_path(self):
        return self.path

    def get_title(self):
        return self.title

    def get_mimetype(self):
        return self.mimetype

    def get_contentprovider(self):
        return StringProvider(self.content)

    def get_hints(self):
        return self.hints


class Pieces(ContentProvider):
    def __init__(self, parts):
        super().__init__()
        self.parts = parts

    def get_size(self):
        return sum(len(p) for p in self.parts)

    def gen_blob(self):
        for p in self.parts:
            yield Blob(p)


class PiecesPage(Page):
    def get_contentprovider(self):
        return Pieces([self.content[i:i + 7] for i in range(0, len(self.content), 7)])


class Custom(IndexData):
    def __init__(self, title, text):
        self.title, self.text = title, text

    def has_indexdata(self):
        return True

    def get_title(self):
        return self.title

    def get_content(self):
        return self.text

    def get_keywords(self):
        return "keyword" + self.title.split()[-1]

    def get_wordcount(self):
        return len(self.text.split())


class CustomPage(Page):
    def get_indexdata(self):
        return Custom(self.title, "zephyr " + self.title)


class Unindexed(Page):
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
            cls = (Page, PiecesPage, CustomPage, Unindexed)[i % 4]
            c.add_item(cls(f"pages/p{i:03}.html", f"Page title {i}", body(i)))
        c.add_item(Page("blob.bin", "", bytes(range(256)) * 9, "application/octet-stream", {}))
        c.add_item(Page("plain.txt", "Plain", "caf\u00e9 \u00e9t\u00e9", "text/plain",
                        {Hint.COMPRESS: False}))
        c.add_redirection("r/first", "First redirect", "pages/p000.html",
                          {Hint.FRONT_ARTICLE: True})
        c.add_redirection("r/second", "Second redirect", "blob.bin", {})
        c.set_mainpath("pages/p001.html")


if __name__ == "__main__":
    main(sys.argv[1])
