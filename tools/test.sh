#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
PY=${PYTHON:-python3}
# The stubs (libzim/*.pyi) must describe the built module exactly. Run from
# elsewhere so the checkout's libzim/ is imported once, through the editable install.
root=$PWD
(cd /tmp && MYPYPATH="$root" "$PY" -m mypy.stubtest libzim)
"$PY" -m mypy --strict libzim
"$PY" -m pytest -q "$@"
