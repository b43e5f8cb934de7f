"""Write a small archive with a full-text index (python-libzim's libzim.writer).

    python docs/examples/write_archive.py OUT.zim
"""

import sys

from libzim.writer import Creator, Hint, Item, StringProvider


class Page(Item):
    def __init__(self, path, title, html):
        super().__init__()
        self.path, self.title, self.html = path, title, html

    def get_path(self): return self.path
    def get_title(self): return self.title
    def get_mimetype(self): return "text/html"
    def get_contentprovider(self): return StringProvider(self.html)
    def get_hints(self): return {Hint.FRONT_ARTICLE: True}


def page(title, body):
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"


with Creator(sys.argv[1]).config_indexing(True, "eng") as creator:
    creator.add_item(Page("home", "Home", page("Home", "Start here: the event loop and the parser.")))
    creator.add_item(Page("loop", "Event loop", page("Event loop", "The event loop runs callbacks.")))
    creator.add_item(Page("parser", "Parser", page("Parser", "The parser reads the event stream.")))
    creator.add_metadata("Title", "My archive")
    creator.add_metadata("Language", "eng")
    creator.set_mainpath("home")
# leaving the block writes the archive; an exception in it leaves no file
print("wrote", sys.argv[1])
