#!/usr/bin/env bash
# zim serve in a real browser: tests/browser_serve.py drives Debian's headless
# Chromium with Selenium against `python -m libzim serve` on 127.0.0.1.
# Installs what it needs (apt: chromium, chromium-driver; pip: requirements-browser.txt)
# and tests this checkout's in-place build (tools/bootstrap.sh makes it).
#   bash tools/browser_test.sh [PYTEST ARGS]
# Screenshots go to $LIBZIM_C_BROWSER_SHOTS (default: a new folder under /tmp, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_PREFIX=browser_test
. tools/steps.sh
need_venv
sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

step_start "chromium and chromium-driver"
missing=()
for p in chromium chromium-driver; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo_ bash tools/apt.sh install "${missing[@]}"
    step_done "installed ${missing[*]}"
else
    step_done "chromium and chromium-driver: installed already"
fi
pip_requirements requirements-browser.txt
export LIBZIM_C_BROWSER_SHOTS=${LIBZIM_C_BROWSER_SHOTS:-$(mktemp -d /tmp/libzim-c-browser.XXXXXX)}
echo "browser_test: screenshots in $LIBZIM_C_BROWSER_SHOTS" >&2
step "pytest tests/browser_serve.py" "$PY" -m pytest -q -p no:cacheprovider tests/browser_serve.py "$@"
