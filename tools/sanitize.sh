#!/usr/bin/env bash
# Sanitizer mode: the extension built with AddressSanitizer + UndefinedBehavior-
# Sanitizer (gcc), and the test suite run against that build.
#
#   bash tools/sanitize.sh                 # the whole suite
#   bash tools/sanitize.sh --ci            # what CI runs: a subset of the suite and a
#                                          # short leak check, one build (a few minutes)
#   bash tools/sanitize.sh --leak          # leak mode, see tools/leakcheck.py: the plain build
#                                          # (RSS, objects), then LeakSanitizer on the ASan build
#   bash tools/sanitize.sh -- -k search    # extra pytest (or leakcheck) arguments after --
#
# Python itself is not instrumented: libasan is preloaded into every Python
# process (LD_PRELOAD, inherited by the suite's child processes), and every
# sanitizer report of every process is written to a file under the log
# directory (ASAN_OPTIONS/UBSAN_OPTIONS log_path), never only to a stderr a
# test may have captured.  Any report file fails the run, whatever pytest
# said.  Before the tests, a deliberate heap overflow in a child process
# proves that reports do reach the log directory.
#
# The build goes to a copy of the checkout (next to a symlink to ../shared, where
# the tests find the shared archives; LIBZIM_C_TEST_DATA, if set, wins), so the
# normal in-place build is left alone.
# Needs gcc's libasan/libubsan (Debian: libasan8, libubsan1; installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mode=full
pytest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) mode=ci ;;
        --leak) mode=leak ;;
        --full) mode=full ;;
        --) shift; pytest_args=("$@"); break ;;
        *) echo "usage: $0 [--ci|--full|--leak] [-- pytest args]" >&2; exit 2 ;;
    esac
    shift
done

# The tests that drive the native code hardest, within a few minutes under
# ASan on the 2-core CI machine; the full mode runs everything. test_cache.py:
# archives, searchers and suggestion searchers closed and dropped by zim serve's
# caches while other threads still search and read them.
CI_TESTS=(tests/test_reader.py tests/test_local_archives.py tests/test_faults.py tests/test_fuzz_regressions.py
          tests/test_corrupt.py tests/test_suggestion.py tests/test_races.py tests/test_stress.py
          tests/test_writer.py tests/test_writer_failures.py tests/test_clusters.py
          tests/test_cluster_damage.py tests/test_text.py tests/test_cache.py)
# And a slice of the cluster fuzzer (tools/fuzz_clusters.py): crashes, hangs
# and sanitizer reports only (the oracle would load ASan too; ASan's shadow
# memory rules out an address-space limit).
FUZZ_CASES=${LIBZIM_C_SANITIZE_FUZZ_CASES:-80}

bash tools/bootstrap.sh
STEP_PREFIX=sanitize
. tools/steps.sh
need_venv
pip_requirements requirements-test.txt  # pytest and what the suite imports
# The interpreter itself, not a wrapper script (pyenv shims are shell scripts),
# but keep a venv's path: its site-packages hold pytest.
PYEXE=$("$PY" -c 'import sys; print(sys.executable)')

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
gccver=$(gcc -dumpversion | cut -d. -f1)
libasan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
if [ ! -e "$libasan" ] || [ ! -e "$(gcc -print-file-name=libubsan.so)" ]; then
    sudo_ bash tools/apt.sh install "libgcc-$gccver-dev"
    libasan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/libzim-c-sanitize.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
copy=$work/libzim-c
logs=$work/reports
mkdir -p "$copy" "$logs"
# Tracked and new (unignored) files: what a commit of this checkout would hold.
git ls-files -z -co --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$copy")
ln -s "$(readlink -f "$root/../shared")" "$work/shared"

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -g"
echo "sanitize: building with $flags (gcc $gccver) in $copy" >&2
(cd "$copy" && CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" \
    "$PYEXE" setup.py -q build_ext --inplace >"$work/build.log" 2>&1) || {
    cat "$work/build.log" >&2
    exit 1
}
so=$(ls "$copy"/libzim/_libzim*.so)
ldd "$so" | grep libasan >/dev/null || { echo "sanitize: $so is not linked with libasan" >&2; exit 1; }

if [ "$mode" = leak ]; then
    # The plain build first: resident memory means something only there.
    "$PY" tools/leakcheck.py "${pytest_args[@]}" || { echo "sanitize: plain-build leak check failed" >&2; exit 1; }
fi

# detect_leaks=0 in the suite: CPython frees little at exit by design, and
# the leak mode below measures leaks where they can be told apart.
# handle_segv=0: some tests crash a child on purpose (the Xapian crash that
# check_untrusted() exists for) and expect it to die of SIGSEGV; ASan would
# turn that into its own exit and report.  A segfault anywhere else still
# fails its test (the process dies; faulthandler prints where).
# Not halting on UBSan reports lets one run collect all of them; each still
# fails the run through its log file.
# libstdc++ too: Python does not link it, and ASan resolves the real
# __cxa_throw only from libraries loaded with it (else the first C++ throw
# stops the process with "CHECK failed ... real___cxa_throw").
libstdcxx=$(readlink -f "$(gcc -print-file-name=libstdc++.so)")
export LD_PRELOAD="$libasan $libstdcxx"
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=0:abort_on_error=0:strict_init_order=1:detect_stack_use_after_return=0:handle_segv=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=0"
# Every Python allocation through malloc, so that ASan sees Python's memory
# too: a read of a freed object or of a list's moved item array is reported,
# not served silently from pymalloc's pools.
export PYTHONMALLOC=malloc
# Children (python -m libzim, python -c) import this build, not the editable one.
export PYTHONPATH=$copy
export PYTHONFAULTHANDLER=1

check_reports() {
    local found
    found=$(find "$logs" -type f | sort)
    if [ -n "$found" ]; then
        echo "sanitize: $(echo "$found" | wc -l) sanitizer report file(s):" >&2
        for f in $found; do
            echo "==== $f" >&2
            head -c 20000 "$f" >&2
        done
        return 1
    fi
}

# The reports must be able to reach us: a child that overflows a heap
# buffer through an intercepted memmove must leave a report file.
"$PYEXE" -c '
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
p = libc.malloc(16)
ctypes.memmove(p, b"x" * 64, 64)
' >/dev/null 2>&1 || true
if ! grep -l "heap-buffer-overflow"  "$logs"/asan.* >/dev/null 2>&1; then
    echo "sanitize: the self-check overflow left no report in $logs: reports would be lost" >&2
    exit 1
fi
rm -f "$logs"/*

# Leak checks run mid-run (tools/leakcheck.py), not at exit, where CPython
# leaves much allocated on purpose; PYTHONMALLOC=malloc (above) lets
# LeakSanitizer see the pointers Python objects hold.  Its own reports go to their own
# directory: leakcheck compares them, they are not failures by themselves.
lsan_check() {
    (export ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=0/detect_leaks=1}" \
        LSAN_OPTIONS="leak_check_at_exit=0" LEAKCHECK_REPORTS=$work/leak
     mkdir -p "$LEAKCHECK_REPORTS"
     "$PYEXE" tools/leakcheck.py "$@")
}

cd "$copy"
start=$(date +%s)
rc=0
case "$mode" in
    full) "$PYEXE" -m pytest -q -p no:cacheprovider "${pytest_args[@]}" || rc=$? ;;
    ci)
        "$PYEXE" -m pytest -q -p no:cacheprovider "${CI_TESTS[@]}" "${pytest_args[@]}" || rc=$?
        "$PYEXE" tools/fuzz_archive.py --clusters --no-oracle --limit 0 --cases "$FUZZ_CASES" \
            --seed 7 --out "$work/fuzz" || rc=1
        lsan_check --cycles 100 --warmup 20 || rc=1
        ;;
    leak) lsan_check "${pytest_args[@]}" || rc=1 ;;
esac
echo "sanitize: $mode mode took $(( $(date +%s) - start )) s (exit $rc)" >&2
check_reports || rc=1
exit $rc
