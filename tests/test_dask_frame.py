"""libzim.dask.read_archives: archives to a Dask DataFrame, and to Parquet on a
LocalCluster (2 worker processes, started and stopped here).

Expected rows come from what tests/local_archives.py wrote (paths, titles,
MIME types, bytes, metadata), the text of each page from its written HTML
where the page is one paragraph, and otherwise from a single-threaded read
with the plain API (Item.text).  Failures: a missing path and the local
corrupt archives, whose defects local_archives counts by hand.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from distributed import Client, LocalCluster

import dask
import libzim
from libzim import dask as libdask
from libzim.reader import Archive

import local_archives
from local_archives import CONTENT_FAILS, CORRUPTIONS, OPEN_FAILS, VALIDATE

COLUMNS = ["archive", "name", "uuid", "path", "title", "mimetype", "size", "text", "error"]


@pytest.fixture(scope="module")
def local():
    return local_archives.local()


def compute(ddf) -> pd.DataFrame:
    with dask.config.set(scheduler="sync"):
        return ddf.compute()


def html_items(written):
    return {p: v for p, v in written.items.items() if v[1] == "text/html"}


def expected_rows(written) -> list[tuple]:
    """The rows the writer's record says the archive holds: its HTML items,
    redirects excluded; text from the plain API, one thread."""
    path = str(written.path)
    archive = Archive(path)
    rows = []
    for p, (title, mimetype, content) in html_items(written).items():
        text = archive.get_entry_by_path(p).get_item().text
        m = re.fullmatch(rb".*<body><p>([^<]*)</p></body></html>", content)
        if m:  # a one-paragraph page: its text is the paragraph, as written
            assert text == m.group(1).decode()
        rows.append((path, written.metadata["Name"], str(archive.uuid), p, title, mimetype,
                     len(content), text, None))
    return sorted(rows)


def as_rows(df: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(None if pd.isna(v) else v for v in r)
                  for r in df[COLUMNS].itertuples(index=False, name=None))


def test_rows_are_the_written_html_articles(local):
    ddf = libdask.read_archives([local.multi.path, local.small.path])
    assert list(ddf.columns) == COLUMNS
    assert dict(ddf.dtypes) == {**{c: pd.StringDtype("pyarrow") for c in COLUMNS},
                                "size": pd.Int64Dtype()}
    df = compute(ddf)
    assert as_rows(df) == expected_rows(local.multi) + expected_rows(local.small)
    assert dict(df.dtypes) == dict(ddf.dtypes)


def test_threads_read_what_one_thread_reads(local):
    # Partitions of the same archives on 4 threads of one process share its
    # archive cache and read with the GIL released: the same rows as one thread.
    paths = [local.multi.path, local.small.path, local.split]
    ddf = libdask.read_archives(paths, partition_size=5, entries="all", html=True)
    assert ddf.npartitions > 8
    one = compute(ddf)
    libdask._opened.clear()
    with dask.config.set(scheduler="threads", num_workers=4):
        many = ddf.compute()
    cols = list(one.columns)
    assert sorted(many[cols].astype(str).itertuples(index=False, name=None)) == \
        sorted(one[cols].astype(str).itertuples(index=False, name=None))
    assert len(one) == len(local.multi.items) * 2 + len(local.small.items)


def test_partitions_are_ranges_in_cluster_order(local):
    path = str(local.multi.path)
    archive = Archive(path)
    n = archive.entry_count
    ddf = libdask.read_archives([path], partition_size=7, columns=["path"], text=False)
    assert ddf.npartitions == math.ceil(n / 7)
    parts = [compute(ddf.get_partition(i)) for i in range(ddf.npartitions)]
    assert all(len(p) <= 7 for p in parts)
    html = set(html_items(local.multi))
    in_cluster_order = [e.path for e in archive.iter_efficient() if e.path in html]
    assert [p for part in parts for p in part["path"]] == in_cluster_order
    # Every wanted entry once, so partitions neither overlap nor leave gaps.
    assert sorted(in_cluster_order) == sorted(html)


def test_options_entries_columns_html_max_chars(local):
    path = local.multi.path
    df = compute(libdask.read_archives([path], entries="all", columns=["path", "mimetype"],
                                       html=True, max_chars=5, main_only=False))
    assert list(df.columns) == ["path", "mimetype", "text", "html", "error"]
    by_path = {r.path: r for r in df.itertuples()}
    assert set(by_path) == set(local.multi.items)  # every item, no redirect
    for p, (_title, mimetype, content) in local.multi.items.items():
        r = by_path[p]
        assert r.mimetype == mimetype and pd.isna(r.error)
        if mimetype == "text/html":
            assert r.html == content.decode()
            assert r.text == Archive(str(path)).get_entry_by_path(p).get_item().get_text(
                main_only=False, max_chars=5)
            assert len(r.text) <= 5
        else:  # no text for CSS and images; html only for HTML
            assert pd.isna(r.text) and pd.isna(r.html)
    with pytest.raises(ValueError, match="unknown columns"):
        libdask.read_archives([path], columns=["body"])
    with pytest.raises(ValueError, match="entries"):
        libdask.read_archives([path], entries="front")


def test_failures_are_rows(local, tmp_path):
    missing = str(tmp_path / "missing.zim")
    paths = [missing] + [str(p) for p in local.corrupt.values()] + [str(local.small.path)]
    df = compute(libdask.read_archives(paths, entries="all"))
    errors = df[df.error.notna()]
    by_archive = {p: errors[errors.archive == p] for p in paths}
    assert list(by_archive[missing].error) == [
        f"missing: ArchiveError: {missing}: cannot open: No such file or directory"]
    assert by_archive[missing].path.isna().all()
    small_rows = df[df.archive == str(local.small.path)]
    assert sorted(small_rows.path) == sorted(local.small.items) and small_rows.error.isna().all()
    for defect, (_edit, outcome, _check) in CORRUPTIONS.items():
        path = str(local.corrupt[defect])
        rows, bad = df[df.archive == path], by_archive[path]
        if outcome == OPEN_FAILS:  # one row: the archive's failure, nothing else
            assert len(rows) == 1 and bad.error.iloc[0].startswith("corrupt: ArchiveError: "), defect
            assert rows.path.isna().all(), defect
        elif outcome == VALIDATE:  # a defect reading does not meet: the small archive's rows
            assert sorted(rows.path) == sorted(local.small.items) and bad.empty, defect
        else:
            assert outcome == CONTENT_FAILS
            data = local.corrupt[defect].read_bytes()
            assert not local.small.redirects  # so each touched user entry is one row
            assert len(bad) == local_archives.touched(defect, data, "C") > 0, defect
            assert bad.path.notna().all() and bad.text.isna().all(), defect
            assert all(e.startswith("corrupt: ") for e in bad.error), defect
            assert sorted(rows.path) == sorted(local.small.items), defect


def test_planning_reads_no_content(local):
    # Cluster 0 of this archive points past the end of the file; planning
    # does not notice (it reads headers only), the worker's read does.
    path = str(local.corrupt["outofbounds_first_clusterptr"])
    parts = libdask._plan([path], 2000, "raise", untrusted=False)
    assert [(p.start, p.stop, p.failure) for p in parts] == [(0, Archive(path).entry_count, None)]


def test_errors_raise(local, tmp_path):
    missing = str(tmp_path / "missing.zim")
    with pytest.raises(libzim.ArchiveError, match="missing.zim"):
        libdask.read_archives([local.small.path, missing], errors="raise")
    bad = libdask.read_archives([local.corrupt["outofbounds_first_clusterptr"]], errors="raise")
    with pytest.raises(libzim.ArchiveError, match="outside the archive"):
        compute(bad)


def test_replaced_after_planning(local, tmp_path):
    path = tmp_path / "a.zim"
    shutil.copy(local.multi.path, path)
    ddf = libdask.read_archives([path], partition_size=1000)
    shutil.copy(local.small.path, path)  # another archive, another UUID, at the planned path
    df = compute(ddf)
    assert len(df) == 1 and df.error.iloc[0].startswith("replaced: "), df.error.iloc[0]
    assert df.uuid.iloc[0] == str(Archive(str(local.multi.path)).uuid)


def test_no_archives():
    df = compute(libdask.read_archives([]))
    assert list(df.columns) == COLUMNS and df.empty


def test_to_parquet_on_local_cluster(local, tmp_path):
    missing = str(tmp_path / "missing.zim")
    corrupt = str(local.corrupt["smaller_than_header"])
    paths = [str(local.multi.path), missing, str(local.small.path), corrupt]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
        ddf = libdask.read_archives(paths, partition_size=16)
        ddf.to_parquet(tmp_path / "out", compute=True)
        # Each worker process reads on its own (opens the archive there). Pinned with
        # `workers=` and a key of its own (pure=False): the scheduler may run all of
        # to_parquet on one worker, and a second compute of the same partition may take the
        # first one's result still in memory (both happened in CI).
        workers = sorted(client.scheduler_info()["workers"])
        client.run(lambda: libdask._opened.clear())

        def read_one(path: str) -> int:
            return len(libdask.read_archives([path], partition_size=16).partitions[0].compute(scheduler="sync"))

        rows = [client.submit(read_one, str(local.multi.path), workers=[address], pure=False).result()
                for address in workers]
        ran_on = client.run(lambda: sorted(libdask._opened))
    assert len(workers) == 2 and rows[0] == rows[1] > 0
    assert all(str(local.multi.path) in ran_on[address] for address in workers), ran_on
    df = pd.read_parquet(tmp_path / "out", dtype_backend="pyarrow")
    ok = df[df.error.isna()]
    assert as_rows(ok.astype({c: pd.StringDtype("pyarrow") for c in COLUMNS if c != "size"})
                   .astype({"size": pd.Int64Dtype()})) == \
        expected_rows(local.multi) + expected_rows(local.small)
    failed = df[df.error.notna()].sort_values("archive")
    assert list(failed.archive) == sorted([missing, corrupt])
    assert [e.split(":", 1)[0] for e in failed.error] == [
        "corrupt" if p == corrupt else "missing" for p in sorted([missing, corrupt])]


def test_read_archives_without_pandas(tmp_path):
    """Library search needs no pandas; read_archives says what to install."""
    code = (
        "import sys; sys.modules['pandas'] = sys.modules['dask.dataframe'] = None\n"
        "import libzim.dask\n"
        "try:\n    libzim.dask.read_archives([])\nexcept ImportError as e:\n    print(e)\n"
    )
    # The libzim under test (this checkout's, or the installed one in CI).
    env = dict(os.environ, PYTHONPATH=str(Path(libzim.__file__).parents[1]))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    root = Path(libzim.__file__).resolve().parents[1]
    # From a clone the hint names the clone; an installed copy the extra's packages (issue 39:
    # libzim-c is on no index), either way with this interpreter's pip.
    if (root / "pyproject.toml").exists():
        assert f"-m pip install -e '{root}[dask]'" in out.stdout, out.stdout
    else:
        assert "-m pip install " in out.stdout and "libzim-c[" not in out.stdout, out.stdout
        # (installed metadata writes the extra's extras sorted: dask[dataframe,distributed])
        assert re.search(r"'dask\[(distributed,dataframe|dataframe,distributed)\]'", out.stdout), out.stdout
        assert "'pyarrow>=16'" in out.stdout, out.stdout


def test_untrusted_checks_each_archive_in_a_child(local, tmp_path):
    missing = str(tmp_path / "missing.zim")
    corrupt = str(local.corrupt["outofbounds_urlptrpos"])
    paths = [str(local.small.path), missing, corrupt]
    trusted = compute(libdask.read_archives(paths))
    checked = compute(libdask.read_archives(paths, untrusted=True))
    assert as_rows(checked) == as_rows(trusted)
    assert sorted(checked.error.dropna().str.split(":").str[0]) == ["corrupt", "missing"]
