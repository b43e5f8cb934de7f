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

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    sudo_ apt-get update -qq
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

"$PY" -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# No build isolation: the build needs only setuptools, installed just above.
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation -e .

# The reference python-libzim 3.13.1 from PyPI, in its own venv: it writes the
# ZIM 6.3 archives (libzim 9) that tests/test_zim63.py reads, from this location,
# and tests/test_writer_oracle.py compares the writer with it.
ORACLE=${LIBZIM_C_ORACLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libzim-c/python-libzim-3.13.1}
if ! "$ORACLE/bin/python" -I -c 'import libzim.writer, importlib.metadata as m; assert m.version("libzim") == "3.13.1"' \
        2>/dev/null; then
    echo "bootstrap: installing python-libzim 3.13.1 into $ORACLE" >&2
    "$PY" -m venv "$ORACLE"
    "$ORACLE/bin/python" -m pip install -q --disable-pip-version-check "libzim==3.13.1"
fi
