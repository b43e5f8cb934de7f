#!/usr/bin/env bash
# Sets up libzim-c on Debian 12 "bookworm" or 13 "trixie", as root or as a sudo user:
#   1. the Debian packages it builds against (apt, through sudo when not root);
#   2. a virtual environment of this clone's own, .venv (git-ignored), made from the
#      system python3: Debian's python3 has no pip and refuses `pip install` outside a
#      venv (PEP 668, in both releases), and the system interpreter is not ours to fill;
#   3. this checkout installed into it, editable, with the serve extra: `.venv/bin/zim`
#      (demo, search, serve, ...) and `.venv/bin/python` then work.
# Nothing is installed into the system interpreter. The test tools (pytest, mypy,
# pyright, dask, ...) are tools/test.sh's business, not the demo's.
# Idempotent: a second run checks and returns in a few seconds.
#
# Env: LIBZIM_C_VENV  the venv (default ./.venv)
#      PYTHON         an interpreter of your own to install into instead (a venv's
#                     python, say); no .venv is made then
#      LIBZIM_C_BASE_PYTHON  the interpreter .venv is made from (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-doc pulls the default Python's documentation (python3.11-doc on 12,
# python3.13-doc on 13), which the demo and the search fixtures index; zim-tools
# writes the demo archive.
APT_PACKAGES=(libzim-dev libxapian-dev libicu-dev libzstd-dev liblzma-dev libdeflate-dev python3-dev python3-venv zim-tools pkg-config
              build-essential python3-doc)

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

STEP_PREFIX=bootstrap
. tools/steps.sh

step_start "Debian packages"
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]} (apt-get$([ "$(id -u)" = 0 ] || echo ', through sudo'))" >&2
    sudo_ bash tools/apt.sh install "${missing[@]}"
    step_done "Debian packages: installed ${missing[*]}"
else
    step_done "Debian packages: all ${#APT_PACKAGES[@]} installed already"
fi

make_venv

# setuptools and wheel, which the editable build needs (no build isolation: a
# second run must not fetch a build environment again).
pip_requirements requirements-build.txt

# The extension, built in place, and this checkout installed editable with the serve
# extra. Rebuilding takes half a minute, so it is skipped when nothing it depends on
# changed: the editable install is this checkout's (found without importing it), the
# serve extra is there, and the built module is newer than every source file and the
# build configuration.
step_start "libzim extension (pip install -e '.[serve]')"
editable_here() {
    local root=$PWD
    (cd / && "$PY" -c 'import importlib.util as u, sys; s = u.find_spec("libzim")
sys.exit(not (s and s.origin and s.origin.startswith(sys.argv[1] + "/libzim/") and u.find_spec("starlette")))' "$root") \
        2>/dev/null
}
so=libzim/_libzim$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
if ! editable_here || [ -n "$(find setup.py pyproject.toml -newer "$so" 2>/dev/null)" ] || [ ! -e "$so" ]; then
    echo "bootstrap: building the extension (compiles src/, about 40 s on 2 cores; longer on a busy machine)" >&2
    "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation -e '.[serve]'
    step_done "libzim extension: built and installed editable into $VENV_SHOWN"
elif [ -n "$(find src -newer "$so" -type f | head -1)" ]; then
    # Sources changed, the install did not: rebuild in place, on every core.
    echo "bootstrap: rebuilding the extension in place (sources changed; up to 40 s on 2 cores)" >&2
    "$PY" setup.py -q build_ext --inplace -j "$(nproc)" >/dev/null
    step_done "libzim extension: sources changed, rebuilt in place"
else
    step_done "libzim extension: up to date ($so newer than src/)"
fi
if [ -z "${PYTHON:-}" ]; then
    echo "bootstrap: ready: $VENV_SHOWN/bin/zim --help, or . $VENV_SHOWN/bin/activate for python and zim" >&2
fi
