#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
PY=${PYTHON:-python3}
# The stubs must describe the built module exactly. Run from elsewhere so the
# checkout's libzim/ is found once, through the editable install.
root=$PWD
(cd /tmp && MYPYPATH="$root/stubs" "$PY" -m mypy.stubtest libzim \
    --allowlist "$root/stubs/stubtest-allowlist.txt")
"$PY" -m mypy --strict "$root/stubs/libzim"
"$PY" -m pytest -q "$@"
