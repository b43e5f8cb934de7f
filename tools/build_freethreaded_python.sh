#!/usr/bin/env bash
# Builds a free-threaded CPython 3.13 (python3.13t, --disable-gil) into a prefix
# (default /opt/py313t) so the extension's free-threaded build can be tested.
# Debian packages no free-threaded interpreter and only Debian's package archive
# is reachable from our machines, so the source is Debian 13 "trixie"'s python3.13
# source package, fetched with `apt-get source` through a deb-src entry for trixie
# (sources only: no trixie binary package is installed on the host).
#
# Usage (root or sudo; takes ~20-30 min on 2 cores):
#   bash tools/build_freethreaded_python.sh [PREFIX]      # default /opt/py313t
#   then: bash tools/freethreaded_recipe.sh   (venv, test requirements, in-place
#   build, the suite and the stress runs; FT_BUILD=1 there runs this script first)
# Env: WORKDIR (build tree, default /var/tmp/py313t-build), MIRROR (default: the
# host's deb.debian.org), JOBS (default 2).
set -euo pipefail

PREFIX=${1:-/opt/py313t}
WORKDIR=${WORKDIR:-/var/tmp/py313t-build}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
JOBS=${JOBS:-2}
SRC_LIST=/etc/apt/sources.list.d/libzim-c-trixie-src.sources

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -x "$PREFIX/bin/python3.13t" ]; then
    echo "build_freethreaded_python: $PREFIX/bin/python3.13t already exists" >&2
    exit 0
fi

# Headers of the optional stdlib modules that pip, venv and the tests need
# (ssl for pip's HTTPS, zlib for wheels, ctypes, sqlite3, lzma, bz2, readline).
BUILD_DEPS=(build-essential pkg-config dpkg-dev libssl-dev zlib1g-dev libffi-dev
            libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev libncurses-dev
            uuid-dev libgdbm-dev libexpat1-dev)
if [ ! -f "$SRC_LIST" ]; then
    sudo_ tee "$SRC_LIST" >/dev/null <<EOF
Types: deb-src
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi
sudo_ bash "$(dirname "$0")/apt.sh" install "${BUILD_DEPS[@]}"

mkdir -p "$WORKDIR"
cd "$WORKDIR"
if ! ls -d python3.13-*/ >/dev/null 2>&1; then
    # --skip-patches: Debian's patches retarget the layout to Debian's
    # (dist-packages, multiarch, wheels from /usr/share/python-wheels); a private
    # prefix wants upstream's plain layout and its bundled ensurepip wheel.
    apt-get source -qq --download-only python3.13/trixie
    dpkg-source --skip-patches -x python3.13_*.dsc >/dev/null
fi
cd "$(ls -d python3.13-*/ | head -1)"

# --with-ensurepip=install: `python3.13t -m venv` then gets pip without network.
./configure -q --disable-gil --prefix="$PREFIX" --with-ensurepip=install

nice -n 10 make -s -j"$JOBS"
sudo_ make -s install >/dev/null

"$PREFIX/bin/python3.13t" - <<'EOF'
import sys, sysconfig, ssl, ctypes, sqlite3, lzma, bz2, zlib, venv
assert not sys._is_gil_enabled(), "GIL is enabled"
assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1
print("build_freethreaded_python: ok", sys.version, ssl.OPENSSL_VERSION)
EOF
