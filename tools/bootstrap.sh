#!/usr/bin/env bash
# Installs what libzim-c needs on Debian 12 "bookworm" or 13 "trixie" (root or sudo)
# and builds the extension in place. Idempotent: installed packages are not fetched
# again. python3-doc pulls the default Python's documentation (python3.11-doc on 12,
# python3.13-doc on 13), which the search fixtures and the demo index.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(libzim-dev libxapian-dev libicu-dev libzstd-dev liblzma-dev python3-dev python3-venv zim-tools pkg-config
              build-essential python3-doc)
PY=${PYTHON:-python3}

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

STEP_PREFIX=bootstrap
. tools/steps.sh

step_start "Debian packages"
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    step_done "Debian packages: installed ${missing[*]}"
else
    step_done "Debian packages: all ${#APT_PACKAGES[@]} installed already"
fi

pip_requirements requirements-dev.txt

# The extension, built in place, and this checkout installed editable. Rebuilding
# takes half a minute, so it is skipped when nothing it depends on changed: the
# editable install is this checkout's (found without importing it), and the built
# module is newer than every source file and the build configuration.
step_start "libzim extension (pip install -e .)"
editable_here() {
    local root=$PWD
    (cd / && "$PY" -c 'import importlib.util as u, sys; s = u.find_spec("libzim")
sys.exit(not (s and s.origin and s.origin.startswith(sys.argv[1] + "/libzim/")))' "$root") 2>/dev/null
}
so=libzim/_libzim$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
if ! editable_here || [ -n "$(find setup.py pyproject.toml -newer "$so" 2>/dev/null)" ] || [ ! -e "$so" ]; then
    # No build isolation: the build needs only setuptools, installed just above.
    echo "bootstrap: building the extension (compiles src/, about 40 s on 2 cores; longer on a busy machine)" >&2
    "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation -e .
    step_done "libzim extension: built and installed editable"
elif [ -n "$(find src -newer "$so" -type f | head -1)" ]; then
    # Sources changed, the install did not: rebuild in place, on every core.
    echo "bootstrap: rebuilding the extension in place (sources changed; up to 40 s on 2 cores)" >&2
    "$PY" setup.py -q build_ext --inplace -j "$(nproc)" >/dev/null
    step_done "libzim extension: sources changed, rebuilt in place"
else
    step_done "libzim extension: up to date ($so newer than src/)"
fi

# The reference python-libzim 3.13.1 from PyPI, in its own venv: it writes the
# ZIM 6.3 archives (libzim 9) that tests/test_zim63.py reads, from this location,
# and tests/test_writer_oracle.py compares the writer with it.
ORACLE=${LIBZIM_C_ORACLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libzim-c/python-libzim-3.13.1}
step_start "reference python-libzim 3.13.1"
if ! "$ORACLE/bin/python" -I -c 'import libzim.writer, importlib.metadata as m; assert m.version("libzim") == "3.13.1"' \
        2>/dev/null; then
    "$PY" -m venv "$ORACLE"
    "$ORACLE/bin/python" -m pip install -q --disable-pip-version-check "libzim==3.13.1"
    step_done "reference python-libzim 3.13.1: installed into $ORACLE"
else
    step_done "reference python-libzim 3.13.1: installed already ($ORACLE)"
fi
