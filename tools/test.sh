#!/usr/bin/env bash
# The developer's test command, from a fresh Debian machine: installs, builds, tests.
#   bash tools/test.sh [--wheel] [PYTEST ARGS]
# Stage 1 (always): tools/bootstrap.sh (Debian packages, the clone's .venv, the editable
# install), then into that venv the test and type-check tools (requirements-dev.txt),
# the reference python-libzim 3.13.1 in a venv of its own, stubtest, mypy --strict, and
# one pytest run of the in-place build of this checkout (about 6 minutes on 2 idle cores).
# Stage 2 (--wheel, or LIBZIM_C_WHEEL=1; CI sets it): builds the sdist and a wheel
# from it, installs that into a fresh venv and tests the installed package (the
# whole suite again: about 5 more minutes). LIBZIM_C_SKIP_INSTALLED=1 (older name)
# turns stage 2 off whatever else says. PYTHON=/path/to/python uses an interpreter
# of your own instead of .venv (tools/steps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_PREFIX=test.sh
. tools/steps.sh
wheel=${LIBZIM_C_WHEEL:-0}
if [ "${1:-}" = --wheel ]; then wheel=1; shift; fi
[ "${LIBZIM_C_SKIP_INSTALLED:-}" = 1 ] && wheel=0
step "bootstrap (tools/bootstrap.sh)" bash tools/bootstrap.sh
need_venv
root=$PWD
pip_requirements requirements-dev.txt

# The reference python-libzim 3.13.1 from PyPI, in its own venv: it writes the
# ZIM 6.3 archives (libzim 9) that tests/test_zim63.py reads, from this location,
# and tests/test_writer_oracle.py compares the writer with it.
ORACLE=${LIBZIM_C_ORACLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libzim-c/python-libzim-3.13.1}
step_start "reference python-libzim 3.13.1"
if ! "$ORACLE/bin/python" -I -c 'import libzim.writer, importlib.metadata as m; assert m.version("libzim") == "3.13.1"' \
        2>/dev/null; then
    rm -rf "$ORACLE"
    "$PY" -m venv "$ORACLE"
    "$ORACLE/bin/python" -m pip install -q --disable-pip-version-check "libzim==3.13.1"
    step_done "reference python-libzim 3.13.1: installed into $ORACLE"
else
    step_done "reference python-libzim 3.13.1: installed already ($ORACLE)"
fi

# The stubs (libzim/*.pyi) must describe the built module exactly. Run from
# elsewhere so the checkout's libzim/ is imported once, through the editable install.
stubtest_here() { (cd /tmp && MYPYPATH="$root" "$PY" -m mypy.stubtest libzim); }
step "stubtest of libzim/*.pyi" stubtest_here
step "mypy --strict libzim" "$PY" -m mypy --strict libzim
echo "test.sh: pytest of the in-place build: the default suite, about 5 minutes on 2 idle cores, longer on a busy machine" >&2
step "pytest (in-place build)" "$PY" -m pytest -q "$@"

if [ "$wheel" != 1 ]; then
    echo "test.sh: done; the installed-package stage (sdist, wheel, the suite again in a fresh venv," \
        "about 5 minutes more) runs with: bash tools/test.sh --wheel" >&2
    exit 0
fi
echo "test.sh: the installed-package stage: sdist, a wheel, a fresh venv, the suite again (about 5 minutes)" >&2
start=$SECONDS
work=$(mktemp -d /tmp/libzim-c-dist.XXXXXX)
trap 'rm -rf "$work"' EXIT
# As a user gets it: sdist, then a wheel built from it with build isolation.
sdist() { "$PY" -m build --sdist --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; return 1; }; }
step "sdist" sdist
step "wheel from the sdist (compiles the extension)" \
    "$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$work/dist"/*.tar.gz
step "check_dist: what the sdist and the wheel carry" "$PY" tools/check_dist.py "$work/dist"
venv_py=$work/venv/bin/python
# The suite's imports (hypothesis, ...), as in stage 1; the build and type-check tools stay outside.
venv() {
    "$PY" -m venv "$work/venv" &&
        "$venv_py" -m pip install -q --disable-pip-version-check "$work/dist"/*.whl -r "$root/requirements-test.txt"
}
step "fresh venv with the wheel and requirements-test.txt" venv
cd "$work"  # nothing of the checkout on sys.path from here on
step "stubtest against the installed wheel" "$venv_py" -m mypy.stubtest libzim
# The usage example (docs/getting-started.md), type-checked against the installed package's stubs.
step "mypy --strict examples/usage.py" "$venv_py" -m mypy --strict "$root/examples/usage.py"
step "pyright examples/usage.py" "$PY" -m pyright --pythonpath "$venv_py" "$root/examples/usage.py"
step "pytest (installed wheel)" env LIBZIM_C_TEST_INSTALLED=1 "$venv_py" -m pytest -q -p no:cacheprovider "$root/tests" "$@"
echo "installed-package stage: $((SECONDS - start)) s"
