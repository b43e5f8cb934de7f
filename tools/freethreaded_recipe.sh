#!/usr/bin/env bash
# The free-threaded recipe, as one script: build the extension in place against
# a free-threaded CPython 3.13 (python3.13t) in a venv of the test requirements,
# run the whole suite (the GIL-progress tests skip, with the reason), then the
# stress test with 8 and 16 threads.  What README's "Free-threaded CPython"
# commands do, so that the recipe has a check that runs it: .ci/run's last stage
# (tools/freethreaded_ci.sh) runs it, with 15 s stress runs, whenever the
# interpreter is built on the machine (building it takes 20-40 min on 2 cores,
# so CI does not).
#
# Usage (from anywhere; root or sudo only to build the interpreter):
#   bash tools/freethreaded_recipe.sh [PYTEST_ARGS...]
# Env:
#   PY313T   the interpreter (default /opt/py313t/bin/python3.13t; built by
#            tools/build_freethreaded_python.sh when missing and FT_BUILD=1)
#   FT_BUILD=1            build the interpreter if missing (else: fail, saying how)
#   FT_VENV               the venv (default /tmp/libzim-c-ft; reused if present)
#   FT_STRESS_SECONDS     seconds per stress run (default 60; 0 skips them)
#   FT_ALLOW_GIL=1        accept an interpreter with the GIL (to try the recipe's
#                         steps on an ordinary python3; proves nothing about 3.13t)
#
# Three things the recipe needed by hand before (issue 21):
# - hypothesis: its newest releases have no wheel for 3.13t and their sdist
#   builds a Rust extension (fails offline); --only-binary=hypothesis takes the
#   newest release with a pure-Python wheel (6.155.7 when this was written);
# - dask[distributed] (and the serve extra's starlette, uvicorn, httpx): the test
#   requirements, so that collection does not stop at tests/test_dask.py;
# - tests/test_dask.py's test_core_imports_without_dask now passes the in-place
#   build's directory to its child interpreter (PYTHONPATH).
# mypy is left out: its compiled dependencies have no free-threaded wheels and
# build with Rust. httptools and uvloop too (C extensions that may lack 3.13t
# wheels): zim serve then runs on h11 and asyncio, and the live server's
# httptools case is skipped with its reason.
#
# What stopped it on 3.13t later (issue 31, item 11):
# - --prefer-binary: the newest release of a package may have no cp313t wheel
#   where an older one has (pyarrow 26.0.1 has only an sdist, whose build needs
#   Arrow's C++ and Rust; 24.0.0 has a cp313t wheel): pip then takes the older
#   wheel.  hypothesis and pyarrow are --only-binary: never their sdists.  What
#   has no cp313t wheel in any release (msgpack, PyYAML, tornado when this was
#   written) builds from its sdist with the C compiler, as on any Python;
# - fastapi (tests/test_serve.py's FastAPI example) needs pydantic-core, a Rust
#   extension whose newest releases have no cp313t wheel: it is installed on its
#   own with --only-binary=pydantic-core, so that pip goes back to the newest
#   pydantic whose pydantic-core has one (pydantic 2.12.3 with pydantic-core
#   2.41.4 when this was written), and is left out, saying so, when none has;
#   the example's test then skips with that reason (on a free-threaded build
#   only: elsewhere a missing fastapi fails it). Since issue 43 fastapi and
#   the MCP SDK (mcp>=2.0, whose pydantic-core, cryptography and cffi had no
#   cp313t wheels) are each installed on its own with --only-binary=:all:, and
#   the rules (what is left out, what goes on its own) are in
#   tools/freethreaded_pip.py, whose `check` dry-runs every requirements file;
# - after the suite: the GIL must still be off once libzim.serve and libzim.dask
#   (and libzim.mcp and fastapi, when installed) are imported: an extension
#   module that does not declare Py_MOD_GIL_NOT_USED turns it back on for the
#   whole process.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY313T=${PY313T:-/opt/py313t/bin/python3.13t}
VENV=${FT_VENV:-/tmp/libzim-c-ft}
STRESS=${FT_STRESS_SECONDS:-60}

if [ ! -x "$PY313T" ]; then
    if [ "${FT_BUILD:-0}" = 1 ]; then
        bash "$ROOT/tools/build_freethreaded_python.sh" "$(dirname "$(dirname "$PY313T")")"
    else
        echo "freethreaded_recipe: no $PY313T; build it with" >&2
        echo "  bash tools/build_freethreaded_python.sh   (20-30 min; or rerun with FT_BUILD=1)" >&2
        exit 2
    fi
fi

if [ "${FT_ALLOW_GIL:-0}" != 1 ]; then
    "$PY313T" -c 'import sys; sys.exit(0 if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled() else 1)' || {
        echo "freethreaded_recipe: $PY313T is not a free-threaded interpreter (FT_ALLOW_GIL=1 to go on)" >&2
        exit 2
    }
fi

[ -x "$VENV/bin/python" ] || "$PY313T" -m venv "$VENV"
PY="$VENV/bin/python"

"$PY" -m pip install -q "setuptools>=77" wheel   # the license field needs 77 (requirements-dev.txt)
# The test requirements by tools/freethreaded_pip.py's rules: mypy, httptools and
# uvloop left out; fastapi and mcp each on its own from wheels only, left out
# with a one-line message when no release has a wheel set for 3.13t.
"$PY" "$ROOT/tools/freethreaded_pip.py" install "$ROOT/requirements-test.txt"

cd "$ROOT"
"$PY" setup.py build_ext --inplace -q    # libzim/_libzim.cpython-313t-*.so
"$PY" -c 'import sys, libzim.reader; print("freethreaded_recipe:", sys.version.split()[0], "GIL enabled:",
          getattr(sys, "_is_gil_enabled", lambda: True)(), libzim.__file__)'
"$PY" -m pytest -q -rs -p no:cacheprovider "$@"
# The GIL is still off with the optional parts imported (in a process of its
# own: in the suite's, a test that skipped imported nothing).
[ "${FT_ALLOW_GIL:-0}" = 1 ] || "$PY" - <<'EOF'
import importlib, importlib.util, sys
names = ["libzim.dask", "libzim.serve"]
names += [n for n, sdk in (("libzim.mcp", "mcp"), ("fastapi", "fastapi")) if importlib.util.find_spec(sdk)]
for name in names:
    importlib.import_module(name)
if sys._is_gil_enabled():
    sys.exit("freethreaded_recipe: the GIL is enabled after importing " + ", ".join(names))
print("freethreaded_recipe: the GIL is still disabled after importing " + ", ".join(names))
EOF
if [ "$STRESS" != 0 ]; then
    for threads in 8 16; do
        LIBZIM_C_STRESS_SECONDS=$STRESS LIBZIM_C_STRESS_THREADS=$threads \
            "$PY" -m pytest -q -p no:cacheprovider tests/test_stress.py
    done
fi
