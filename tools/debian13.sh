#!/usr/bin/env bash
# Runs the project's test command (tools/test.sh) in a Debian 13 "trixie" tree:
# libzim 9.2.3, Python 3.13 -- what users of current Debian stable build against.
# The tree is made with debootstrap from Debian's archive and reused by later runs;
# the checkout's committed HEAD (a git clone) and the ZIM test data are copied in.
#
# Usage (root or sudo):  bash tools/debian13.sh [pytest args...]
# Env: DEB13_ROOT   the trixie tree (default /var/tmp/libzim-c-deb13; outside the
#                   repository so pytest and git never walk it)
#      DEB13_MIRROR Debian mirror (default http://deb.debian.org/debian)
#      DEB13_FRESH=1 delete the tree first (from-scratch run, as on CI)
#      DEB13_WORKTREE=1 copy the work tree (uncommitted edits too) instead of HEAD
#      LIBZIM_C_WHEEL=1 passed on to tools/test.sh (runs its sdist/wheel stage too;
#                   LIBZIM_C_SKIP_INSTALLED=1, also passed on, turns it off)
#      LIBZIM_C_TEST_DATA (or ZIM_TESTING_SUITE) the zim-testing-suite data to copy in
#                   (default ../shared/zim-testing-suite); inside, the tests find it at
#                   ../shared/zim-testing-suite and require it (LIBZIM_C_REQUIRE_TEST_DATA=1)
# Mounts (/proc, /dev with /dev/pts and /dev/shm) live in a private mount namespace, so they vanish
# with the run whatever way it ends and never touch the host's mounts.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

ROOT=${DEB13_ROOT:-/var/tmp/libzim-c-deb13}
MIRROR=${DEB13_MIRROR:-http://deb.debian.org/debian}
SUITE=${ZIM_TESTING_SUITE:-${LIBZIM_C_TEST_DATA:-$REPO/../shared/zim-testing-suite}}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# The packages tools/bootstrap.sh asks for on Debian 13, plus python3-venv: trixie's
# python3 is externally managed (PEP 668), so pip only runs inside a venv.
PACKAGES=libzim-dev,libxapian-dev,libicu-dev,libzstd-dev,liblzma-dev,python3-dev,python3-venv,zim-tools,pkg-config,build-essential,python3-doc,ca-certificates,git

if [ "$(id -u)" != 0 ]; then exec sudo -E bash "$0" "$@"; fi

[ -f "$SUITE/nons/small.zim" ] || { echo "debian13: no ZIM test data at $SUITE" >&2; exit 1; }
command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

[ "${DEB13_FRESH:-0}" = 1 ] && rm -rf --one-file-system "$ROOT"
if [ ! -x "$ROOT/usr/bin/zimwriterfs" ]; then
    rm -rf --one-file-system "$ROOT"
    echo "debian13: debootstrap trixie into $ROOT" >&2
    debootstrap --variant=minbase --include="$PACKAGES" trixie "$ROOT" "$MIRROR" \
        >"${ROOT%/}.debootstrap.log" 2>&1 ||
        { tail -20 "${ROOT%/}.debootstrap.log" >&2; exit 1; }
fi

# pip inside reaches PyPI through the same network as the host, so it needs the
# host's CA bundle (it may hold a proxy's CA that Debian's bundle lacks).
install -m 644 "$CA_BUNDLE" "$ROOT/etc/ssl/certs/host-ca-bundle.crt"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

# The tests find their data at ../shared/zim-testing-suite next to the checkout.
rm -rf "$ROOT/work"
mkdir -p "$ROOT/work/libzim-c" "$ROOT/work/shared"
cp -r "$SUITE" "$ROOT/work/shared/zim-testing-suite"
# A clone, not an export: the sdist check (tools/check_dist.py) asks git what is tracked.
rmdir "$ROOT/work/libzim-c"
git clone -q --no-hardlinks "$REPO" "$ROOT/work/libzim-c"
if [ "${DEB13_WORKTREE:-0}" = 1 ]; then
    tar -C "$REPO" --exclude=./build --exclude='*.so' --exclude=./.git --exclude='*.egg-info' \
        -cf - . | tar -C "$ROOT/work/libzim-c" -xf -
fi

inner=$(cat <<'EOF'
set -euo pipefail
export SSL_CERT_FILE=/etc/ssl/certs/host-ca-bundle.crt PIP_CERT=/etc/ssl/certs/host-ca-bundle.crt
export HOME=/root LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1
# Trees made before git joined $PACKAGES get it here.
command -v git >/dev/null || { apt-get update -qq && apt-get install -y -qq git >/dev/null; }
[ -x /opt/venv/bin/python ] || python3 -m venv /opt/venv
cd /work/libzim-c
echo "debian13: $(. /etc/os-release; echo "$PRETTY_NAME"), $(/opt/venv/bin/python -V)," \
     "libzim $(pkg-config --modversion libzim)" >&2
PYTHON=/opt/venv/bin/python bash tools/test.sh "$@"
EOF
)
unshare --mount --propagation private bash -c '
    set -e
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        LIBZIM_C_WHEEL="${LIBZIM_C_WHEEL:-}" LIBZIM_C_SKIP_INSTALLED="${LIBZIM_C_SKIP_INSTALLED:-}" \
        LIBZIM_C_REQUIRE_TEST_DATA=1 \
        bash -c "$0" bash "$@"
' "$inner" "$ROOT" "$@"
