#!/usr/bin/env bash
# .ci/run's free-threaded stage: when the free-threaded interpreter is built on
# this machine (tools/build_freethreaded_python.sh's prefix, /opt/py313t), the
# recipe (tools/freethreaded_recipe.sh: its venv of the test requirements, the
# in-place build, the whole suite, the GIL check, stress runs at 8 and 16
# threads) with short stress runs, failing when it fails: a new dependency
# that stops installing on 3.13t then fails CI that day (issue 43). Adds 5-10
# min on 2 cores. When the interpreter is absent: one line, and exit 0
# (building it takes 15-40 min, too long for CI's 90).
# Env: PY313T (default /opt/py313t/bin/python3.13t), FT_STRESS_SECONDS (default 15).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY313T=${PY313T:-/opt/py313t/bin/python3.13t}

if [ ! -f "$PY313T" ] || [ ! -x "$PY313T" ]; then
    echo "freethreaded_ci: skipped: no free-threaded interpreter at $PY313T (bash tools/build_freethreaded_python.sh builds it)"
    exit 0
fi
echo "freethreaded_ci: the free-threaded recipe with $PY313T"
PY313T=$PY313T FT_STRESS_SECONDS=${FT_STRESS_SECONDS:-15} bash "$ROOT/tools/freethreaded_recipe.sh"
