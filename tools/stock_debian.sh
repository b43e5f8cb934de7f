#!/usr/bin/env bash
# The README's two set-up commands, verbatim, on a stock Debian: what a fresh server,
# VM or container gives a user, not our machines' own python3 with pip.
#
#   bash tools/stock_debian.sh SUITE [--root] [--shared] [--wheel] [--keep] [--only demo|test]
#     SUITE     bookworm (Debian 12) or trixie (Debian 13)
#     --root    run the commands as root (default: as "debian", a sudo user, as on a VM)
#     --shared  put ../shared/zim-testing-suite beside the clone and require it
#               (LIBZIM_C_REQUIRE_TEST_DATA=1); default: a bare clone, nothing beside it
#     --wheel   LIBZIM_C_WHEEL=1 for the test command (its sdist/wheel stage too)
#     --keep    keep this run's tree (printed) instead of deleting it
#     --only    run one of the two commands
#     --prepare only make the stock tree if it is missing (CI does it early, in the background)
#
# The stock tree is debootstrap --variant=minbase plus git, sudo, ca-certificates and
# python3 (Debian's own; no pip, no venv module, PEP 668), made once under
# $LIBZIM_C_STOCK_DIR (default /var/tmp/libzim-c-stock/SUITE) and reused. Each run
# works in an overlay on it, so the tree stays stock and every run starts from it.
# The commands are read from the README's text (tools/readme_commands.py), so the
# README and this check cannot drift apart. The committed HEAD is cloned in (git clone:
# what a user has). Afterwards it checks that nothing was installed into the system
# interpreter. Needs root (or sudo) on the host: debootstrap, mounts, chroot.
# Apt's and pip's downloads are kept in $LIBZIM_C_STOCK_DIR/cache (a rerun fetches less;
# what is installed is the same). Mounts live in a private mount namespace: they vanish
# with the run however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

usage() { sed -n '5,13p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
SUITE=$1; shift
case $SUITE in bookworm|trixie) ;; *) usage ;; esac
as_root=0 shared=0 wheel=0 keep=0 only= prepare=0
while [ $# -gt 0 ]; do
    case $1 in
        --root) as_root=1 ;;
        --shared) shared=1 ;;
        --wheel) wheel=1 ;;
        --keep) keep=1 ;;
        --only) only=${2:?--only demo|test}; shift ;;
        --prepare) prepare=1 ;;
        *) usage ;;
    esac
    shift
done

if [ "$(id -u)" != 0 ]; then exec sudo -E bash "$0" "$SUITE" "${@}" \
    $([ $as_root = 1 ] && echo --root) $([ $shared = 1 ] && echo --shared) \
    $([ $wheel = 1 ] && echo --wheel) $([ $keep = 1 ] && echo --keep) ${only:+--only "$only"} \
    $([ $prepare = 1 ] && echo --prepare); fi

STOCK=${LIBZIM_C_STOCK_DIR:-/var/tmp/libzim-c-stock}
BASE=$STOCK/$SUITE
MIRROR=${LIBZIM_C_DEBIAN_MIRROR:-http://deb.debian.org/debian}
DATA=${LIBZIM_C_TEST_DATA:-$REPO/../shared/zim-testing-suite}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
say() { echo "stock_debian($SUITE): $*" >&2; }
start=$SECONDS

# The commands, from the README (fails when the README does not hold exactly two).
demo_cmd=$(python3 tools/readme_commands.py demo)
test_cmd=$(python3 tools/readme_commands.py test)
[ $shared = 0 ] || [ -f "$DATA/nons/small.zim" ] || { say "no ZIM test data at $DATA (--shared)"; exit 1; }

command -v debootstrap >/dev/null || {
    bash tools/apt.sh install debootstrap
}
mkdir -p "$STOCK"
# Runs of earlier, killed checks: their overlays were unmounted with their namespace.
for stale in "$STOCK"/run-"$SUITE"-*; do
    [ -d "$stale" ] || continue
    pid=${stale##*-}
    kill -0 "$pid" 2>/dev/null || rm -rf --one-file-system "$stale"
done
if [ ! -e "$BASE/.libzim-c-stock" ]; then
    say "debootstrap --variant=minbase $SUITE into $BASE (once; 2-5 minutes)"
    rm -rf --one-file-system "$BASE" "$BASE.tmp"
    debootstrap --variant=minbase --include=git,sudo,ca-certificates,python3 "$SUITE" "$BASE.tmp" "$MIRROR" \
        >"$STOCK/$SUITE.debootstrap.log" 2>&1 || { tail -20 "$STOCK/$SUITE.debootstrap.log" >&2; exit 1; }
    rm -f "$BASE.tmp"/var/cache/apt/archives/*.deb
    date -u >"$BASE.tmp/.libzim-c-stock"
    mv "$BASE.tmp" "$BASE"
fi
if [ $prepare = 1 ]; then say "stock tree ready: $BASE"; exit 0; fi

run=$STOCK/run-$SUITE-$$
mkdir -p "$run/upper" "$run/work" "$run/root" "$run/src" "$STOCK/cache/$SUITE/apt" "$STOCK/cache/$SUITE/pip"
cleanup() { [ $keep = 1 ] || rm -rf --one-file-system "$run"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# What goes in: the committed HEAD (a clone, with nothing beside it unless --shared).
git clone -q --no-hardlinks "$REPO" "$run/src/libzim-c"
say "$(git -C "$run/src/libzim-c" log -1 --format='%h %s' | cut -c1-70)"
[ $shared = 0 ] || cp -r "$DATA" "$run/src/zim-testing-suite"

if [ $as_root = 1 ]; then user=root home=/root; else user=debian home=/home/debian; fi
inner=$(cat <<'EOF'
set -euo pipefail
run=$1 base=$2 cache=$3 user=$4 home=$5 shared=$6 ca=$7
root=$run/root
mount -t overlay overlay -o "lowerdir=$base,upperdir=$run/upper,workdir=$run/work" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --bind "$cache/apt" "$root/var/cache/apt/archives"
# What a networked machine has: a resolver, its own name in /etc/hosts, and here the
# host's CA bundle for pip (the network may pass through a proxy with its own CA).
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
grep -qw "$(hostname)" "$root/etc/hosts" || echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"  # sudo looks it up
install -m 644 "$ca" "$root/etc/ssl/certs/host-ca-bundle.crt"
if [ "$user" != root ]; then
    chroot "$root" useradd -m -s /bin/bash "$user"
    echo "$user ALL=(ALL) NOPASSWD:ALL" >"$root/etc/sudoers.d/$user"
    chmod 440 "$root/etc/sudoers.d/$user"
fi
mkdir -p "$root$home/.cache/pip"
mount --bind "$cache/pip" "$root$home/.cache/pip"
cp -a "$run/src/libzim-c" "$root$home/libzim-c"
if [ "$shared" = 1 ]; then
    mkdir -p "$root$home/shared"
    cp -a "$run/src/zim-testing-suite" "$root$home/shared/zim-testing-suite"
fi
chroot "$root" chown -R "$user:" "$home"
# The system interpreter as it was, to compare with afterwards.
chroot "$root" sh -c 'ls -d /usr/local/lib/python3*/dist-packages/* /usr/lib/python3/dist-packages/* 2>/dev/null | sort' \
    >"$run/system-before"
EOF
)
commands=$(cat <<'EOF'
set -euo pipefail
export LANG=C.UTF-8 SSL_CERT_FILE=/etc/ssl/certs/host-ca-bundle.crt PIP_CERT=/etc/ssl/certs/host-ca-bundle.crt
cd ~/libzim-c
echo "stock_debian: $(. /etc/os-release; echo "$PRETTY_NAME"), $(python3 -V), as $(id -un)$(python3 -m pip -V >/dev/null 2>&1 || echo ', no pip')" >&2
for which in $RUN; do
    if [ "$which" = demo ]; then cmd=$DEMO_CMD; else cmd=$TEST_CMD; fi
    echo "stock_debian: \$ $cmd" >&2
    t0=$SECONDS
    bash -c "$cmd" || { echo "stock_debian: FAILED ($((SECONDS - t0)) s): $cmd" >&2; exit 1; }
    echo "stock_debian: passed ($((SECONDS - t0)) s): $cmd" >&2
done
EOF
)
check=$(cat <<'EOF'
set -euo pipefail
run=$1 root=$1/root
chroot "$root" sh -c 'ls -d /usr/local/lib/python3*/dist-packages/* /usr/lib/python3/dist-packages/* 2>/dev/null | sort' \
    >"$run/system-after"
if ! cmp -s "$run/system-before" "$run/system-after"; then
    echo "stock_debian: the commands installed into the system interpreter:" >&2
    diff "$run/system-before" "$run/system-after" >&2 || true
    exit 1
fi
if chroot "$root" sh -c 'cd / && python3 -c "import libzim"' 2>/dev/null; then
    echo "stock_debian: the system python3 imports libzim: something was installed into it" >&2
    exit 1
fi
EOF
)
run_list=${only:-demo test}
env_list=(LIBZIM_C_WHEEL=$wheel LIBZIM_C_REQUIRE_TEST_DATA=$shared "RUN=$run_list" "DEMO_CMD=$demo_cmd" "TEST_CMD=$test_cmd")
unshare --mount --propagation private bash -c '
    set -euo pipefail
    inner=$1 commands=$2 check=$3 run=$4 base=$5 cache=$6 user=$7 home=$8 shared=$9 ca=${10}; shift 10
    bash -c "$inner" inner "$run" "$base" "$cache" "$user" "$home" "$shared" "$ca"
    chroot "$run/root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$home" \
        "$@" /usr/sbin/runuser -u "$user" -- /usr/bin/env HOME="$home" USER="$user" bash -c "$commands"
    bash -c "$check" check "$run"
' stock "$inner" "$commands" "$check" "$run" "$BASE" "$STOCK/cache/$SUITE" "$user" "$home" "$shared" "$CA_BUNDLE" \
    "${env_list[@]}"
say "passed in $((SECONDS - start)) s (as $user$([ $shared = 1 ] && echo ', with the shared archives'))"
[ $keep = 0 ] || say "kept: $run"
