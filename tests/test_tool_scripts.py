"""The developer scripts' plumbing, run on a copy of the scripts with a stand-in
Python that records what it is asked to do (the real builds take minutes and
need requirements-docs.txt; CI runs them for real through .ci/run)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from conftest import REPO_ROOT

# A stand-in for $PYTHON: logs its arguments, and for `-m mkdocs build --site-dir D`
# writes D/index.html as mkdocs would; everything else succeeds doing nothing.
FAKE_PYTHON = r"""#!/bin/sh
echo "$*" >> "$FAKE_LOG"
if [ "$1 $2 $3" = "-m mkdocs build" ]; then
    while [ $# -gt 0 ]; do
        if [ "$1" = --site-dir ]; then mkdir -p "$2" && echo '<html>site</html>' > "$2/index.html"; fi
        shift
    done
fi
exit 0
"""


def copy_scripts(tmp_path: Path, *names: str) -> tuple[Path, dict[str, str]]:
    """A fake checkout holding tools/NAME for each name, and the env that runs them on the stand-in."""
    root = tmp_path / "checkout"
    (root / "tools").mkdir(parents=True)
    for name in ("steps.sh", *names):
        shutil.copy(REPO_ROOT / "tools" / name, root / "tools" / name)
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.log"
    log.touch()
    return root, dict(os.environ, PYTHON=str(fake), FAKE_LOG=str(log))


def test_docs_sh_builds_into_site_and_says_how_to_open_it(tmp_path):
    # Issue 31: the site went to a tmp dir deleted at exit; nothing was left to open.
    root, env = copy_scripts(tmp_path, "docs.sh")
    proc = subprocess.run(["bash", "tools/docs.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    site = root / "site"
    assert (site / "index.html").is_file()  # still there after the script ended
    calls = (tmp_path / "calls.log").read_text()
    assert f"-m mkdocs build --strict --site-dir {site}" in calls
    assert f"tools/docs_check.py {site}" in calls
    assert proc.stdout.strip().splitlines()[-1] == (
        f"docs.sh: the site is in {site}: open {site}/index.html, or serve it with "
        f"python3 -m http.server -d {site} 8000 (then http://127.0.0.1:8000/), or live-edit with python3 -m mkdocs serve")


def test_docs_sh_site_dir_argument(tmp_path):
    root, env = copy_scripts(tmp_path, "docs.sh")
    out = tmp_path / "elsewhere"
    proc = subprocess.run(["bash", "tools/docs.sh", str(out)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (out / "index.html").is_file() and not (root / "site").exists()
    assert f"the site is in {out}:" in proc.stdout


def test_site_folder_is_ignored_by_git():
    assert "/site/" in (REPO_ROOT / ".gitignore").read_text().splitlines()
