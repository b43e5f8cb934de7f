#!/usr/bin/env bash
# Installs Debian packages for the project's scripts:
# `tools/apt.sh install [APT-GET-OPTION...] PKG...`, or `tools/apt.sh update` after a
# script adds a source.
# (as root; callers go through sudo when they are not). Every script that needs a
# package comes here rather than calling apt-get itself, because:
#   - our scripts run concurrently (CI prepares the trixie tree in the background
#     while the bookworm check runs; both may need debootstrap), and `apt-get update`
#     does not wait for the lists lock: it fails at once with exit code 100
#     (DPkg::Lock::Timeout covers only dpkg's lock; apt 2.6, measured). One flock of
#     our own serialises our calls;
#   - another holder (unattended-upgrades, a user's apt) is waited for: update is
#     retried while the lock is busy, for at most LIBZIM_C_APT_WAIT seconds (600);
#   - a dpkg run cut short before is finished (dpkg --configure -a) once;
#   - under the lock the list is checked again, so the second of two concurrent
#     installs of the same package does nothing.
# Output of apt-get goes to stderr only when it fails.
# Env: LIBZIM_C_APT_WAIT (seconds, 600), LIBZIM_C_APT_LOCK (our lock file; tests).
set -euo pipefail
cmd=${1:-}
case $cmd in install|update) shift ;; *) echo "usage: tools/apt.sh install [APT-GET-OPTION...] PKG... | update" >&2; exit 2 ;; esac
opts=() pkgs=()
for a in "$@"; do case $a in -*) opts+=("$a") ;; *) pkgs+=("$a") ;; esac; done
[ "$cmd" = update ] || [ ${#pkgs[@]} -gt 0 ] || exit 0
WAIT=${LIBZIM_C_APT_WAIT:-600}
LOCK=${LIBZIM_C_APT_LOCK:-/var/lib/apt/libzim-c.lock}  # on disk wherever apt is (a chroot may lack /run/lock)

missing_of() {
    local p out=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
    done
    echo "${out[@]:-}"
}

exec 9>"$LOCK"
flock -w "$WAIT" 9 || { echo "apt.sh: another of our apt runs held the lock for ${WAIT}s" >&2; exit 1; }
missing=()
[ "$cmd" = update ] || read -r -a missing <<<"$(missing_of "${pkgs[@]}")"
[ "$cmd" = update ] || [ ${#missing[@]} -gt 0 ] || exit 0

configured=0
# Runs apt-get, retrying while a process outside ours holds an apt or dpkg lock.
apt_retry() {
    local deadline=$((SECONDS + WAIT)) log
    log=$(mktemp /tmp/libzim-c-apt.XXXXXX)
    while :; do
        if DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$WAIT" "$@" >"$log" 2>&1; then
            rm -f "$log"
            return 0
        fi
        if grep -q "Could not get lock" "$log" && [ $SECONDS -lt $deadline ]; then
            sleep 3
            continue
        fi
        # A machine image whose dpkg run was cut short (seen here: man-db half
        # configured) refuses every install until this, which apt itself prescribes.
        if grep -q "dpkg was interrupted" "$log" && [ "$configured" = 0 ]; then
            echo "apt.sh: dpkg was interrupted before; running dpkg --configure -a" >&2
            configured=1
            DEBIAN_FRONTEND=noninteractive dpkg --configure -a >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; return 1; }
            continue
        fi
        cat "$log" >&2
        rm -f "$log"
        return 1
    done
}

apt_retry update -qq
[ "$cmd" = update ] || apt_retry install -y -qq "${opts[@]}" "${missing[@]}"
