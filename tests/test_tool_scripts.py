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
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
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
    # Caches under tmp_path: a stand-in must never land in the real ones (the oracle's venv).
    return root, dict(os.environ, PYTHON=str(fake), FAKE_LOG=str(log), XDG_CACHE_HOME=str(tmp_path / "cache"),
                      LIBZIM_C_ORACLE_VENV=str(tmp_path / "no-oracle"))


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


def run_test_sh(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    root, base_env = copy_scripts(tmp_path, "test.sh")
    (root / "tools" / "bootstrap.sh").write_text("exit 0\n")
    # The reference python-libzim's venv, there already (the stand-in answers every check).
    oracle = tmp_path / "oracle"
    (oracle / "bin").mkdir(parents=True)
    shutil.copy(base_env["PYTHON"], oracle / "bin" / "python")
    base_env["LIBZIM_C_ORACLE_VENV"] = str(oracle)
    # Whatever the run of this suite was asked (CI sets LIBZIM_C_WHEEL=1), only ``env`` counts here.
    base_env = {k: v for k, v in base_env.items() if k not in ("LIBZIM_C_WHEEL", "LIBZIM_C_SKIP_INSTALLED")}
    proc = subprocess.run(["bash", "tools/test.sh", *args], cwd=root, env={**base_env, **env},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc, (tmp_path / "calls.log").read_text()


def test_test_sh_runs_the_suite_once_by_default(tmp_path):
    # Issue 31: the README's test command ran the whole suite twice (in place, then the wheel).
    proc, calls = run_test_sh(tmp_path, "-k", "x")
    assert [line for line in calls.splitlines() if " pytest " in f" {line} "] == ["-m pytest -q -k x"]
    assert "-m build" not in calls and "-m venv" not in calls
    assert "about 5 minutes on 2 idle cores" in proc.stderr  # said before the long step
    assert proc.stderr.rstrip().endswith("runs with: bash tools/test.sh --wheel")


def test_test_sh_wheel_stage_on_request(tmp_path):
    for i, (args, env) in enumerate([(["--wheel"], {}), ([], {"LIBZIM_C_WHEEL": "1"})]):
        _proc, calls = run_test_sh(tmp_path / str(i), *args, "-k", "x", **env)
        pytest_runs = [line for line in calls.splitlines() if "-m pytest" in line]
        assert len(pytest_runs) == 2 and pytest_runs[1].endswith("/tests -k x"), calls  # the installed package
        assert "-m build --sdist" in calls and "-m pip wheel" in calls


def test_test_sh_skip_installed_still_turns_the_wheel_stage_off(tmp_path):
    _proc, calls = run_test_sh(tmp_path, "--wheel", LIBZIM_C_SKIP_INSTALLED="1")
    assert "-m build" not in calls


def test_ci_runs_the_readme_commands_on_stock_debian_with_the_wheel_stage():
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "bash tools/stock_debian.sh bookworm --wheel" in ci
    assert "bash tools/stock_debian.sh trixie --root --shared" in ci


# -- tools/bootstrap.sh and the README's commands (issue 39) --------------------------

# A stand-in for the system python3 and the venv's python: logs which one ran what.
LOGGING_PYTHON = r"""#!/bin/sh
echo "$0 $*" >> "$FAKE_LOG"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
if [ "$1 $2" = "-c import pip" ]; then case "$0" in */.venv/bin/python) [ -e "$0.ready" ] && exit 0; exit 1;; esac; fi
exit 0
"""


def test_bootstrap_makes_the_clones_venv_and_installs_only_into_it(tmp_path):
    root = tmp_path / "checkout"
    (root / "tools").mkdir(parents=True)
    for name in ("steps.sh", "bootstrap.sh"):
        shutil.copy(REPO_ROOT / "tools" / name, root / "tools" / name)
    system = tmp_path / "system-python3"
    system.write_text(LOGGING_PYTHON)
    system.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "LIBZIM_C_VENV")}
    env |= {"LIBZIM_C_BASE_PYTHON": str(system), "FAKE_LOG": str(log)}
    proc = subprocess.run(["bash", "tools/bootstrap.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    venv_py = f"{root}/.venv/bin/python"
    # The system interpreter makes the venv and does nothing else.
    assert [c for c in calls if c.startswith(str(system))] == [f"{system} -m venv {root}/.venv"]
    assert f"{venv_py} -m pip install -q --disable-pip-version-check --no-build-isolation -e .[serve]" in calls
    assert "bootstrap: ready: .venv/bin/zim --help, or . .venv/bin/activate for python and zim" in proc.stderr
    # A second run finds the venv and makes no other.
    (root / ".venv" / "bin" / "python.ready").touch()
    log.write_text("")
    proc = subprocess.run(["bash", "tools/bootstrap.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in log.read_text().splitlines() if c.startswith(str(system)) or " -m venv " in c]
    assert "virtual environment: .venv (" in proc.stderr and "exists already" in proc.stderr


def test_readme_commands_are_read_from_the_readme():
    proc = subprocess.run(["python3", str(REPO_ROOT / "tools" / "readme_commands.py")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    demo, test = proc.stdout.splitlines()
    assert demo == "bash tools/bootstrap.sh && .venv/bin/zim demo --threads 2"
    assert test == "bash tools/test.sh"
    readme = (REPO_ROOT / "README.md").read_text()
    assert f"\n    {demo}\n" in readme and f"\n    {test}\n" in readme


def test_readme_commands_refuses_a_section_without_exactly_two(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_commands", REPO_ROOT / "tools" / "readme_commands.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = "# X\n\n## Two commands for a fresh machine (any)\n\nrun:\n\n    one\n\ntext\n\n    two\n\n    three\n## Next\n\n    four\n"
    assert mod.commands(text) == ["one", "two", "three"]
    assert mod.commands(text.replace("    three\n", "")) == ["one", "two"]


def test_site_folder_is_ignored_by_git():
    assert "/site/" in (REPO_ROOT / ".gitignore").read_text().splitlines()


def test_skip_summary_says_what_the_shared_set_is_and_how_to_fetch_it(tmp_path):
    # Issue 31: the run ended naming a folder outside the clone a newcomer has never heard of.
    import sys

    from conftest import SUITE_CLONE, suite_skip_line

    env = dict(os.environ, LIBZIM_C_TEST_DATA=str(tmp_path / "absent"))
    env.pop("LIBZIM_C_REQUIRE_TEST_DATA", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "suite_data",
                           "tests/test_local_archives.py", "tests/test_reader.py"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    skipped = [line for line in lines if "tests skipped: they read the openZIM zim-testing-suite" in line]
    assert len(skipped) == 1, proc.stdout
    count = int(skipped[0].split()[0])
    assert count > 0 and skipped[0] == suite_skip_line(count)
    assert skipped[0].endswith(SUITE_CLONE) and "../shared" not in skipped[0]
