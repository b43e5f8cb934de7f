"""libkiwix's own server tests (test/server.cpp, test/library_server.cpp of the newest
libkiwix), ported: their behavioural assertions, on their test archives.

The archives (zimfile.zim, corner_cases#&.zim, zimfile_raycharles*.zim, ...) and
their library.xml come from Debian's libkiwix source package at run time (see
tools/peer_suite.py, whose fetch this reuses; cached in LIBZIM_C_PEER_CACHE), or
from LIBZIM_C_KIWIX_DATA. Without them these tests are skipped with the reason
(marked ``kiwix_data``), unless LIBZIM_C_REQUIRE_TEST_DATA=1, which makes that a
failure. Expected values are libkiwix's (copied from their test sources), never
computed by the server under test.

What of theirs does not apply, and why, is listed in docs/guides/serving.md
("Switching from kiwix-serve"): the skin/viewer/nojs/catch URLs (our pages are our
own; the viewer is tested in tests/browser_serve.py), translations (userlang),
416 for
malformed or multi-range headers (we follow RFC 9110: the whole content, or
multipart/byteranges), the id name mapper (a server option kiwix-serve does not
expose), and the "confusion of tongues" refusal (we search books of several
languages together).
"""

from __future__ import annotations

import html
import json
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import warnings

warnings.filterwarnings("ignore", message="Using `httpx`")
from starlette.testclient import TestClient  # noqa: E402

from libzim.serve import create_app  # noqa: E402
from libzim.serve.libraryfile import Source  # noqa: E402

from conftest import REPO_ROOT  # noqa: E402

pytestmark = pytest.mark.kiwix_data

NAMES = ("zimfile.zim", "corner_cases#&.zim", "example.zim", "poor.zim", "zimfile&other.zim",
         "zimfile_raycharles.zim", "zimfile_raycharles_uncategorized.zim", "library.xml",
         "lib_for_server_search_test.xml", "welcome.html")
REQUIRE = os.environ.get("LIBZIM_C_REQUIRE_TEST_DATA") == "1"


def _data_dir() -> Path:
    given = os.environ.get("LIBZIM_C_KIWIX_DATA")
    if given:
        return Path(given)
    cache = Path(os.environ.get("LIBZIM_C_PEER_CACHE", Path.home() / ".cache" / "libzim-c" / "peer"))
    return cache / "kiwix-test-data"


@pytest.fixture(scope="module")
def data() -> Path:
    d = _data_dir()
    if not all((d / n).is_file() for n in NAMES):
        sys.path.insert(0, str(REPO_ROOT / "tools"))
        try:
            import peer_suite
            peer_suite.fetch_kiwix_archives(d, NAMES)
        except (SystemExit, OSError, Exception) as e:  # noqa: BLE001 - no deb-src, no network: say so
            reason = f"libkiwix's test data is not at {d} and could not be fetched ({e})"
            if REQUIRE:
                pytest.fail(reason)
            pytest.skip(reason)
        finally:
            sys.path.remove(str(REPO_ROOT / "tools"))
    return d


ROOT = "/ROOT%23%3F"  # their server's root location: "/ROOT#?"


@pytest.fixture(scope="module")
def zfs(data):
    """Their ServerTest fixture: zimfile.zim and corner_cases#&.zim under /ROOT#?."""
    app = create_app([data / "zimfile.zim", data / "corner_cases#&.zim"], threads=2, root="/ROOT#?")
    with TestClient(app) as c:
        yield c


# Their resources200Compressible / Uncompressible, less what does not apply (module doc).
COMPRESSIBLE = [
    ("dynamic", "/"), ("dynamic", "/catalog/search"), ("dynamic", "/catalog/v2/root.xml"),
    ("dynamic", "/catalog/v2/entries"), ("dynamic", "/catalog/v2/partial_entries"),
    ("dynamic", "/search?content=zimfile&pattern=a"),
    ("dynamic", "/suggest?content=zimfile&term=ray"), ("dynamic", "/viewer"), ("dynamic", "/nojs"),
    ("zim", "/content/zimfile/A/index"), ("zim", "/content/zimfile/A/Ray_Charles"),
    ("zim", "/raw/zimfile/content/A/index"), ("zim", "/raw/zimfile/content/A/Ray_Charles"),
]
UNCOMPRESSIBLE = [
    ("zim", "/raw/zimfile/meta/Title"), ("zim", "/raw/zimfile/meta/Description"),
    ("zim", "/raw/zimfile/meta/Language"), ("zim", "/raw/zimfile/meta/Name"), ("zim", "/raw/zimfile/meta/Tags"),
    ("zim", "/raw/zimfile/meta/Date"), ("zim", "/raw/zimfile/meta/Creator"), ("zim", "/raw/zimfile/meta/Publisher"),
    ("dynamic", "/catalog/searchdescription.xml"), ("dynamic", "/catalog/v2/categories"),
    ("dynamic", "/catalog/v2/languages"), ("dynamic", "/catalog/v2/searchdescription.xml"),
    ("dynamic", "/catalog/v2/illustration/6f1d19d0-633f-087b-fb55-7ac324ff9baf?size=48"),
    ("zim", "/content/zimfile/I/m/Ray_Charles_classic_piano_pose.jpg"),
    ("zim", "/content/corner_cases%23%26/empty.html"), ("zim", "/content/corner_cases%23%26/empty.css"),
    ("zim", "/content/corner_cases%23%26/empty.js"),
    ("dynamic", "/suggest?content=zimfile"), ("dynamic", "/catalog/root.xml"), ("dynamic", "/nojs/download/zimfile"),
]
# In their compressible list, but ours is under 1,400 bytes (their bound), so not compressed.
SMALL_HERE = [("dynamic", "/catch/external?source=www.example.com")]
ALL200 = COMPRESSIBLE + UNCOMPRESSIBLE + SMALL_HERE


@pytest.mark.parametrize("kind,url", ALL200)
def test_200_and_head(zfs, kind, url):
    g = zfs.get(ROOT + url)
    assert g.status_code == 200, url
    h = zfs.head(ROOT + url)
    assert h.status_code == 200 and h.content == b"", url
    skip = {"date", "content-length", "content-type"}  # content-type: multipart boundaries differ
    assert ({k: v for k, v in g.headers.items() if k not in skip}
            == {k: v for k, v in h.headers.items() if k not in skip}), url


@pytest.mark.parametrize("kind,url", COMPRESSIBLE)
def test_compressible_content_is_compressed_if_acceptable(zfs, kind, url):
    plain = zfs.get(ROOT + url, headers={"Accept-Encoding": ""})
    x = zfs.get(ROOT + url, headers={"Accept-Encoding": "gzip"})
    assert x.status_code == 200 and x.headers["content-encoding"] == "gzip" and x.headers["vary"] == "Accept-Encoding"
    assert "content-encoding" not in plain.headers
    if kind == "zim":  # generated pages carry a date; archive content is the same bytes
        assert x.content == plain.content  # httpx decodes the gzip body
    assert x.headers["etag"] != plain.headers["etag"]  # CompressionInfluencesETag


@pytest.mark.parametrize("kind,url", UNCOMPRESSIBLE + SMALL_HERE)
def test_uncompressible_content_is_not_compressed(zfs, kind, url):
    x = zfs.get(ROOT + url, headers={"Accept-Encoding": "gzip"})
    assert x.status_code == 200 and "content-encoding" not in x.headers
    assert x.headers["etag"] == zfs.get(ROOT + url, headers={"Accept-Encoding": ""}).headers["etag"]


URLS_400 = [
    "/ROOT%23%", "/ROOT%23%3",  # theirs with libmicrohttpd 1.0+ (malformed percent-encodings)
    ROOT + "/content/zimfile/A/%zz",
    "/search", "/search?content=non-existing-book&pattern=asdfqwerty",
    "/search?content=non-existing-book&pattern=asd<qwerty", "/search?books.name=non-exsitent-book&pattern=asd<qwerty",
    "/search?books.id=non-exsitent-id&pattern=asd<qwerty", "/search?books.filter.lang=unk&pattern=asd<qwerty",
    "/search?pattern",
]


@pytest.mark.parametrize("url", URLS_400)
def test_400(zfs, url):
    assert zfs.get(ROOT + url).status_code == 400


URLS_404 = [
    "/", "/zimfile", "/ROOT", "/ROOT%23%3Fxyz",
    ROOT + "/catalog", ROOT + "/catalog/", ROOT + "/catalog/non-existent-item",
    ROOT + "/catalog/v2/illustration/zimfile?size=48",
    ROOT + "/catalog/v2/illustration/6f1d19d0-633f-087b-fb55-7ac324ff9baf?size=96",
    ROOT + "/random", ROOT + "/random?content=non-existent-book", ROOT + "/random/", ROOT + "/random/number",
    ROOT + "/suggest", ROOT + "/suggest?content=non-existent-book&term=abcd", ROOT + "/suggest/",
    ROOT + "/suggest/fr", ROOT + "/search/", ROOT + "/search/anythingotherthansearchdescription.xml",
    ROOT + "/content/zimfile/A/non-existent-article",
    ROOT + "/raw/non-existent-book/meta/Title", ROOT + "/raw/zimfile/wrong-kind/Foo",
    ROOT + "/raw/zimfile/meta/Favicon", ROOT + "/raw/zimfile/meta/Illustration_48x48@1",
    ROOT + "/catch/", ROOT + "/catch/external", ROOT + "/catch/external?source=", ROOT + "/catch/anythingotherthanexternal",
    ROOT + "/nojs/download/thiszimdoesntexist",
]


@pytest.mark.parametrize("url", URLS_404)
def test_404(zfs, url):
    assert zfs.get(url).status_code == 404


def test_slashless_root_is_redirected(zfs):
    for url, to in ((ROOT, ROOT + "/"), (ROOT + "?abcd=123&xyz=890", ROOT + "/?abcd=123&xyz=890")):
        g = zfs.get(url, follow_redirects=False)
        assert g.status_code == 302 and g.headers["location"] == to
        assert g.headers["cache-control"] == "max-age=0, must-revalidate" and "etag" not in g.headers


def test_empty_root_is_not_redirected(data):
    with TestClient(create_app([data / "zimfile.zim"], threads=1, root="")) as c:
        assert c.get("/").status_code == 200


def test_random_redirects_to_an_existing_article(zfs):
    g = zfs.get(ROOT + "/random?content=zimfile", follow_redirects=False)
    assert g.status_code == 302 and g.headers["location"].startswith(ROOT + "/content/zimfile/A/")
    assert g.headers["cache-control"] == "max-age=0, must-revalidate" and "etag" not in g.headers
    seen = {zfs.get(ROOT + "/random?content=corner_cases%23%26", follow_redirects=False).headers["location"]
            for _ in range(10)}
    assert seen == {ROOT + "/content/corner_cases%23%26/c%23.html"}


NON_ENDPOINT = [
    "/zimfile", "/zimfile/A/index", "/some/path", "/non-existent-item", "/catalogarithm", "/catalogistics/root.xml",
    "/catch22", "/catchy/song", "/contention", "/contents/is/not/the/same/as/content", "/randomize",
    "/randomestic/animals", "/rawman", "/rawkward/url", "/searcheology", "/searchitecture/history", "/skinhead",
    "/skineffect/formula", "/suggesture", "/suggestonia/tallinn", "/meta", "/does?P=NP", "/C%23",
    "/100%25_guarantee", "/AT%26T", "/Quo_vadis%3F", "/1%2B1%3D2", "/encode?string=%23%25%26%2B%3D%3F",
    "/route?from=current%20location&to=girlfriend%238",
]


@pytest.mark.parametrize("path", NON_ENDPOINT)
def test_non_endpoint_urls_are_redirected_to_content_urls(zfs, path):
    g = zfs.get(ROOT + path, follow_redirects=False)
    assert g.status_code == 302 and g.headers["location"] == ROOT + "/content" + path
    assert g.headers["cache-control"] == "max-age=0, must-revalidate" and "etag" not in g.headers


def test_redirections_to_urls_with_special_symbols_and_main_page(zfs):
    g = zfs.get(ROOT + "/content/corner_cases%23%26/c_sharp.html", follow_redirects=False)
    assert g.status_code == 302 and g.headers["location"] == ROOT + "/content/corner_cases%23%26/c%23.html"
    assert g.headers["cache-control"] == "max-age=0, must-revalidate" and "etag" not in g.headers
    g = zfs.get(ROOT + "/content/zimfile", follow_redirects=False)
    assert g.status_code == 302 and g.headers["location"] == ROOT + "/content/zimfile/A/index"


def test_raw_entry(zfs, data):
    assert zfs.get(ROOT + "/raw/zimfile/meta/Title").content == b"Ray Charles"
    assert zfs.get(ROOT + "/raw/zimfile/meta/Creator").content == b"Wikipedia"
    from libzim.reader import Archive
    expected = bytes(Archive(data / "zimfile.zim").get_entry_by_path("A/Ray_Charles").get_item().content)
    assert zfs.get(ROOT + "/raw/zimfile/content/A/Ray_Charles").content == expected
    assert zfs.get(ROOT + "/content/zimfile/A/Ray_Charles").content == expected  # content is not decorated either


@pytest.mark.parametrize("kind,url", ALL200)
def test_cache_control_and_etags(zfs, kind, url):
    g = zfs.get(ROOT + url)
    # CacheControlOfZimContent / CacheControlOfDynamicContent, ETagHeaderIsSetAsNeeded
    want = "max-age=3600, must-revalidate" if kind == "zim" else "max-age=0, must-revalidate"
    assert g.headers["cache-control"] == want
    etag = g.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    # ETagIsTheSameInResponsesToDifferentRequestsOfTheSameURL, ETagIsTheSameAcrossHeadAndGet
    assert zfs.head(ROOT + url).headers["etag"] == etag == zfs.get(ROOT + url).headers["etag"]
    # IfNoneMatchRequestsWithMatchingETagResultIn304Responses
    special = ("cache-control", "content-location", "etag", "expires", "vary")
    for enc in ("", "gzip"):
        g1 = zfs.get(ROOT + url, headers={"Accept-Encoding": enc})
        e = g1.headers["etag"]
        etags = f'"x{e[1:]}, {e}, {e[:-2]}"'
        for r in (zfs.get(ROOT + url, headers={"If-None-Match": etags, "Accept-Encoding": enc}),
                  zfs.head(ROOT + url, headers={"If-None-Match": etags, "Accept-Encoding": enc})):
            assert r.status_code == 304 and r.content == b""
            assert {k: r.headers.get(k) for k in special} == {k: g1.headers.get(k) for k in special}
    # IfNoneMatchRequestsWithMismatchingETagResultIn200Responses
    mismatch = etag[:-1] + 'x"'
    assert zfs.get(ROOT + url, headers={"If-None-Match": mismatch}).status_code == 200
    assert zfs.head(ROOT + url, headers={"If-None-Match": mismatch}).status_code == 200


def test_etags_across_servers(zfs, data):
    # DifferentServerInstancesProduceIdenticalETagsForZimContent / ...DifferentETagsForDynamicContent
    with TestClient(create_app([data / "zimfile.zim", data / "corner_cases#&.zim"], threads=1,
                               root="/ROOT#?")) as other:
        for kind, url in ALL200:
            mine, theirs = zfs.head(ROOT + url).headers["etag"], other.head(ROOT + url).headers["etag"]
            assert (mine == theirs) == (kind == "zim"), url


def test_generated_pages_are_retagged_when_the_library_changes(data):
    # The ETag of a generated page is the library's state: a reload gives new ones.
    lib_file = data / "library.xml"
    library = Source(library_files=[str(lib_file)]).load()
    with TestClient(create_app(library, threads=1)) as c:
        before = c.get("/catalog/v2/entries").headers["etag"]
        assert c.get("/catalog/v2/entries", headers={"If-None-Match": before}).status_code == 304
        assert c.app.state.server.reloader.reload_now()
        after = c.get("/catalog/v2/entries")
        assert after.headers["etag"] != before
        assert c.get("/catalog/v2/entries", headers={"If-None-Match": before}).status_code == 200


PICTURE = "/content/zimfile/I/m/Ray_Charles_classic_piano_pose.jpg"


def test_valid_single_ranges(zfs):
    full = zfs.get(ROOT + PICTURE)
    assert "content-range" not in full.headers and full.headers["accept-ranges"] == "bytes"
    body = full.content
    for rng, span, part in (("bytes=0-100000", "0-20076", body), ("bytes=0-10", "0-10", body[:11]),
                            ("bytes=123-456", "123-456", body[123:457]), ("bytes=20000-", "20000-20076", body[20000:]),
                            ("bytes=-100", "19977-20076", body[19977:])):
        p = zfs.get(ROOT + PICTURE, headers={"Range": rng})
        assert p.status_code == 206 and p.content == part and p.headers["content-range"] == f"bytes {span}/20077"
        assert p.headers["accept-ranges"] == "bytes"


def test_unsatisfiable_ranges(zfs):
    for rng in ("bytes=1000000-", "bytes=30000-30100"):
        p = zfs.get(ROOT + PICTURE, headers={"Range": rng})
        assert p.status_code == 416 and p.headers["content-range"] == "bytes */20077"
    for rng in ("bytes=0-", "bytes=-100"):
        p = zfs.get(ROOT + "/content/corner_cases%23%26/empty.js", headers={"Range": rng})
        assert p.status_code == 416 and p.headers["content-range"] == "bytes */0"


def test_range_has_precedence_over_compression_and_is_case_insensitive(zfs):
    p1 = zfs.get(ROOT + PICTURE, headers={"Range": "bytes=123-456"})
    p2 = zfs.get(ROOT + PICTURE, headers={"Range": "bytes=123-456", "Accept-Encoding": "gzip"})
    assert (p1.status_code, p1.content, p1.headers["content-range"]) == (
        p2.status_code, p2.content, p2.headers["content-range"])
    assert "content-encoding" not in p2.headers
    page = "/content/zimfile/A/Ray_Charles"  # compressible: a range of it is still not compressed
    p3 = zfs.get(ROOT + page, headers={"Range": "bytes=0-99", "Accept-Encoding": "gzip"})
    assert p3.status_code == 206 and len(p3.content) == 100 and "content-encoding" not in p3.headers
    for name in ("RANGE", "range", "rAnGe", "RaNgE"):
        r = zfs.get(ROOT + PICTURE, headers={name: "bytes=100-200"})
        assert r.status_code == 206 and r.headers["content-range"] == "bytes 100-200/20077"
        assert r.content == p1.content[:0] + zfs.get(ROOT + PICTURE).content[100:201]


SUGGESTIONS = [  # their expected (value, path) rows, the full-text row last
    ("thing", [("Doing His Thing", "A/Doing_His_Thing"), ("We Didn't See a Thing", "A/We_Didn't_See_a_Thing")]),
    ("old%20sun", [("That Lucky Old Sun", "A/That_Lucky_Old_Sun")]),
    ("öld%20suñ", [("That Lucky Old Sun", "A/That_Lucky_Old_Sun")]),
    ("abracadabra", []),
    ("A%26B", []),
]


@pytest.mark.parametrize("term,rows", SUGGESTIONS)
def test_suggestions(zfs, term, rows):
    r = zfs.get(ROOT + f"/suggest?content=zimfile&term={term}")
    items = json.loads(r.text)
    got = [(html.unescape(i["value"]), i["path"]) for i in items if i["kind"] == "path"]
    assert got == rows
    from urllib.parse import unquote
    assert items[-1]["kind"] == "pattern" and items[-1]["value"] == unquote(term) + " "
    assert html.unescape(items[-1]["label"]) == f"containing '{unquote(term)}'..."


def _paths(zfs, query: str) -> list[str]:
    return [i["path"] for i in json.loads(zfs.get(ROOT + "/suggest?content=zimfile&" + query).text)
            if i["kind"] == "path"]


def test_suggestions_in_range(zfs):
    # their suggestions_in_range: 50 "ray" suggestions in ten steps of five, ...
    every = _paths(zfs, "term=ray&count=100")
    pages = [_paths(zfs, f"term=ray&start={i * 5}&count=5") for i in range(10)]
    assert [len(p) for p in pages] == [5] * 10
    assert sum(pages, []) == every[:50]  # (and the pages are the list's, in order)
    # ... 8 of "song for you" in steps of five, 1 of "strong", none of "oops".
    assert [len(_paths(zfs, f"term=song+for+you&start={s}&count=5")) for s in (0, 5)] == [5, 3]
    assert len(_paths(zfs, "term=strong&start=0&count=5")) == 1
    assert _paths(zfs, "term=oops&start=0&count=5") == []


def test_empty_pattern_search_does_not_error(zfs):
    assert zfs.get(ROOT + "/search?content=zimfile").status_code == 200


# -- test/library_server.cpp: the catalog over their library.xml -----------------

@pytest.fixture(scope="module")
def lib(data):
    library = Source(library_files=[str(data / "library.xml")]).load()
    with TestClient(create_app(library, threads=1, root="/ROOT#?")) as c:
        yield c


A = {"a": "http://www.w3.org/2005/Atom"}


def _ids(c: TestClient, url: str) -> list[str]:
    root = ET.fromstring(c.get(ROOT + url).content)
    return [e.find("a:id", A).text.removeprefix("urn:uuid:") for e in root.findall("a:entry", A)]


def _feed(c: TestClient, url: str) -> ET.Element:
    r = c.get(ROOT + url)
    assert r.status_code == 200, url
    return ET.fromstring(r.content)


RAY, UNCAT, CHARLES = "raycharles", "raycharles_uncategorized", "charlesray"


def test_catalog_v2_entries_as_their_library(lib):
    # The library file's four books: the one whose file is missing (inaccessiblezim) is
    # not served (kiwix-serve lists only local, valid books too).
    assert _ids(lib, "/catalog/v2/entries") == [CHARLES, RAY, UNCAT]  # by title, as theirs
    root = _feed(lib, "/catalog/v2/entries")
    assert root.find("a:title", A).text == "All Entries"
    links = {link.get("rel"): link.get("href") for link in root.findall("a:link", A)}
    assert links == {"self": ROOT + "/catalog/v2/entries", "start": ROOT + "/catalog/v2/root.xml",
                     "up": ROOT + "/catalog/v2/root.xml"}
    ray = next(e for e in root.findall("a:entry", A) if e.find("a:id", A).text == "urn:uuid:raycharles")
    assert ray.find("a:title", A).text == "Ray Charles"
    assert ray.find("a:language", A).text == "eng"
    assert ray.find("a:name", A).text == "wikipedia_en_ray_charles"
    assert ray.find("a:category", A).text == "wikipedia"
    assert ray.find("a:articleCount", A).text == "284" and ray.find("a:mediaCount", A).text == "2"
    acq = [link for link in ray.findall("a:link", A) if link.get("rel") == "http://opds-spec.org/acquisition/open-access"]
    assert acq and acq[0].get("href").startswith("https://github.com/kiwix/libkiwix/raw/master/test/data/")
    assert acq[0].get("length") == str(556 << 10)
    html_link = [link for link in ray.findall("a:link", A) if link.get("type") == "text/html"]
    assert html_link[0].get("href") == ROOT + "/content/zimfile_raycharles"


@pytest.mark.parametrize("query,expected", [
    # the newest libkiwix's order: Xapian's relevance (lang=eng: the book of one language first)
    ("lang=eng", [UNCAT, RAY]), ("lang=rus", [UNCAT]), ("lang=fra", [CHARLES]), ("lang=eng%2Cfra", [CHARLES, UNCAT, RAY]),
    ("category=jazz", [CHARLES]), ("category=wikipedia", [RAY]), ("tag=wikipedia", [RAY, UNCAT, CHARLES]),  # only boolean terms: no weight, library order
    ("tag=_category:jazz", [CHARLES]), ("notag=_category:jazz", [RAY, UNCAT]),
    ("tag=wikipedia;_videos:no&notag=unittest", [RAY, UNCAT]), ("maxsize=200000", [UNCAT]),
    ("name=wikipedia_fr_ray_charles", [CHARLES]), ("q=uncategorized", [UNCAT]),
    ("count=1", [CHARLES]), ("start=1&count=1", [RAY]), ("count=-1", [CHARLES, RAY, UNCAT]),
    ("start=1", [RAY, UNCAT]),  # their order: by title
    ("start=10", []),
])
def test_catalog_v2_entries_filters(lib, query, expected):
    root = _feed(lib, "/catalog/v2/entries?" + query)
    assert [e.find("a:id", A).text.removeprefix("urn:uuid:") for e in root.findall("a:entry", A)] == expected
    shown = query.replace(":", "%3A").replace(";", "%3B")  # kiwix writes the query back percent-encoded
    assert root.find("a:title", A).text == f"Filtered Entries ({shown})"
    assert root.find("a:itemsPerPage", A).text == str(len(expected))


def test_catalog_v2_partial_entry_and_complete_entry(lib):
    root = _feed(lib, "/catalog/v2/partial_entries?lang=fra")
    (entry,) = root.findall("a:entry", A)
    alt = entry.find("a:link", A)
    assert alt.get("rel") == "alternate" and alt.get("href") == ROOT + "/catalog/v2/entry/charlesray"
    assert entry.find("a:summary", A) is None
    full = lib.get(ROOT + "/catalog/v2/entry/charlesray")
    assert full.status_code == 200 and full.headers["content-type"].startswith("application/atom+xml;type=entry")
    e = ET.fromstring(full.content)
    assert e.tag == "{http://www.w3.org/2005/Atom}entry" and e.find("a:title", A).text == "Charles, Ray"
    assert lib.get(ROOT + "/catalog/v2/entry/no-such-book").status_code == 404


def test_catalog_v2_root_categories_languages(lib):
    root = _feed(lib, "/catalog/v2/root.xml")
    subs = [e.find("a:link", A).get("href") for e in root.findall("a:entry", A)]
    assert subs == [ROOT + f"/catalog/v2/{x}" for x in ("entries", "partial_entries", "categories", "languages")]
    cats = _feed(lib, "/catalog/v2/categories")
    assert [e.find("a:title", A).text for e in cats.findall("a:entry", A)] == ["jazz", "wikipedia"]
    assert [e.find("a:link", A).get("href") for e in cats.findall("a:entry", A)] == [
        ROOT + "/catalog/v2/entries?category=jazz", ROOT + "/catalog/v2/entries?category=wikipedia"]
    langs = _feed(lib, "/catalog/v2/languages")
    ns = {**A, "dc": "http://purl.org/dc/terms/", "thr": "http://purl.org/syndication/thread/1.0"}
    got = {e.find("dc:language", ns).text: e.find("thr:count", ns).text for e in langs.findall("a:entry", A)}
    assert got == {"eng": "2", "fra": "1", "rus": "1"}
    desc = lib.get(ROOT + "/catalog/v2/searchdescription.xml")
    assert desc.status_code == 200 and ROOT + "/catalog/v2/entries?q={searchTerms?}" in desc.text


def test_catalog_legacy_feeds(lib):
    assert _ids(lib, "/catalog/root.xml") == [CHARLES, RAY, UNCAT]
    assert _ids(lib, "/catalog/search?q=uncategorized") == [UNCAT]
    assert lib.get(ROOT + "/catalog/searchdescription.xml").status_code == 200


def test_library_search_filters_books(data):
    # books.filter.* selects the books of a search (their server_search tests' selection).
    library = Source(library_files=[str(data / "library.xml")]).load()
    with TestClient(create_app(library, threads=1)) as c:
        r = c.get("/search?books.filter.lang=eng&books.filter.category=wikipedia&pattern=ray&format=xml")
        assert r.status_code == 200
        books = {i.find("book/name").text for i in ET.fromstring(r.content).findall("channel/item")}
        assert books == {"zimfile_raycharles"}
        assert c.get("/search?books.filter.lang=unk&pattern=ray").status_code == 400
        gz = c.get("/search?books.filter.lang=fra&pattern=ray&format=xml", headers={"Accept-Encoding": "gzip"})
        assert gz.status_code == 200 and ET.fromstring(gz.content).find("channel") is not None
        raw = c.get("/catalog/v2/entries", headers={"Accept-Encoding": "gzip"})
        assert raw.headers.get("content-encoding") == "gzip" and b"Ray Charles" in raw.content
