"""The ``zim`` command line (libzim/cli/), run as ``python -m libzim`` in a subprocess.

Expected values come from the shared suite's documented facts (../shared/README.md)
or from the library API called in this process, never from the CLI itself.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import corpus
import local_archives
from conftest import HAVE_SUITE, SUITE, child_python, per_libzim, suite_data
from libzim.reader import Archive

NONS = SUITE / "nons"
WITHNS = SUITE / "withns"
WIKIBOOKS = NONS / "wikibooks_be_all_nopic_2017-02.zim"
WIKIBOOKS_SPLIT = NONS / "wikibooks_be_all_nopic_2017-02_splitted.zim"
# Built from this repository (local_archives.py); the small one has the shared
# small.zim's facts used here (main.html titled "Test ZIM file", a favicon.png,
# no full-text index).
LOCAL = local_archives.local()
SMALL = LOCAL.small.path
MULTI = LOCAL.multi.path
BAD_MIMETYPE = NONS / "invalid.bad_mimetype_in_dirent.zim"

SUBCOMMANDS = ("info", "search", "suggest", "get", "check", "bench", "demo")
INVALID = sorted(LOCAL.corrupt.values()) + [
    pytest.param(p, marks=suite_data) for p in sorted(p for d in (NONS, WITHNS) for p in d.glob("invalid.*.zim"))]
if not HAVE_SUITE:  # a placeholder, so that the skipped shared cases are counted
    INVALID.append(pytest.param(NONS / "invalid.*.zim", marks=suite_data))


def _child() -> dict:
    """cwd= and env= for the CLI process, without the variables that change its output."""
    kw = child_python()
    kw["env"].pop("NO_COLOR", None)
    kw["env"].pop("ZIM_DEBUG", None)
    return kw


def zim(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the CLI; stdout stays bytes (``get`` is binary), stderr is text."""
    proc = subprocess.run(
        [sys.executable, "-m", "libzim", *map(str, args)],
        capture_output=True,
        **_child(),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    return proc


def zim_json(*args) -> dict:
    proc = zim(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.decode("utf-8"))


def assert_one_line_error(proc: subprocess.CompletedProcess, *, code: int = 1, names: str | None = None) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    options = proc.args[: proc.args.index("--")] if "--" in proc.args else proc.args
    if "--json" in options:  # the error line is a JSON object; checked as its text form
        lines[0] = "zim: error: " + json_error(lines[0])["message"]
    assert lines[0].startswith("zim: error: "), lines[0]
    if names is not None:
        assert names in lines[0], lines[0]
    return lines[0]


def json_error(line: str) -> dict:
    """The error of a --json run: {"error": {"type", "message", "file"}} and nothing else."""
    obj = json.loads(line)
    assert list(obj) == ["error"] and sorted(obj["error"]) == ["file", "message", "type"], obj
    error = obj["error"]
    assert isinstance(error["type"], str) and error["type"].isidentifier(), error
    assert isinstance(error["message"], str) and "\n" not in error["message"], error
    assert error["file"] is None or isinstance(error["file"], str), error
    return error


# ----------------------------------------------------------------------------- fixtures

PAGES = {
    "index.html": ("CLI test corpus", "Welcome. See the quokka page and the zebra page."),
    "quokka.html": ("Quokka facts", "The quokka is a small marsupial. Every quokka smiles; quokkas live on Rottnest."),
    "zebra.html": ("Zebra stripes", "A zebra has stripes. Each zebra pattern is unique, like a fingerprint."),
    "both.html": ("Animals compared", "A quokka is not a zebra, and a zebra is no quokka."),
    "other.html": ("Unrelated page", "Nothing about those animals here: only teapots and kettles."),
}


@pytest.fixture(scope="session")
def ft_zim(tmp_path_factory) -> Path:
    """A tiny ZIM with a full-text index, built with zimwriterfs from pages written here."""
    root = tmp_path_factory.mktemp("cli-corpus")
    src = root / "html"
    src.mkdir()
    for name, (title, body) in PAGES.items():
        (src / name).write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body><h1>{title}</h1><p>{body}</p></body></html>",
            encoding="utf-8",
        )
    out = corpus.build_zim_from_dir(src, root / "cli-test.zim", title="CLI test corpus", fulltext=True)
    assert Archive(out).has_fulltext_index
    return out


# ----------------------------------------------------------------------------- usage


def test_top_level_help_lists_every_subcommand():
    proc = zim("--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    for cmd in SUBCOMMANDS:
        assert cmd in text


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_subcommand_help(cmd):
    proc = zim(cmd, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith(f"usage: zim {cmd}")
    assert proc.stderr == ""


def test_no_subcommand_is_a_usage_error():
    proc = zim()
    assert proc.returncode == 2
    assert "usage: zim" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [("info",), ("get", SMALL), ("search", SMALL, "q", "--limit", "x"), ("info", SMALL, "--bogus")],
)
def test_usage_errors_are_one_line_exit_2(args):
    assert_one_line_error(zim(*args), code=2)


# ----------------------------------------------------------------------------- info


@pytest.mark.parametrize("scheme", ["nons", "withns"])
def test_info_json_small(scheme):
    path = SUITE / scheme / "small.zim"
    info = zim_json("info", path)
    a = Archive(path)
    # Facts from the shared README.
    if scheme == "nons":
        assert info["counts"]["all"] == 16
        assert info["has_fulltext_index"] is False
        assert info["has_new_namespace_scheme"] is True
    else:
        assert info["has_new_namespace_scheme"] is False
    assert info["counts"]["article"] == 1
    me = info["main_entry"]
    assert me["target_path"].split("/")[-1] == "main.html"
    assert me["target_title"] == "Test ZIM file"
    assert info["has_title_index"] is True
    assert info["has_checksum"] is True
    assert info["is_multipart"] is False
    # Everything else agrees with the library.
    assert info["filename"] == str(path)
    assert info["size"] == path.stat().st_size == a.filesize
    assert info["uuid"] == str(a.uuid)
    assert info["checksum"] == a.checksum and len(a.checksum) == 32
    assert info["counts"] == {
        "all": a.all_entry_count,
        "entry": a.entry_count,
        "article": a.article_count,
        "media": a.media_count,
    }
    assert info["has_fulltext_index"] == a.has_fulltext_index
    with pytest.warns(DeprecationWarning, match="use get_illustration_infos"):
        assert info["illustration_sizes"] == sorted(a.get_illustration_sizes())
    assert sorted(info["metadata"]) == sorted(a.metadata_keys)
    for key in a.metadata_keys:
        raw = a.get_metadata(key)
        try:
            expected = raw.decode("utf-8")
        except UnicodeDecodeError:
            expected = {"bytes": len(raw)}
        assert info["metadata"][key] == expected, key


def test_info_text_small():
    proc = zim("info", SMALL)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "main.html" in text and "Test ZIM file" in text
    assert f"{local_archives.header(SMALL.read_bytes())['entryCount']} in all" in text
    assert "<binary, " in text  # the illustration is not dumped as text
    assert Archive(SMALL).checksum in text


def test_info_local_split_equals_unsplit():
    whole = zim_json("info", MULTI)
    split = zim_json("info", LOCAL.split)
    assert whole["is_multipart"] is False and split["is_multipart"] is True
    assert whole["has_fulltext_index"] is False
    assert whole["metadata"]["Language"] == LOCAL.multi.metadata["Language"]
    assert whole["counts"]["all"] == local_archives.header(MULTI.read_bytes())["entryCount"]
    for key in ("uuid", "counts", "checksum", "main_entry", "metadata", "has_fulltext_index"):
        assert whole[key] == split[key], key
    assert whole["main_entry"]["target_title"] == LOCAL.multi.items["index.html"][0]


@suite_data
def test_info_wikibooks_split_equals_unsplit():
    whole = zim_json("info", WIKIBOOKS)
    split = zim_json("info", WIKIBOOKS_SPLIT)
    assert whole["is_multipart"] is False and split["is_multipart"] is True
    a = Archive(WIKIBOOKS)
    assert whole["counts"]["article"] == a.article_count == 66  # "~66 articles"
    assert whole["has_fulltext_index"] is False
    assert whole["metadata"]["Language"] == "bel"
    for key in ("uuid", "counts", "checksum", "main_entry", "metadata", "has_fulltext_index"):
        assert whole[key] == split[key], key
    assert whole["main_entry"]["target_title"] == a.main_entry.get_item().title


@pytest.mark.parametrize("path", INVALID + [pytest.param(NONS / "small.zim.embedded.multi", marks=suite_data)],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_info_invalid_archives(path):
    proc = zim("info", path, "--json")
    if proc.returncode == 0:  # libzim accepts a few of them; then the output must be sound
        assert json.loads(proc.stdout)["filename"] == str(path)
    else:
        assert_one_line_error(proc, names=str(path))
        if proc.stdout:  # opened, but some fields were unreadable: reported, not hidden
            report = json.loads(proc.stdout)
            assert report["filename"] == str(path) and report["errors"]


def test_info_partly_unreadable_archive():
    # Opens, but the media count (read from the M/Counter cluster) and metadata are unreadable.
    path = LOCAL.corrupt["outofbounds_first_clusterptr"]
    proc = zim("info", path)
    line = assert_one_line_error(proc, names=str(path))
    try:
        Archive(path)
    except Exception:  # noqa: BLE001
        assert proc.stdout == b""  # refused on open: nothing to show
        return
    assert "cannot read" in line
    text = proc.stdout.decode()
    assert "<unreadable" in text and "main.html" in text  # the readable fields are still shown


@pytest.mark.parametrize("path", ["/nonexistent/dir/x.zim", "/"])
def test_info_unopenable(path):
    assert_one_line_error(zim("info", path), names=path)


# ----------------------------------------------------------------------------- get


@pytest.mark.parametrize(
    "archive,path",
    [
        (SMALL, "main.html"),
        (SMALL, "favicon.png"),  # binary
        (MULTI, "page005.html"),  # Cyrillic title
        (LOCAL.split, "big.css"),  # largest item, from the multi-part archive
        pytest.param(WITHNS / "small.zim", "A/main.html", marks=suite_data),
        pytest.param(WIKIBOOKS, "Першая_старонка.html", marks=suite_data),  # non-ASCII path
        pytest.param(WIKIBOOKS_SPLIT, "j/head.js", marks=suite_data),  # largest item, multi-part
    ],
)
def test_get_bytes_equal_library(archive, path):
    proc = zim("get", archive, path)
    assert proc.returncode == 0, proc.stderr
    expected = bytes(Archive(archive).get_entry_by_path(path).get_item().content)
    if archive in (SMALL, MULTI, LOCAL.split):  # and what was written
        assert expected == (LOCAL.small if archive == SMALL else LOCAL.multi).items[path][2]
    assert len(expected) > 0
    assert proc.stdout == expected
    assert proc.stderr == ""


def test_get_follows_local_redirects():
    title, target = LOCAL.multi.redirects["alias007.html"]
    proc = zim("get", MULTI, "alias007.html")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == LOCAL.multi.items[target][2]


@suite_data
def test_get_follows_redirects():
    a = Archive(WIKIBOOKS)
    entry = a.get_entry_by_path("Main_Page.html")
    assert entry.is_redirect
    target = entry.get_redirect_entry()
    proc = zim("get", WIKIBOOKS, "Main_Page.html")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == bytes(target.get_item().content)


def test_get_main_entry_by_its_own_path():
    a = Archive(SMALL)
    assert a.main_entry.path == "mainPage" and not a.has_entry_by_path("mainPage")
    proc = zim("get", SMALL, "mainPage")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == bytes(a.get_entry_by_path("main.html").get_item().content)


def test_get_to_file(tmp_path):
    out = tmp_path / "favicon.png"
    proc = zim("get", SMALL, "favicon.png", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert out.read_bytes() == bytes(Archive(SMALL).get_entry_by_path("favicon.png").get_item().content)


def test_get_missing_path():
    proc = zim("get", SMALL, "no/such/entry.html")
    line = assert_one_line_error(proc, names=str(SMALL))
    assert "no/such/entry.html" in line
    assert proc.stdout == b""


def test_get_unwritable_output():
    assert_one_line_error(zim("get", SMALL, "main.html", "-o", "/nonexistent/dir/out.html"), names="/nonexistent/dir/out.html")


def test_get_unreadable_content_is_one_line():
    # Opens, but most items point outside the file (libzim prints an assertion dump).
    # Whether the binding refuses it on open or on reading content,
    # `get` must fail with one line.
    path = LOCAL.corrupt["outofbounds_first_clusterptr"]
    bad = "main.html"
    try:
        a = Archive(path)
    except Exception:  # noqa: BLE001
        pass
    else:
        bad = None
        for entry in a.iter_by_path():
            if entry.is_redirect:
                continue
            try:
                bytes(entry.get_item().content)
            except Exception:  # noqa: BLE001
                bad = entry.path
                break
        assert bad is not None
    assert_one_line_error(zim("get", path, bad), names=str(path))


def test_get_broken_pipe_is_quiet():
    proc = subprocess.Popen(
        [sys.executable, "-m", "libzim", "get", LOCAL.split, "big.css"],  # more than a pipe holds
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **_child(),
    )
    assert proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=60)
    assert err == ""
    assert rc in (0, 141)


# ----------------------------------------------------------------------------- check


@pytest.mark.parametrize("scheme", ["nons", "withns"])
def test_check_small_passes(scheme):
    proc = zim("check", SUITE / scheme / "small.zim")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "FAILED" not in text
    assert "passed" in text


def test_check_json_small():
    from libzim.reader import INTEGRITY_CHECKS

    report = zim_json("check", SMALL)
    assert report["ok"] is True
    # Issue 39: the structural checks, then the checksum once, last.
    assert [c["name"] for c in report["checks"]] == [*(n for n in INTEGRITY_CHECKS if n != "checksum"), "checksum"]
    assert len(report["checks"]) == len(INTEGRITY_CHECKS) == 6
    assert all(c["ok"] for c in report["checks"])
    assert report["checks"][-1]["message"] == f"checksum {Archive(SMALL).checksum} matches"
    text = zim("check", SMALL).stdout.decode().splitlines()
    assert text[0].endswith("(5 integrity checks, then the checksum)")
    assert text[-2].split()[0] == "checksum" and text[-1] == "All 6 checks passed."


def test_check_bad_checksum_fails():
    # Only the checksum was changed: that check fails, and check() with it.
    path = LOCAL.corrupt["bad_checksum"]
    proc = zim("check", path, "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is False
    assert {n for n, c in by_name.items() if not c["ok"]} == {"checksum"}
    assert by_name["checksum"]["message"] == "Checksum doesn't match"
    text = zim("check", path)
    assert text.returncode == 1 and "FAILED" in text.stdout.decode() and text.stderr == ""


@suite_data
def test_check_bad_mimetype_fails():
    proc = zim("check", BAD_MIMETYPE, "--json")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is False
    expected_failed = set(Archive(BAD_MIMETYPE).validate())
    # libzim 9.2.3's DIRENT_MIMETYPES check passes this file (see test_validate_bad_archive).
    assert expected_failed == per_libzim(
        libzim8={"checksum", "dirent_mimetypes"}, libzim9={"checksum"}
    )
    assert {n for n, c in by_name.items() if not c["ok"]} == expected_failed
    assert by_name["checksum"]["message"] == "Checksum doesn't match"
    if "dirent_mimetypes" in expected_failed:
        assert "MIME" in by_name["dirent_mimetypes"]["message"]
    assert Archive(BAD_MIMETYPE).check() is False
    # Text mode: exit 1, failures named, libzim's own prints not leaked as extra stderr lines.
    text = zim("check", BAD_MIMETYPE)
    assert text.returncode == 1
    out = text.stdout.decode()
    assert "FAILED" in out and all(name in out for name in expected_failed)
    assert text.stderr == ""


@pytest.mark.parametrize("path", INVALID, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_check_every_invalid_archive_fails(path):
    proc = zim("check", path)
    want = 1
    if path.parent == LOCAL.dir / "invalid":
        # Unless the running libzim's checks all pass it (and its checksum was rewritten).
        defect = path.name[len("invalid."):-len(".zim")]
        _, outcome, _ = local_archives.CORRUPTIONS[defect]
        if outcome != local_archives.OPEN_FAILS and defect != "bad_checksum" and not per_libzim(
                libzim8=local_archives.expected_validate(defect, 8),
                libzim9=local_archives.expected_validate(defect, 9)):
            want = 0
    assert proc.returncode == want, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    if proc.stderr:
        assert_one_line_error(proc, names=str(path))


# ----------------------------------------------------------------------------- search


def test_search_without_fulltext_index_is_an_error():
    line = assert_one_line_error(zim("search", SMALL, "test"), names=str(SMALL))
    assert "full-text index" in line


def test_search_none_indexed_among_several():
    line = assert_one_line_error(zim("search", SMALL, MULTI, "test"))
    assert "full-text index" in line and str(SMALL) in line and str(MULTI) in line


def test_search_json_matches_library(ft_zim):
    from libzim.search import Query, Searcher

    out = zim_json("search", ft_zim, "quokka")
    search = Searcher(Archive(ft_zim)).search(Query().set_query("quokka"))
    expected = list(search.get_results(0, 10))
    assert out["estimated_matches"] == search.get_estimated_matches()
    assert [(r["path"], r["title"], r["score"]) for r in out["results"]] == [
        (r.path, r.title, r.score) for r in expected
    ]
    paths = {r["path"] for r in out["results"]}
    assert {"quokka.html", "both.html"} <= paths
    assert "zebra.html" not in paths and "other.html" not in paths
    top = out["results"][0]
    assert top["archive"] == ft_zim.name and top["archive_path"] == str(ft_zim)
    assert all("<b>" in r["snippet"].lower() and "quokka" in r["snippet"].lower() for r in out["results"])


def test_search_limit_and_no_snippets(ft_zim):
    out = zim_json("search", ft_zim, "zebra", "--limit", "1", "--no-snippets")
    assert len(out["results"]) == 1
    assert "snippet" not in out["results"][0]
    assert out["estimated_matches"] >= 2


def test_search_text_output_is_plain_when_piped(ft_zim):
    proc = zim("search", ft_zim, "quokka")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "Quokka facts" in text and "quokka.html" in text
    assert "<b>" not in text and "\033[" not in text
    assert "quokka" in text.lower()


def test_search_across_archives_warns_about_unindexed(ft_zim):
    proc = zim("search", ft_zim, SMALL, "zebra", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "warning" in proc.stderr and str(SMALL) in proc.stderr
    out = json.loads(proc.stdout)
    assert out["archives"] == [str(ft_zim)] and out["not_searched"] == [str(SMALL)]
    assert {r["path"] for r in out["results"]} >= {"zebra.html", "both.html"}


def test_search_threads_prints_throughput(ft_zim):
    proc = zim("search", ft_zim, "quokka", "--threads", "2", "--repeat", "12", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["throughput"]["searches"] == 12
    assert out["throughput"]["threads"] == 2
    assert out["throughput"]["consistent"] is True
    assert "searches/s" in proc.stderr and "p50" in proc.stderr and "p95" in proc.stderr


def test_search_bad_query_is_one_line(ft_zim):
    # The binding refuses queries over 64 KiB.
    line = assert_one_line_error(zim("search", ft_zim, "quokka " * 10000))
    assert len(line) < 400


def test_search_empty_query_is_usage_error(ft_zim):
    assert_one_line_error(zim("search", ft_zim, "  "), code=2)


def _sigint_as_at_a_terminal() -> None:
    # A shell without job control starts background jobs with SIGINT ignored (POSIX), and
    # Python then installs no KeyboardInterrupt handler: a CI runner that starts the suite
    # with `&` would make Ctrl-C do nothing. A user's Ctrl-C comes with the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_search_ctrl_c_exits_130(ft_zim):
    proc = subprocess.Popen(
        [sys.executable, "-m", "libzim", "search", ft_zim, "quokka", "--threads", "2", "--repeat", "100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_sigint_as_at_a_terminal,
        **_child(),
    )
    # Text mode prints (and flushes) the results before the threaded loop starts.
    first = proc.stdout.readline()
    assert b"matches for 'quokka'" in first, (first, proc.stderr.read())
    time.sleep(0.3)
    assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err


# ----------------------------------------------------------------------------- suggest


def test_suggest_json_matches_library(ft_zim):
    from libzim.suggestion import SuggestionSearcher

    out = zim_json("suggest", ft_zim, "quokka")
    expected = list(SuggestionSearcher(Archive(ft_zim)).suggest("quokka").get_results(0, 10))
    assert [(r["path"], r["title"], r["snippet"]) for r in out["results"]] == [
        (r.path, r.title, r.snippet) for r in expected
    ]
    assert out["results"][0]["title"] == "Quokka facts"


def _titles_starting(path, variants: list[str]) -> list[str]:
    """The archive's own title list, filtered by the prefix's case variants in turn."""
    with Archive(path) as a:
        titles = [e.title for e in a.iter_by_title()]
    return [t for v in variants for t in titles if t.startswith(v)]


def test_suggest_mode(ft_zim):
    from libzim.suggestion import SuggestionSearcher

    def titles(*args):
        return [r["title"] for r in zim_json("suggest", ft_zim, *args)["results"]]

    with Archive(ft_zim) as a:
        index = {q: [r.title for r in SuggestionSearcher(a).suggest(q).get_results(0, 10)]
                 for q in ("facts", "quo")}
    assert index["facts"] == ["Quokka facts"]  # the index matches a word inside the title
    for mode in ([], ["--mode", "index"]):
        assert titles("facts", *mode) == index["facts"]
        assert titles("quo", *mode) == index["quo"]
    # titles: only those starting with "quo" as typed, capitalised or in upper case
    want = _titles_starting(ft_zim, ["quo", "Quo", "QUO"])
    assert want == ["Quokka facts"]
    assert titles("quo", "--mode", "titles") == want
    assert titles("facts", "--mode", "titles") == []
    # auto: fewer than 100 titles start with the query here, so the index answers
    assert titles("facts", "--mode", "auto") == index["facts"]
    proc = zim("suggest", ft_zim, "facts", "--mode", "titles")
    assert proc.returncode == 0 and b"No suggestions for 'facts'" in proc.stdout, proc.stderr


def test_suggest_bad_mode_is_a_usage_error(ft_zim):
    proc = zim("suggest", ft_zim, "quo", "--mode", "prefix")
    assert proc.returncode == 2 and "--mode: invalid choice: 'prefix'" in proc.stderr, proc.stderr
    assert proc.stdout == b""


def test_suggest_local_text():
    proc = zim("suggest", MULTI, "Старонка 005", "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    assert LOCAL.multi.items["page005.html"][0] in proc.stdout.decode("utf-8")


@pytest.mark.parametrize("command", ["suggest", "search"])
def test_limit_zero_is_a_usage_error(command):
    # Issue 31: `zim suggest -n 0` printed "No suggestions" for a query that has some.
    proc = zim(command, MULTI, "Старонка", "-n", "0")
    assert_one_line_error(proc, code=2)
    assert "--limit must be >= 1, not 0" in proc.stderr
    assert proc.stdout == b""


@suite_data
def test_suggest_wikibooks_text():
    proc = zim("suggest", WIKIBOOKS, "Першая", "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    assert "Першая старонка" in proc.stdout.decode("utf-8")


def test_suggest_invalid_archive():
    assert_one_line_error(zim("suggest", LOCAL.corrupt["smaller_than_header"], "x"), names="invalid.smaller_than_header.zim")


# ----------------------------------------------------------------------------- bench


def test_builtin_bench(ft_zim):
    out = zim_json("bench", ft_zim, "--quick", "--duration", "0.2")
    runs = out["runs"]
    assert {(r["threads"], r["snippets"]) for r in runs} == {(1, False), (2, False), (1, True), (2, True)}
    assert all(r["searches"] > 0 and r["searches_per_second"] > 0 and r["consistent"] for r in runs)
    assert out["archives"] == [str(ft_zim)]
    assert out["cluster_cache_mib"] == 64  # the throughput commands' default, not the library's 16


def test_bench_cluster_cache_option(ft_zim):
    out = zim_json("bench", ft_zim, "--quick", "--duration", "0.1", "--threads", "1", "--cluster-cache", "3")
    assert out["cluster_cache_mib"] == 3
    proc = zim("bench", ft_zim, "--quick", "--cluster-cache", "-1")
    assert proc.returncode == 2 and "--cluster-cache must be >= 0" in proc.stderr


def test_apply_cluster_cache_sets_the_process_budget():
    from libzim.cli.workers import apply_cluster_cache
    from libzim.reader import get_cluster_cache_max_size, set_cluster_cache_max_size

    before = get_cluster_cache_max_size()
    try:
        assert apply_cluster_cache(5) == "cluster cache: 5 MiB for the process (--cluster-cache)"
        assert get_cluster_cache_max_size() == 5 << 20
    finally:
        set_cluster_cache_max_size(before)


# ----------------------------------------------------------------------------- --json errors


def test_json_error_not_a_zim(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("These are notes, not a ZIM archive. " * 4)
    text = zim("info", path)
    proc = zim("info", path, "--json")
    assert proc.returncode == text.returncode == 1
    assert proc.stdout == b""
    error = json_error(proc.stderr)
    assert error == {"type": "ArchiveError", "file": str(path),
                     "message": f"{path}: not a ZIM archive: Invalid magic number"}
    assert text.stderr == f"zim: error: {error['message']}\n"  # the same words without --json


def test_json_error_missing_file(tmp_path):
    path = tmp_path / "absent.zim"
    proc = zim("check", path, "--json")
    assert proc.returncode == zim("check", path).returncode == 1
    error = json_error(proc.stderr)
    assert (error["type"], error["file"]) == ("ArchiveError", str(path))
    assert "No such file or directory" in error["message"]


def test_json_error_usage():
    proc = zim("info", "--json")  # ARCHIVE missing
    assert proc.returncode == zim("info").returncode == 2
    error = json_error(proc.stderr)
    assert error["type"] == "UsageError" and error["file"] is None
    assert error["message"].startswith("the following arguments are required: ARCHIVE")


def test_json_error_search_without_index():
    proc = zim("search", SMALL, "quokka", "--json")  # small.zim has no full-text index
    assert proc.returncode == 1
    error = json_error(proc.stderr)
    assert (error["type"], error["file"]) == ("SearchError", str(SMALL))
    assert "no full-text index" in error["message"]


def test_json_after_double_dash_is_not_the_option(tmp_path):
    path = tmp_path / "absent.zim"
    proc = zim("suggest", path, "--", "--json")  # "--json" is the query here
    assert_one_line_error(proc, names=str(path))
    assert proc.stderr.startswith("zim: error: ")


# ----------------------------------------------------------------------------- demo on any archive


def test_demo_on_an_archive_searches_its_titles(ft_zim):
    # Issue 31: an installed package could not run the demo at all; any indexed archive does.
    proc = zim("demo", ft_zim, "--threads", "2", "--duration", "0.2", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith(f"Archive: {ft_zim}\n")
    from libzim.cli.demo import queries_from_titles

    queries = queries_from_titles(Archive(ft_zim))
    titles = {" ".join(t.split()[:3]) for t, _ in PAGES.values()}
    assert queries and set(queries) <= titles and len(set(queries)) == len(queries)
    for q in queries:
        assert f"for {q!r}:" in out or f"for '{q}'" in out, (q, out)
    assert f"Throughput: the {len(queries)} queries above, top 2 with snippets" in out
    assert "RESULTS DIFFER" not in out and out.count(" searches in ") == 2


def test_demo_on_an_archive_with_given_queries(ft_zim):
    proc = zim("demo", ft_zim, "--query", "quokka", "-q", "zebra stripes", "--threads", "1", "--duration", "0.1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "Quokka facts" in out and "Zebra stripes" in out
    assert "Throughput: the 2 queries above" in out and out.count(" searches in ") == 1


def test_demo_on_an_archive_without_index_says_so():
    proc = zim("demo", SMALL)
    assert_one_line_error(proc, names=str(SMALL))
    assert "has no full-text index, which zim demo searches" in proc.stderr


def test_demo_help_says_where_it_runs():
    text = " ".join(zim("demo", "--help").stdout.decode().split())
    assert "[ARCHIVE]" in text
    assert "needs a libzim-c source checkout" in text and "installed libzim-c runs the demo on any ARCHIVE" in text


# ----------------------------------------------------------------------------- demo's throughput summary
# The lines under ``zim demo``'s throughput runs, from made-up runs and load readings:
# their shape and wording, never timings.


def fake_run(threads: int, count: int, wall: float, cpu: float):
    from libzim.cli.workers import Stats

    return Stats([wall * threads / count] * count, wall, threads, cpu)


def test_demo_summary_idle_machine():
    from libzim.cli.demo import throughput_summary

    one, two = fake_run(1, 1000, 2.0, 1.9), fake_run(2, 1900, 2.0, 3.8)
    assert throughput_summary([one, two], 0.5, 2) == [
        "speedup with 2 threads: 1.90x wall clock (the 2 threads got 1.90 CPUs of 2)",
        "CPU per search 1 thread: 1.90 ms, 2 threads: 2.00 ms",
        "load average 0.50 on 2 CPUs",
    ]


def test_demo_summary_high_load_but_the_threads_got_the_cpus():
    # Issue 31: 1.68x with 1.95 CPUs of 2 was called "busy" because the load average
    # (read before the runs) was high; the threads got the cores, so the speedup stands.
    from libzim.cli.demo import throughput_summary

    one, two = fake_run(1, 1000, 2.0, 1.98), fake_run(2, 1680, 2.0, 3.9)
    assert throughput_summary([one, two], 3.4, 2) == [
        "speedup with 2 threads: 1.68x wall clock (the 2 threads got 1.95 CPUs of 2)",
        "CPU per search 1 thread: 1.98 ms, 2 threads: 2.32 ms",
        "load average 3.40 on 2 CPUs",
    ]


def test_demo_summary_busy_machine_says_so():
    from libzim.cli.demo import throughput_summary

    one, two = fake_run(1, 1000, 2.0, 1.0), fake_run(2, 1010, 2.0, 1.01)
    for load in (3.25, 0.5, None):  # the CPUs the threads got decide, whatever the load average said
        lines = throughput_summary([one, two], load, 2)
        assert lines[0] == "speedup with 2 threads: 1.01x wall clock (the 2 threads got 0.51 CPUs of 2)"
        assert lines[1] == "CPU per search 1 thread: 1.00 ms, 2 threads: 1.00 ms"
        where = f"load average {load:.2f} on 2 CPUs" if load is not None else "load average unknown"
        assert lines[2] == (f"{where}: the machine is busy (the 2 threads got 0.51 CPUs of the 2 they could use), "
                            "so the wall-clock speedup is not meaningful; compare the CPU time per search")
        assert len(lines) == 3


def test_demo_summary_more_threads_than_cpus():
    from libzim.cli.demo import throughput_summary

    one, eight = fake_run(1, 1000, 2.0, 1.96), fake_run(8, 1900, 2.0, 3.8)  # 1.90 of the 2 CPUs: all it can use
    assert throughput_summary([one, eight], 1.0, 2)[2:] == ["load average 1.00 on 2 CPUs"]


def test_demo_summary_one_thread_and_no_load_average():
    from libzim.cli.demo import throughput_summary

    run = fake_run(1, 100, 1.0, 0.95)
    assert throughput_summary([run], None, 4) == ["load average unknown"]
    assert throughput_summary([run], 9.0, 4) == ["load average 9.00 on 4 CPUs"]
    starved = fake_run(1, 100, 1.0, 0.5)
    assert throughput_summary([starved], 9.0, 4) == [
        "load average 9.00 on 4 CPUs: the machine is busy (the thread got 0.50 of a CPU), so searches/s is below "
        "what an idle machine gives; compare the CPU time per search"]


def test_hammer_measures_thread_cpu_time():
    from libzim.cli.workers import hammer

    def spin(i: int) -> int:
        return sum(range(20000)) + i

    stats, seen = hammer(spin, 4, 2, count=200)
    assert stats.count == 200 and seen == {i: {sum(range(20000)) + i} for i in range(4)}
    assert stats.cpu > 0
    assert stats.cpu_per_call == stats.cpu / 200
    assert set(stats.as_dict()) >= {"cpu_seconds", "cpu_ms_per_search"}
    assert f"CPU {stats.cpu_per_call * 1000:.2f} ms per search" in stats.line()


@pytest.mark.parametrize("query", ["", "   "])
def test_suggest_refuses_an_empty_query_as_search_does(query):
    # Issue 39: zim suggest ARCHIVE "" exited 0 where zim search refuses it.
    for command in ("suggest", "search"):
        proc = zim(command, SMALL, query)
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr == "zim: error: empty query\n", (command, proc.stderr)


@pytest.mark.parametrize("command", ["search", "suggest"])
def test_swapped_arguments_are_named_as_such(command, tmp_path):
    # Issue 39: `zim search QUERY ARCHIVE` said only "cannot open: No such file or directory".
    proc = zim(command, "python", SMALL)
    assert proc.returncode == 2
    assert proc.stderr == (f"zim: error: python: no such archive; the archive comes first: zim {command} ARCHIVE QUERY "
                           f"({str(SMALL)!r} is a file: were the two swapped?)\n")
    # A missing archive with a query that is no file either: libzim's own words, naming the file.
    missing = tmp_path / "missing.zim"
    proc = zim(command, missing, "python")
    assert proc.returncode == 1 and proc.stderr == f"zim: error: {missing}: cannot open: No such file or directory\n"
