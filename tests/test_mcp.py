"""``zim mcp`` (libzim/mcp/): the tools called directly, and the server driven
through the MCP SDK's own client over stdio and streamable HTTP on 127.0.0.1.

The archives are written here with ``libzim.writer``; every expected value
comes from the HTML below (made-up words such as "zorblax" that appear only
where the tables put them), never from running the code under test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import pytest

# The SDK is a test requirement (requirements-test.txt): without it collection
# stops here, but on a free-threaded build, where its compiled dependencies may
# have no wheels and tools/freethreaded_recipe.sh then leaves it out.
if sysconfig.get_config_var("Py_GIL_DISABLED") and importlib.util.find_spec("mcp") is None:
    pytest.skip("the MCP SDK (mcp extra) is not installed: on a free-threaded build tools/freethreaded_recipe.sh "
                "leaves it out when its pydantic-core, cryptography or cffi has no wheel for it",
                allow_module_level=True)

import anyio  # noqa: E402  (the SDK's dependency)
import httpx2  # noqa: E402  (the SDK's HTTP client)
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import child_python, free_port  # noqa: E402
from libzim import writer  # noqa: E402
from libzim.mcp import Catalogue, ToolInputError, Tools  # noqa: E402
from writer_support import TextItem  # noqa: E402

TIMEOUT = 60  # seconds any one session may take (bounded: a hang fails the test)


INTRO = """<html><head><title>Intro Guide</title><script>var hidden = 1;</script></head><body>
<nav class="sphinxsidebar">navigation words</nav>
<h1>Intro Guide<a class="headerlink" href="#top">¶</a></h1>
<p>The zorblax widget can raise a <code>TypeError</code> exception; see
<a href="../ref/api.html#frob">the frobnicate call</a> and <a href="https://example.com/x">elsewhere</a>.</p>
<h2>Setup</h2>
<p>Install it with quixotic care. <a href="missing.html">a gone page</a></p>
<h3>Setup details</h3>
<p>Details mention plinth.</p>
<h2>Usage</h2>
<p>Use the widget with velleity.</p>
</body></html>"""
INTRO_TEXT = ("Intro Guide\nThe zorblax widget can raise a TypeError exception; see the frobnicate call and "
              "elsewhere.\nSetup\nInstall it with quixotic care. a gone page\nSetup details\nDetails mention plinth."
              "\nUsage\nUse the widget with velleity.")
API = "<html><body><h1>API Reference</h1><p>The zorblax api: frobnicate.</p></body></html>"
LONG_PARTS = [f"<h2>Part {i}</h2><p>{'filler ' * 60}marker{i}</p>" for i in range(30)]
LONG = "<html><body><h1>Long</h1>" + "".join(LONG_PARTS) + "</body></html>"
COMMON = 12  # pages p/0 .. p/11 hold the word "quorum"
BETA = "<html><body><h1>Zorblax in Beta</h1><p>Beta's zorblax page.</p></body></html>"


@pytest.fixture(scope="module")
def zims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mcp")
    paths = {name: root / f"{name}.zim" for name in ("alpha", "beta", "gamma")}
    with writer.Creator(paths["alpha"]).config_indexing(True, "eng") as c:
        c.set_mainpath("guide/intro.html")
        c.add_metadata("Title", "Alpha docs")
        c.add_metadata("Language", "eng")
        c.add_item(TextItem("guide/intro.html", "Intro Guide", INTRO))
        c.add_item(TextItem("ref/api.html", "API Reference", API))
        c.add_item(TextItem("long.html", "Long", LONG))
        c.add_item(TextItem("logo.png", "Logo", b"\x89PNG\r\n\x1a\n", "image/png"))
        for i in range(COMMON):
            c.add_item(TextItem(f"p/{i}", f"Page {i}",
                                f"<html><body><h1>Page {i}</h1><p>quorum number {i}</p></body></html>"))
        c.add_redirection("old/intro", "Old intro", "guide/intro.html", {writer.Hint.FRONT_ARTICLE: True})
    with writer.Creator(paths["beta"]).config_indexing(True, "eng") as c:
        c.add_item(TextItem("b/zorblax.html", "Zorblax in Beta", BETA))
    with writer.Creator(paths["gamma"]) as c:  # no full-text index
        c.add_item(TextItem("g.html", "Gamma page", "<html><body><p>zorblax gamma</p></body></html>"))
    return paths


@pytest.fixture(scope="module")
def tools(zims: dict[str, Path]) -> Tools:
    return Tools(Catalogue(list(zims.values())))


def call(tools: Tools, name: str, **kw: Any) -> dict[str, Any]:
    return json.loads(getattr(tools, name)(**kw))


# -- the tools, called directly -------------------------------------------------------------

def test_archives(tools: Tools) -> None:
    rows = {r["name"]: r for r in call(tools, "archives")["archives"]}
    assert set(rows) == {"alpha", "beta", "gamma"}
    assert rows["alpha"]["title"] == "Alpha docs" and rows["alpha"]["language"] == "eng"
    assert rows["alpha"]["main"] == "guide/intro.html"
    assert [rows[n]["fulltext"] for n in ("alpha", "beta", "gamma")] == [True, True, False]
    assert rows["beta"]["articles"] == 1


def test_search_one_ranking(tools: Tools) -> None:
    out = call(tools, "search", query="zorblax")
    found = {(h["archive"], h["path"]) for h in out["hits"]}
    # gamma has no index: not searched; the two indexed archives in one list
    assert found == {("alpha", "guide/intro.html"), ("alpha", "ref/api.html"), ("beta", "b/zorblax.html")}
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    for h in out["hits"]:
        assert "**zorblax**" in h["snippet"].lower()
        assert h["cite"] == f"zim://{h['archive']}/{h['path']}"
    only = call(tools, "search", query="zorblax", archives=["beta"])
    assert [(h["archive"], h["path"]) for h in only["hits"]] == [("beta", "b/zorblax.html")]


def test_search_paging(tools: Tools) -> None:
    first = call(tools, "search", query="quorum", limit=5)
    assert len(first["hits"]) == 5 and first["next_offset"] == 5
    pages = [first["hits"]]
    offset = first["next_offset"]
    while offset is not None:
        more = call(tools, "search", query="quorum", limit=5, offset=offset)
        pages.append(more["hits"])
        offset = more["next_offset"]
    paths = [h["path"] for page in pages for h in page]
    assert sorted(paths) == sorted(f"p/{i}" for i in range(COMMON))


def test_read_whole_and_redirect(tools: Tools) -> None:
    out = call(tools, "read", archive="alpha", path="guide/intro.html")
    assert out["text"] == INTRO_TEXT  # nav and script dropped, inline code and link text kept
    assert out["next_offset"] is None and "redirected_from" not in out
    red = call(tools, "read", archive="alpha", path="old/intro")
    assert red["path"] == "guide/intro.html" and red["redirected_from"] == "old/intro"
    assert red["text"] == INTRO_TEXT
    by_title = call(tools, "read", archive="alpha", path="API Reference")
    assert by_title["path"] == "ref/api.html"
    everything = call(tools, "read", archive="alpha", path="guide/intro.html", main_only=False)
    assert "navigation words" in everything["text"] and "navigation words" not in out["text"]


def test_read_sections(tools: Tools) -> None:
    setup = call(tools, "read", archive="alpha", path="guide/intro.html", section="setup")
    assert setup["section"] == "Setup"
    assert setup["text"] == "Setup\nInstall it with quixotic care. a gone page\nSetup details\nDetails mention plinth.\n"
    usage = call(tools, "read", archive="alpha", path="guide/intro.html", section="Usage")
    assert usage["text"] == "Usage\nUse the widget with velleity."
    with pytest.raises(ToolInputError, match=r"no section 'Nope'.*Setup details"):
        tools.read("alpha", "guide/intro.html", section="Nope")


def test_read_paging(tools: Tools) -> None:
    chunks, offset, headings = [], 0, None
    for _ in range(100):
        out = call(tools, "read", archive="alpha", path="long.html", offset=offset, max_chars=500)
        chunks.append(out["text"])
        headings = headings or out.get("headings")
        if out["next_offset"] is None:
            break
        assert len(out["text"]) == 500
        offset = out["next_offset"]
    text = "".join(chunks)
    assert text.startswith("Long\nPart 0\n") and text.endswith("marker29")
    assert all(f"marker{i}" in text for i in range(30))
    assert headings == ["Long"] + [f"Part {i}" for i in range(30)]
    part = call(tools, "read", archive="alpha", path="long.html", section="Part 7")
    assert part["text"].startswith("Part 7\n") and part["text"].rstrip().endswith("marker7")


def test_suggest_random_links(tools: Tools) -> None:
    sug = call(tools, "suggest", query="zorblax")
    assert ("beta", "b/zorblax.html") in {(t["archive"], t["path"]) for t in sug["titles"]}
    sug = call(tools, "suggest", query="Intro", archives=["alpha"])
    assert "guide/intro.html" in {t["path"] for t in sug["titles"]}
    rnd = call(tools, "random", archive="beta")
    assert rnd["path"] == "b/zorblax.html" and rnd["title"] == "Zorblax in Beta"
    out = call(tools, "links", archive="alpha", path="guide/intro.html")
    assert out["links"] == [{"path": "ref/api.html", "title": "API Reference", "text": "the frobnicate call",
                             "fragment": "frob"}]
    assert out["external"] == 1 and out["missing"] == 1 and out["truncated"] is False


# 120 titles start with "zeta" in some case: over the 100 at which "auto" lists titles.
ZETAS = [f"Zeta {i:03d}" for i in range(60)] + [f"zeta lower {i:03d}" for i in range(60)] + ["Omega zeta"]


@pytest.fixture(scope="module")
def zeta_zim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp_zeta") / "zeta.zim"
    with writer.Creator(path).config_indexing(True, "eng") as c:
        for i, t in enumerate(ZETAS):
            c.add_item(TextItem(f"z/{i}", t, f"<html><body><h1>{t}</h1><p>zeta text</p></body></html>"))
    return path


def test_suggest_takes_the_titles_for_a_common_prefix(zeta_zim: Path) -> None:
    # 100+ titles start with "zeta": the tool lists those starting with the query as
    # typed first, then capitalised, each in the archive's own title order; the title
    # index would rank "Zeta 000" ... first for "zeta" (the check that this differs).
    from libzim.reader import Archive
    from libzim.suggestion import SuggestionSearcher
    with Archive(zeta_zim) as a:
        titles = [e.title for e in a.iter_by_title()]
        index = [r.title for r in SuggestionSearcher(a).suggest("zeta").get_results(0, 50)]
    t = Tools(Catalogue([zeta_zim]))
    for q, variants in [("zeta", ["zeta", "Zeta"]), ("Zeta", ["Zeta", "zeta"])]:
        want = [x for v in variants for x in titles if x.startswith(v)][:50]
        assert len(want) == 50
        assert [r["title"] for r in call(t, "suggest", query=q, limit=50)["titles"]] == want, q
    assert want[0] == "Zeta 000" and index != [x for x in titles if x.startswith("zeta")][:50]
    # Fewer than 100 start with "omega": the index, whose word match inside a title stays.
    assert [r["title"] for r in call(t, "suggest", query="omega")["titles"]] == ["Omega zeta"]


def test_citations_with_base_url(zims: dict[str, Path]) -> None:
    t = Tools(Catalogue([zims["alpha"]], base_url="http://127.0.0.1:8080/"))
    hit = call(t, "search", query="frobnicate")["hits"][0]
    assert hit["cite"] == f"http://127.0.0.1:8080/content/alpha/{hit['path']}"


HOSTILE = [  # (tool, arguments, a word the one-line message must hold)
    ("read", {"archive": "alpha", "path": "../../../../etc/passwd"}, "no entry"),
    ("read", {"archive": "../alpha", "path": "guide/intro.html"}, "no archive named"),
    ("read", {"archive": "/etc", "path": "passwd"}, "no archive named"),
    ("read", {"archive": "alpha", "path": "logo.png"}, "image/png, not text"),
    ("read", {"archive": "alpha", "path": "guide/intro.html", "max_chars": 10**12}, "max_chars must be between"),
    ("read", {"archive": "alpha", "path": "guide/intro.html", "offset": -1}, "offset must be between"),
    ("read", {"archive": "alpha", "path": "x" * 100_000}, "longer than"),
    ("read", {"archive": "alpha", "path": "bad\udc80path"}, "not valid UTF-8"),
    ("read", {"archive": "alpha", "path": "nul\0"}, "NUL"),
    ("search", {"query": "zorblax", "limit": 10**9}, "limit must be between"),
    ("search", {"query": "zorblax", "offset": 10**9}, "offset must be between"),
    ("search", {"query": "   "}, "query is empty"),
    ("search", {"query": "q" * 5000}, "longer than"),
    ("search", {"query": "\udcff"}, "not valid UTF-8"),
    ("search", {"query": "zorblax", "archives": ["gamma"]}, "no full-text index"),
    ("search", {"query": "zorblax", "archives": ["nowhere"]}, "no archive named 'nowhere'"),
    ("search", {"query": "zorblax", "archives": "alpha"}, "must be a list"),
    ("suggest", {"query": "zorblax", "limit": 0}, "limit must be between"),
    ("random", {"archive": "nowhere"}, "no archive named"),
    ("links", {"archive": "alpha", "path": "../beta.zim"}, "no entry"),
    ("links", {"archive": "alpha", "path": "guide/intro.html", "limit": 10**6}, "limit must be between"),
]


@pytest.mark.parametrize("name,args,word", HOSTILE, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(HOSTILE)])
def test_hostile_input_direct(tools: Tools, name: str, args: dict[str, Any], word: str) -> None:
    with pytest.raises(ToolInputError) as info:
        getattr(tools, name)(**args)
    message = str(info.value)
    assert word in message and "\n" not in message


# -- through the SDK's client -----------------------------------------------------------------

def _stdio(zims: dict[str, Path], *extra: str) -> StdioServerParameters:
    kw = child_python()
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "libzim", "mcp", *map(str, zims.values()), *extra],
                                 cwd=str(kw["cwd"]), env=kw["env"])


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


SUCCESS = [
    ("archives", {}),
    ("search", {"query": "zorblax", "limit": 5}),
    ("read", {"archive": "alpha", "path": "guide/intro.html"}),
    ("read", {"archive": "alpha", "path": "long.html", "section": "Part 3"}),
    ("suggest", {"query": "Page"}),
    ("random", {"archive": "beta"}),
    ("links", {"archive": "alpha", "path": "guide/intro.html"}),
]


async def _session_checks(client: Client, tools: Tools) -> None:
    listed = await client.list_tools()
    names = {t.name for t in listed.tools}
    assert names == {"search", "read", "suggest", "archives", "random", "links"}
    for t in listed.tools:
        assert t.description and len(t.description) < 200
    for name, args in SUCCESS:  # the wire answer is the tool's own answer
        result = await client.call_tool(name, args)
        assert not result.is_error, _text(result)
        if name != "random":
            assert json.loads(_text(result)) == json.loads(getattr(tools, name)(**args))
    for name, args, word in HOSTILE:
        if any(isinstance(v, str) and ("\udc80" in v or "\udcff" in v) for v in args.values()):
            continue  # lone surrogates cannot be sent as JSON text: test_stdio_invalid_utf8 sends bytes
        result = await client.call_tool(name, args)
        # a wrong type is refused by the SDK's own schema check, which names the parameter
        expect = "archives" if word == "must be a list" else word
        assert result.is_error and expect in _text(result), (name, args, _text(result))
    for name, args in [("search", {"query": 5}), ("read", {"archive": "alpha", "path": ["x"]}),
                       ("search", {"query": "zorblax", "limit": "many"}), ("read", {"archive": "alpha"}),
                       ("nonexistent", {})]:
        result = await client.call_tool(name, args)
        assert result.is_error, (name, args)
        assert "Traceback" not in _text(result)


async def _concurrent_equals_sequential(client: Client) -> None:
    calls = [("search", {"query": q}) for q in ("zorblax", "quorum", "frobnicate", "plinth")] + [
        ("read", {"archive": "alpha", "path": p}) for p in ("guide/intro.html", "long.html", "ref/api.html")] + [
        ("suggest", {"query": "Page"})]
    assert len(calls) == 8
    sequential = [_text(await client.call_tool(n, a)) for n, a in calls]
    results: list[str | None] = [None] * len(calls)

    async def one(i: int) -> None:
        results[i] = _text(await client.call_tool(*calls[i]))

    for _ in range(3):
        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(one, i)
        assert results == sequential


def test_stdio_session(zims: dict[str, Path], tools: Tools) -> None:
    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(_stdio(zims)) as client:
                assert client.protocol_version  # initialized (a discover or the initialize handshake)
                assert client.instructions and "ZIM" in client.instructions
                assert client.server_info is None or client.server_info.name == "zim"
                await _session_checks(client, tools)
                await _concurrent_equals_sequential(client)
    anyio.run(main)


def test_stdio_invalid_utf8(zims: dict[str, Path]) -> None:
    """Bytes that are not UTF-8 on the wire: the server answers the next request."""
    kw = child_python()
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "mcp", str(zims["alpha"])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=kw["cwd"], env=kw["env"])
    try:
        def send(obj: dict[str, Any] | bytes) -> None:
            assert proc.stdin is not None
            proc.stdin.write(obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n")
            proc.stdin.flush()

        def answer(wanted: int) -> dict[str, Any]:
            assert proc.stdout is not None
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, "the server closed its output"
                msg = json.loads(line)
                if msg.get("id") == wanted:
                    return msg
            raise AssertionError("no answer in time")

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}})
        assert "result" in answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":'
             b'{"query":"\xff\xfe zorblax"}}}\n')
        send(b"\xc3\x28 not json at all\n")
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "frobnicate"}}})
        out = answer(3)
        hits = json.loads(out["result"]["content"][0]["text"])["hits"]
        assert sorted(h["path"] for h in hits) == ["guide/intro.html", "ref/api.html"]
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _http_server(zims: dict[str, Path], *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    kw = child_python()
    proc = subprocess.Popen([sys.executable, "-m", "libzim", "mcp", *map(str, zims.values()), "--http",
                             "--address", "127.0.0.1", "--port", str(port), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=kw["cwd"], env=kw["env"])
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"zim mcp --http exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("zim mcp --http did not listen in time")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def test_http_session(zims: dict[str, Path], tools: Tools) -> None:
    proc, url = _http_server(zims)
    try:
        async def main() -> None:
            with anyio.fail_after(TIMEOUT):
                async with Client(url) as client:
                    await _session_checks(client, tools)
                    await _concurrent_equals_sequential(client)
        anyio.run(main)
    finally:
        _stop(proc)


def test_http_bearer_token(zims: dict[str, Path]) -> None:
    proc, url = _http_server(zims, "--token", "s3cret")
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        for auth in (None, "Bearer wrong", "Basic s3cret", "Bearer s3cret2"):
            h = dict(headers, **({"authorization": auth} if auth else {}))
            r = httpx2.post(url, json=init, headers=h, timeout=10)
            assert r.status_code == 401, auth

        async def main() -> None:
            with anyio.fail_after(TIMEOUT):
                from mcp.client.streamable_http import streamable_http_client
                async with httpx2.AsyncClient(headers={"authorization": "Bearer s3cret"}, timeout=30) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        out = await client.call_tool("search", {"query": "frobnicate"})
                        assert sorted(h["path"] for h in json.loads(_text(out))["hits"]) == ["guide/intro.html", "ref/api.html"]
        anyio.run(main)
    finally:
        _stop(proc)


def test_http_needs_token_off_loopback(zims: dict[str, Path]) -> None:
    """Any address but loopback needs a token: refused before listening (tests never listen elsewhere)."""
    kw = child_python()
    env = {k: v for k, v in kw["env"].items() if k != "ZIM_MCP_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "libzim", "mcp", str(zims["alpha"]), "--http",
                           "--address", "0.0.0.0", "--port", "1"], capture_output=True, text=True,
                          cwd=kw["cwd"], env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "bearer token" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_errors(zims: dict[str, Path], tmp_path: Path) -> None:
    kw = child_python()
    proc = subprocess.run([sys.executable, "-m", "libzim", "mcp", str(tmp_path / "none.zim")], capture_output=True,
                          text=True, cwd=kw["cwd"], env=kw["env"], timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and "no such file" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_archives_pages(tools: Tools) -> None:
    first = call(tools, "archives", limit=2)
    assert first["total"] == 3 and [r["name"] for r in first["archives"]] == ["alpha", "beta"]
    assert first["next_offset"] == 2
    rest = call(tools, "archives", offset=2, limit=2)
    assert [r["name"] for r in rest["archives"]] == ["gamma"] and rest["next_offset"] is None
    with pytest.raises(ToolInputError):
        tools.archives(limit=101)


def test_library_file_of_many_books_opens_on_demand(tmp_path: Path) -> None:
    # zim mcp --library on 300 books (tools/library_books.py: 20 written archives,
    # copied with their own ids) with 8 archives kept open: the archives tool pages
    # without opening any; reading and searching books one after another stays in bound.
    import library_books

    lib = library_books.build(300, 20, tmp_path / "many")

    async def main() -> None:
        kw = child_python(XDG_CACHE_HOME=str(tmp_path / "xdg"))
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "libzim", "mcp", "--library", str(lib), "--archive-cache", "8",
                                             "--searcher-cache", "4", "--suggestion-cache", "4"],
                                       cwd=str(kw["cwd"]), env=kw["env"])
        with anyio.fail_after(TIMEOUT * 4):
            async with Client(params) as client:
                seen, offset = [], 0
                for _ in range(10):
                    page = json.loads(_text(await client.call_tool("archives", {"offset": offset})))
                    assert page["total"] == 300 and len(page["archives"]) <= 100
                    seen += [r["name"] for r in page["archives"]]
                    if page["next_offset"] is None:
                        break
                    offset = page["next_offset"]
                assert seen == [f"book{i:05d}" for i in range(300)]
                for i in range(0, 300, 7):
                    word = library_books.base_word(i % 20)
                    found = json.loads(_text(await client.call_tool(
                        "search", {"query": word, "archives": [f"book{i:05d}"], "limit": 3})))
                    assert found["total"] == 40 and {h["archive"] for h in found["hits"]} == {f"book{i:05d}"}
                    text = json.loads(_text(await client.call_tool(
                        "read", {"archive": f"book{i:05d}", "path": "a5.html"})))["text"]
                    assert f"{word} shared text number 5 of base {i % 20}" in text
                too_many = await client.call_tool("search", {"query": "shared"})
                assert too_many.is_error and "at most 4 book" in _text(too_many)
    anyio.run(main)
