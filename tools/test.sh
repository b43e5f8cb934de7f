#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs, builds, tests.
#   bash tools/test.sh [PYTEST ARGS]      LIBZIM_C_SKIP_INSTALLED=1 skips the second stage
# Stage 1 tests the in-place build of this checkout; stage 2 builds the sdist and a
# wheel from it, installs that into a fresh venv and tests the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
PY=${PYTHON:-python3}
root=$PWD

# The stubs (libzim/*.pyi) must describe the built module exactly. Run from
# elsewhere so the checkout's libzim/ is imported once, through the editable install.
(cd /tmp && MYPYPATH="$root" "$PY" -m mypy.stubtest libzim)
"$PY" -m mypy --strict libzim
"$PY" -m pytest -q "$@"

[ "${LIBZIM_C_SKIP_INSTALLED:-}" = 1 ] && exit 0
start=$SECONDS
work=$(mktemp -d /tmp/libzim-c-dist.XXXXXX)
trap 'rm -rf "$work"' EXIT
# As a user gets it: sdist, then a wheel built from it with build isolation.
"$PY" -m build --sdist --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$work/dist"/*.tar.gz
"$PY" tools/check_dist.py "$work/dist"
"$PY" -m venv "$work/venv"
venv_py=$work/venv/bin/python
# The suite's imports (hypothesis, ...), as in stage 1; the build and type-check tools stay outside.
"$venv_py" -m pip install -q --disable-pip-version-check "$work/dist"/*.whl -r "$root/requirements-test.txt"
cd "$work"  # nothing of the checkout on sys.path from here on
"$venv_py" -m mypy.stubtest libzim
# The README's example, type-checked against the installed package's stubs.
"$venv_py" -m mypy --strict "$root/examples/usage.py"
"$PY" -m pyright --pythonpath "$venv_py" "$root/examples/usage.py"
LIBZIM_C_TEST_INSTALLED=1 "$venv_py" -m pytest -q -p no:cacheprovider "$root/tests" "$@"
echo "installed-package stage: $((SECONDS - start)) s"
