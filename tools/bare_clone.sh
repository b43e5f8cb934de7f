#!/usr/bin/env bash
# The README's test command as a stranger meets it: `git clone` of the committed
# HEAD into an empty temporary folder (no ../shared, so none of the shared
# zim-testing-suite archives), then `bash tools/test.sh` there. The default
# suite must pass with nothing beside the clone; the tests that need the shared
# archives are skipped, counted on one line (tests/conftest.py).
#
#   bash tools/bare_clone.sh [--wheel] [PYTEST ARGS]   env as for tools/test.sh (LIBZIM_C_WHEEL=1:
#                                                      the installed-package stage too; .ci/run sets it)
#
# Note: tools/test.sh's bootstrap runs `pip install -e .` in the clone, which
# re-points this interpreter's editable libzim install at the clone (deleted at
# the end): run tools/bootstrap.sh in the checkout afterwards (.ci/run does, as
# its next stage runs tools/test.sh there). On a shared development machine,
# prefer: git clone . /tmp/x && cd /tmp/x && python3 setup.py build_ext --inplace -q && python3 -m pytest -q
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/libzim-c-bare.XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q --no-hardlinks "$PWD" "$work/libzim-c"
# The tests look for ../shared beside the checkout, i.e. $work/shared: a fresh folder.
if [ -e "$work/shared" ]; then
    echo "bare_clone: $work has a shared/ beside it: not a bare clone" >&2
    exit 1
fi
cd "$work/libzim-c"
echo "bare_clone: $(git log -1 --format='%h %s' | cut -c1-80) in $PWD" >&2
# Whatever the caller's environment says about the test data, a stranger has none.
env -u LIBZIM_C_TEST_DATA -u LIBZIM_C_REQUIRE_TEST_DATA bash tools/test.sh "$@"
echo "bare_clone: $((SECONDS - start)) s" >&2
