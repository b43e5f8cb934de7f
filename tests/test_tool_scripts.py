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


# Stand-ins for apt-get, dpkg-query and dpkg (tools/apt.sh): a package counts as
# installed once its name is in $FAKE_DEBS; apt-get logs each call, and `update`
# fails as a busy lists lock does (apt 2.6 does not wait for it) while $FAKE_BUSY
# holds a positive count, one less each time.
FAKE_APT_GET = r"""#!/bin/sh
echo "apt-get $*" >> "$FAKE_LOG"
for a in "$@"; do
    if [ "$a" = update ]; then
        n=$(cat "$FAKE_BUSY" 2>/dev/null || echo 0)
        if [ "$n" -gt 0 ]; then
            echo $((n - 1)) > "$FAKE_BUSY"
            echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
            exit 100
        fi
        sleep 0.3
    fi
done
if [ "$FAKE_INTERRUPTED" = 1 ] && [ ! -e "$FAKE_DEBS.configured" ]; then
    echo "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem." >&2
    exit 100
fi
install=0
for a in "$@"; do
    case $a in install) install=1 ;; -*) ;; *) [ $install = 1 ] && echo "$a" >> "$FAKE_DEBS" ;; esac
done
exit 0
"""
FAKE_DPKG_QUERY = r"""#!/bin/sh
p=$(eval echo \${$#})
grep -qx "$p" "$FAKE_DEBS" 2>/dev/null && { echo "install ok installed"; exit 0; }
exit 1
"""
FAKE_DPKG = r"""#!/bin/sh
echo "dpkg $*" >> "$FAKE_LOG"
touch "$FAKE_DEBS.configured"
"""


def fake_apt(tmp_path: Path, busy: int = 0, interrupted: bool = False) -> tuple[Path, dict[str, str]]:
    root, env = copy_scripts(tmp_path, "apt.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("apt-get", FAKE_APT_GET), ("dpkg-query", FAKE_DPKG_QUERY), ("dpkg", FAKE_DPKG)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "busy").write_text(str(busy))
    env.update(PATH=f"{bin_dir}:{env['PATH']}", FAKE_DEBS=str(tmp_path / "debs"), FAKE_BUSY=str(tmp_path / "busy"),
               FAKE_INTERRUPTED="1" if interrupted else "0", LIBZIM_C_APT_LOCK=str(tmp_path / "apt.lock"),
               LIBZIM_C_APT_WAIT="30")
    return root, env


def apt_calls(tmp_path: Path) -> list[str]:
    return [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith(("apt-get", "dpkg"))]


def test_apt_sh_two_concurrent_installs_of_one_package_install_it_once(tmp_path):
    # CI's first stages both needed debootstrap on a new machine and ran
    # `apt-get update` at once: the second failed at once with exit code 100.
    root, env = fake_apt(tmp_path)
    procs = [subprocess.Popen(["bash", "tools/apt.sh", "install", "debootstrap"], cwd=root, env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs if p.stderr]
    assert [rc for rc, _ in results] == [0, 0], results
    assert apt_calls(tmp_path) == [
        "apt-get -o DPkg::Lock::Timeout=30 update -qq",
        "apt-get -o DPkg::Lock::Timeout=30 install -y -qq debootstrap",
    ]


def test_apt_sh_waits_for_a_foreign_lists_lock_and_skips_what_is_installed(tmp_path):
    root, env = fake_apt(tmp_path, busy=2)
    (tmp_path / "debs").write_text("libzim-dev\n")
    proc = subprocess.run(["bash", "tools/apt.sh", "install", "--no-install-recommends", "libzim-dev", "wrk"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = apt_calls(tmp_path)
    assert calls.count("apt-get -o DPkg::Lock::Timeout=30 update -qq") == 3  # two refusals, then the update
    assert calls[-1] == "apt-get -o DPkg::Lock::Timeout=30 install -y -qq --no-install-recommends wrk"


def test_apt_sh_gives_up_on_a_lock_held_past_its_wait_and_says_why(tmp_path):
    root, env = fake_apt(tmp_path, busy=1000)
    env["LIBZIM_C_APT_WAIT"] = "2"
    proc = subprocess.run(["bash", "tools/apt.sh", "install", "wrk"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Could not get lock /var/lib/apt/lists/lock" in proc.stderr
    assert not any(c.startswith("apt-get -o DPkg::Lock::Timeout=2 install") for c in apt_calls(tmp_path))


def test_apt_sh_finishes_an_interrupted_dpkg_once_then_installs(tmp_path):
    root, env = fake_apt(tmp_path, interrupted=True)
    proc = subprocess.run(["bash", "tools/apt.sh", "install", "wrk"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "running dpkg --configure -a" in proc.stderr
    assert "dpkg --configure -a" in apt_calls(tmp_path)
    assert (tmp_path / "debs").read_text().split() == ["wrk"]


def test_apt_sh_with_everything_installed_runs_no_apt_get(tmp_path):
    root, env = fake_apt(tmp_path)
    (tmp_path / "debs").write_text("wrk\n")
    proc = subprocess.run(["bash", "tools/apt.sh", "install", "wrk"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert apt_calls(tmp_path) == []


def test_scripts_install_debian_packages_only_through_apt_sh():
    for path in sorted((REPO_ROOT / "tools").glob("*.sh")) + [REPO_ROOT / ".ci" / "run"]:
        if path.name == "apt.sh":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            assert "apt-get update" not in code and "apt-get install" not in code, f"{path.name}:{n}: {line.strip()}"
