"""The free-threaded tooling's logic, on the ordinary interpreter (no /opt/py313t
needed): tools/freethreaded_pip.py's rules and what it asks pip, run with a
stand-in python that plays pip; tools/freethreaded_ci.sh with and without an
interpreter; tests/test_mcp.py's skip, which only a free-threaded build takes.
The real runs are CI's (.ci/run's last stage) and the recipe's."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import freethreaded_pip as ftpip  # noqa: E402

sys.path.pop(0)

TOOL = str(REPO_ROOT / "tools" / "freethreaded_pip.py")

# A stand-in for the venv's python that plays `python -m pip install ...`: it logs
# each call as JSON (its arguments and the requirement lines it was given, a -r
# file's read), fails when one of those lines is in $FAKE_FAIL (comma-separated),
# and for --report - prints a report that installs "newpkg 1.0".
FAKE_PIP = r"""#!PYTHON
import json, os, sys
args = sys.argv[1:]
reqs = []
i = 0
while i < len(args):
    if args[i] == "-r":
        reqs += [x for x in open(args[i + 1]).read().splitlines() if x]
        i += 2
        continue
    if args[i] not in ("-m", "pip", "install") and not args[i].startswith("-"):
        reqs.append(args[i])
    i += 1
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "reqs": reqs}) + "\n")
bad = [r for r in reqs if r in os.environ.get("FAKE_FAIL", "").split(",")]
if bad:
    sys.stderr.write("Collecting x\nERROR: Failed to build installable wheels for some pyproject.toml based projects (%s)\n" % bad[0])
    sys.exit(1)
if "--report" in args:
    print(json.dumps({"install": [{"metadata": {"name": "newpkg", "version": "1.0"}}]}))
"""


@pytest.fixture
def fake_pip(tmp_path: Path):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PIP.replace("PYTHON", sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "pip.log"
    log.touch()

    def run(*args: str, fail: str = "") -> tuple[subprocess.CompletedProcess[str], list[dict]]:
        env = dict(os.environ, FAKE_LOG=str(log), FAKE_FAIL=fail)
        proc = subprocess.run([sys.executable, TOOL, *args, "--python", str(fake)], env=env,
                              capture_output=True, text=True, timeout=60)
        calls = [json.loads(x) for x in log.read_text().splitlines()]
        log.write_text("")
        return proc, calls

    return run


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_plan_splits_by_the_rules(tmp_path):
    base = write(tmp_path / "base.txt", "# comment\npytest>=7\nMyPy==2.4.1  # type checks\n"
                 "uvloop>=0.19 ; sys_platform != 'win32'\nFastAPI\n\n")
    top = write(tmp_path / "top.txt", "-r base.txt\n--requirement=base.txt\npytest>=7\nmcp>=2.0  # the SDK\n"
                "httptools>=0.6\ndask[distributed,dataframe]\n-c constraints.txt\nmcp-helper\n")
    p = ftpip.plan(top)
    assert p.together == ["pytest>=7", "dask[distributed,dataframe]", "-c constraints.txt", "mcp-helper"]
    assert p.own == [("fastapi", "FastAPI"), ("mcp", "mcp>=2.0")]
    assert p.left_out == ["mypy", "uvloop", "httptools"]


def test_plan_of_the_test_requirements_keeps_every_other_line():
    # What the recipe installs together: requirements-test.txt but the five names below.
    p = ftpip.plan(REPO_ROOT / "requirements-test.txt")
    assert p.left_out == ["mypy", "httptools", "uvloop"]
    assert [name for name, _ in p.own] == ["fastapi", "mcp"]
    lines = [x.split(" #")[0].strip() for x in (REPO_ROOT / "requirements-test.txt").read_text().splitlines()]
    kept = [x for x in lines if x and not x.startswith("#")
            and not x.startswith(("mypy", "httptools", "uvloop", "fastapi", "mcp"))]
    assert p.together == kept and "hypothesis" in kept and "pyarrow>=16" in kept


def test_help_names_both_commands():
    proc = subprocess.run([sys.executable, TOOL, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "check" in proc.stdout and "install" in proc.stdout and "dry run" in proc.stdout


def test_install_asks_pip_by_the_rules_and_leaves_out_what_has_no_wheels(tmp_path, fake_pip):
    reqs = write(tmp_path / "r.txt", "pytest>=7\nmypy==2.4.1\nhypothesis\nfastapi\nmcp>=2.0\n")
    proc, calls = fake_pip("install", str(reqs), fail="mcp>=2.0")
    assert proc.returncode == 0, proc.stderr
    assert [c["reqs"] for c in calls] == [["pytest>=7", "hypothesis"], ["fastapi"], ["mcp>=2.0"]]
    assert "--prefer-binary" in calls[0]["args"] and "--only-binary=hypothesis,pyarrow" in calls[0]["args"]
    assert "--dry-run" not in calls[0]["args"]
    for c in calls[1:]:
        assert "--only-binary=:all:" in c["args"] and "--prefer-binary" not in c["args"]
    assert "left out on 3.13t: mypy" in proc.stdout
    assert proc.stderr.count("left out") == 1 and "mcp left out: no release of it has a wheel set" in proc.stderr


def test_install_fails_when_the_rest_does_not_install(tmp_path, fake_pip):
    reqs = write(tmp_path / "r.txt", "pytest>=7\nnew-rust-thing\nfastapi\n")
    proc, calls = fake_pip("install", str(reqs), fail="new-rust-thing")
    assert proc.returncode == 1 and "did not install" in proc.stderr
    assert len(calls) == 1  # stops there


def test_check_says_per_file_what_would_not_install(tmp_path, fake_pip):
    a = write(tmp_path / "requirements-a.txt", "pytest>=7\nmcp>=2.0\nuvloop\n")
    b = write(tmp_path / "requirements-b.txt", "-r requirements-a.txt\nselenium\n")
    proc, calls = fake_pip("check", str(a), str(b), fail="mcp>=2.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert "requirements-a.txt: 1 requirement(s) together: ok (would install newpkg==1.0)" in out
    assert "requirements-b.txt: 2 requirement(s) together: ok (would install newpkg==1.0)" in out
    mcp_lines = [x for x in out if " mcp on its own" in x]
    assert len(mcp_lines) == 2 and all("would not install, left out" in x and "ERROR: Failed" in x for x in mcp_lines)
    assert any(x.startswith("requirements-a.txt: left out: uvloop: a C extension") for x in out)
    assert all("--dry-run" in c["args"] for c in calls)
    assert sum(c["reqs"] == ["mcp>=2.0"] for c in calls) == 1  # asked once for both files
    assert out[-1].startswith("freethreaded_pip: 2 file(s) ok")


def test_check_fails_and_names_a_new_requirement_that_would_not_install(tmp_path, fake_pip):
    a = write(tmp_path / "requirements-a.txt", "pytest>=7\nnew-rust-thing>=1\nhttpx\n")
    proc, _ = fake_pip("check", str(a), fail="new-rust-thing>=1")
    assert proc.returncode == 1
    assert "requirements-a.txt: 3 requirement(s) together: WOULD NOT INSTALL: new-rust-thing>=1: ERROR: Failed" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "freethreaded_pip: would not install on 3.13t: requirements-a.txt (see above)"


def test_check_without_the_interpreter_says_so(tmp_path):
    proc = subprocess.run([sys.executable, TOOL, "check", "--venv", str(tmp_path / "venv"),
                           "--py313t", str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and not (tmp_path / "venv").exists()
    assert proc.stderr == f"freethreaded_pip: no free-threaded interpreter at {tmp_path / 'nope'} " \
        "(bash tools/build_freethreaded_python.sh builds it)\n"


def ci_checkout(tmp_path: Path, recipe_exit: int) -> tuple[Path, Path]:
    """A checkout with tools/freethreaded_ci.sh and a stand-in recipe that logs its environment."""
    root = tmp_path / "checkout"
    (root / "tools").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tools" / "freethreaded_ci.sh", root / "tools")
    log = tmp_path / "recipe.log"
    (root / "tools" / "freethreaded_recipe.sh").write_text(
        f'echo "PY313T=$PY313T FT_STRESS_SECONDS=$FT_STRESS_SECONDS args=$#" >> {log}\nexit {recipe_exit}\n')
    return root, log


@pytest.mark.parametrize("recipe_exit", [0, 1])
def test_ci_stage_runs_the_recipe_with_short_stress_when_the_interpreter_is_there(tmp_path, recipe_exit):
    root, log = ci_checkout(tmp_path, recipe_exit)
    interp = tmp_path / "python3.13t"
    interp.write_text("#!/bin/sh\n")
    interp.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "FT_STRESS_SECONDS"}
    proc = subprocess.run(["bash", "tools/freethreaded_ci.sh"], cwd=root, env=dict(env, PY313T=str(interp)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == recipe_exit
    assert log.read_text() == f"PY313T={interp} FT_STRESS_SECONDS=15 args=0\n"


def test_ci_stage_passes_in_one_line_without_the_interpreter(tmp_path):
    root, log = ci_checkout(tmp_path, 1)
    proc = subprocess.run(["bash", "tools/freethreaded_ci.sh"], cwd=root,
                          env=dict(os.environ, PY313T=str(tmp_path / "nope")), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not log.exists()
    assert proc.stdout == (f"freethreaded_ci: skipped: no free-threaded interpreter at {tmp_path / 'nope'} "
                           "(bash tools/build_freethreaded_python.sh builds it)\n")


# A pytest plugin that hides the MCP SDK and makes sysconfig say the build is
# free-threaded (FAKE_FT=1) or not (0), whichever it is: tests/test_mcp.py must
# skip then, and fail otherwise.
HIDE_MCP = """
import os, sys, sysconfig
sys.modules["mcp"] = None  # `import mcp` raises ModuleNotFoundError; find_spec("mcp") is None
real = sysconfig.get_config_var
flag = int(os.environ["FAKE_FT"])
sysconfig.get_config_var = lambda name: flag if name == "Py_GIL_DISABLED" else real(name)
"""


@pytest.mark.parametrize("free_threaded", [True, False])
def test_mcp_tests_skip_without_the_sdk_on_free_threaded_builds_only(tmp_path, free_threaded):
    (tmp_path / "hide_mcp.py").write_text(HIDE_MCP)
    env = dict(os.environ, FAKE_FT="1" if free_threaded else "0",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "hide_mcp", "-p", "no:cacheprovider",
                           "tests/test_mcp.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    if free_threaded:
        assert proc.returncode in (0, 5), proc.stdout  # 5: pytest's "no test ran", this being the only file
        assert proc.stdout.splitlines()[-1].startswith("1 skipped") and "the MCP SDK (mcp extra) is not installed" in proc.stdout
    else:
        assert proc.returncode != 0
        # the SDK (or, where it never installed, its httpx2) missing stops collection
        assert proc.stdout.splitlines()[-1].startswith("1 error"), proc.stdout
        assert "import of mcp halted" in proc.stdout or "No module named 'httpx2'" in proc.stdout
