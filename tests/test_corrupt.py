"""The deliberately corrupted archives of the test suite: never a crash.

Each file is walked in its own subprocess (open, check, validate, every entry,
every item's content), so a segfault or abort in libzim or in the extension is
reported as this file's failure instead of killing pytest.

The expected outcome per file is data, taken from ../shared/README.md ("Measured
with Debian's libzim 8.1.1"), which describes nons/. Where withns/ differs the
difference was measured with a separate reader over the same libzim 8.1.1
(Debian's python3-libzim 2.1.0 and a C++ program), not with this binding:
  * withns/outofbounds_titleptrpos fails on open ("Title index table outside
    (or not fully inside) ZIM file."), it does not open with check() false;
  * withns/offset_in_cluster opens (check() false, 4 of 17 contents fail),
    where nons/offset_in_cluster fails on open;
  * withns/outofbounds_first_clusterptr: 13 of 17 contents fail (nons: 11 of 16).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import SUITE, child_python, suite_data

# Every test here reads the shared invalid.*.zim files; test_local_archives.py
# has the same kinds of defect made from the local small archive.
pytestmark = suite_data

OPEN_FAILS = "fails on open"
CHECK_FALSE = "opens, check() is false"
CONTENT_FAILS = "opens, some contents fail"

_README_NONS = {
    "bad_mimetype_in_dirent": (CHECK_FALSE, None),
    "bad_mimetype_list": (OPEN_FAILS, None),
    "invalid_checksumpos": (OPEN_FAILS, None),
    "invalid_mimelistpos": (OPEN_FAILS, None),
    "nonsorted_dirent_table": (OPEN_FAILS, None),
    "nonsorted_title_index": (CHECK_FALSE, None),
    "offset_in_cluster": (OPEN_FAILS, None),
    "outofbounds_clusterptrpos": (OPEN_FAILS, None),
    "outofbounds_first_clusterptr": (CONTENT_FAILS, (11, 16)),
    "outofbounds_first_direntptr": (OPEN_FAILS, None),
    "outofbounds_first_title_entry": (CHECK_FALSE, None),
    "outofbounds_last_direntptr": (OPEN_FAILS, None),
    "outofbounds_last_title_entry": (CHECK_FALSE, None),
    "outofbounds_titleptrpos": (CHECK_FALSE, None),
    "outofbounds_urlptrpos": (OPEN_FAILS, None),
    "smaller_than_header": (OPEN_FAILS, None),
}
_WITHNS = dict(_README_NONS)
_WITHNS.update({
    "outofbounds_titleptrpos": (OPEN_FAILS, None),
    "offset_in_cluster": (CONTENT_FAILS, (4, 17)),
    "outofbounds_first_clusterptr": (CONTENT_FAILS, (13, 17)),
})
EXPECTED = {"nons": _README_NONS, "withns": _WITHNS}

CASES = [(scheme, defect) for scheme in ("nons", "withns") for defect in sorted(EXPECTED[scheme])]

WALKER = r"""
import json, sys
import libzim
from libzim.reader import Archive

path = sys.argv[1]
out = {"errors": []}

def record(where, exc):
    out["errors"].append({
        "where": where,
        "type": type(exc).__name__,
        "zim": isinstance(exc, libzim.ZimError),
        "msg": exc.args[0] if exc.args and isinstance(exc.args[0], str) else repr(exc.args),
    })

try:
    a = Archive(path)
except Exception as exc:
    record("open", exc)
    out["opened"] = False
    print(json.dumps(out))
    sys.exit(0)
out["opened"] = True
out["all_entry_count"] = a.all_entry_count
for name in ("check", "validate"):
    try:
        out[name] = getattr(a, name)()
    except Exception as exc:
        record(name, exc)
        out[name] = None
content_failures = 0
for i in range(a.all_entry_count):
    try:
        entry = a._get_entry_by_id(i)
        entry.path, entry.title
        if entry.is_redirect:
            entry.get_redirect_entry()
    except Exception as exc:
        record(f"entry {i}", exc)
        content_failures += 1
        continue
    try:
        item = entry.get_item()
        item.mimetype
        data = bytes(item.content)
        if len(data) != item.size:
            raise AssertionError(f"entry {i}: {len(data)} bytes read, size says {item.size}")
    except Exception as exc:
        record(f"content {i}", exc)
        content_failures += 1
out["content_failures"] = content_failures
for name in ("iter_by_path", "iter_by_title", "iter_efficient"):
    try:
        out[name] = len(list(getattr(a, name)()))
    except Exception as exc:
        record(name, exc)
a.close()
print(json.dumps(out))
"""


def test_every_invalid_file_has_an_expectation():
    for scheme in ("nons", "withns"):
        on_disk = {p.name[len("invalid."):-len(".zim")] for p in (SUITE / scheme).glob("invalid.*.zim")}
        assert on_disk == set(EXPECTED[scheme]), scheme


def walk(path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", WALKER, str(path)],
        capture_output=True, text=True, errors="replace", timeout=60, **child_python(PYTHONFAULTHANDLER="1"),
    )
    assert proc.returncode == 0, (
        f"walking {path} ended with exit code {proc.returncode} (crash?)\n"
        f"stderr (tail):\n{proc.stderr[-3000:]}"
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no result from walking {path}; stderr:\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1])


def assert_clear_errors(result: dict, path) -> None:
    """Every error the walk met is a libzim.ZimError with one line that names the file."""
    for err in result["errors"]:
        assert err["zim"], f"{err['where']}: {err['type']} is not a libzim.ZimError: {err['msg']!r}"
        msg = err["msg"]
        assert "\n" not in msg and "\r" not in msg, f"{err['where']}: multi-line message {msg!r}"
        assert msg.startswith(str(path)), f"{err['where']}: message does not name the file: {msg!r}"
        assert len(msg.strip()) > len(str(path)) + 2, f"{err['where']}: empty message {msg!r}"


@pytest.mark.parametrize("scheme,defect", CASES, ids=[f"{s}-{d}" for s, d in CASES])
def test_invalid_archive(scheme, defect):
    path = SUITE / scheme / f"invalid.{defect}.zim"
    outcome, counts = EXPECTED[scheme][defect]
    result = walk(path)

    assert_clear_errors(result, path)

    if outcome == OPEN_FAILS:
        assert result["opened"] is False, f"{path.name} opened; README says it fails on open"
        (err,) = result["errors"]
        assert err["type"] == "ArchiveError", err
        return

    assert result["opened"] is True, (
        f"{path.name} failed on open but libzim 8.1.1 opens it ({outcome}): {result['errors']}"
    )
    # Every file here has been edited after its checksum was written.
    assert result["check"] is False, result
    assert result["validate"], f"validate() found nothing wrong in {path.name}"
    if outcome == CHECK_FALSE:
        return
    failed, total = counts
    assert result["all_entry_count"] == total
    assert result["content_failures"] == failed, result["errors"]
